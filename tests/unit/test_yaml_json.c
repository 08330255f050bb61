/* YAML → JSON: types, multi-document streams, anchors, marks, errors. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/yaml-json.h"

static struct yaml_docs *load_ok(const char *text)
{
	struct yaml_docs *d = NULL;
	char err[256];
	int r = yaml_docs_load_buffer(text, strlen(text), "t.yaml", &d, err, sizeof(err));
	cr_assert_eq(r, 0, "load failed: %s", err);
	return d;
}

static void load_fails(const char *text, const char *expect)
{
	struct yaml_docs *d = NULL;
	char err[256];
	int r = yaml_docs_load_buffer(text, strlen(text), "t.yaml", &d, err, sizeof(err));
	cr_assert_lt(r, 0);
	cr_assert_null(d);
	cr_assert(strstr(err, expect), "error '%s' lacks '%s'", err, expect);
}

Test(yaml_json, plain_scalars_resolve_like_yaml_core_schema)
{
	struct yaml_docs *d = load_ok("a: 1\nb: -2\nc: 1.5\nd: true\ne: null\nf: ~\ng: hello\n"
				      "h: 0755\nm: 09\ni: '1'\nj: \"true\"\nk: 0x1f\nl: 500m\n");
	json_t *o = d->docs[0];
	cr_assert(json_is_integer(json_object_get(o, "a")));
	cr_assert_eq(json_integer_value(json_object_get(o, "b")), -2);
	cr_assert(json_is_real(json_object_get(o, "c")));
	cr_assert(json_is_true(json_object_get(o, "d")));
	cr_assert(json_is_null(json_object_get(o, "e")));
	cr_assert(json_is_null(json_object_get(o, "f")));
	cr_assert_str_eq(json_string_value(json_object_get(o, "g")), "hello");
	cr_assert_eq(json_integer_value(json_object_get(o, "h")), 0755, "leading zero is octal");
	cr_assert_str_eq(json_string_value(json_object_get(o, "i")), "1");
	cr_assert_str_eq(json_string_value(json_object_get(o, "j")), "true");
	cr_assert_eq(json_integer_value(json_object_get(o, "k")), 31);
	cr_assert_str_eq(json_string_value(json_object_get(o, "l")), "500m");
	cr_assert_str_eq(json_string_value(json_object_get(o, "m")), "09");
	yaml_docs_free(d);
}

Test(yaml_json, a_stream_yields_one_value_per_document)
{
	struct yaml_docs *d = load_ok("kind: A\n---\nkind: B\n---\n- 1\n- 2\n");
	cr_assert_eq(d->n_docs, 3);
	cr_assert_str_eq(json_string_value(json_object_get(d->docs[1], "kind")), "B");
	cr_assert_eq(json_array_size(d->docs[2]), 2);
	yaml_docs_free(d);
}

Test(yaml_json, aliases_share_the_anchored_node)
{
	struct yaml_docs *d = load_ok("base: &b {cpu: 1}\nuse: *b\n");
	cr_assert(json_equal(json_object_get(d->docs[0], "base"),
			     json_object_get(d->docs[0], "use")));
	yaml_docs_free(d);
}

Test(yaml_json, marks_point_at_the_line_and_column_of_each_node)
{
	struct yaml_docs *d = load_ok("metadata:\n  name: x\nspec:\n  items:\n    - cpu: 2\n");
	unsigned line, col;
	json_t *item = json_array_get(json_object_get(json_object_get(d->docs[0], "spec"), "items"), 0);
	cr_assert(yaml_docs_mark(d, item, &line, &col));
	cr_assert_eq(line, 5);
	cr_assert_eq(col, 7);
	cr_assert(yaml_docs_mark(d, json_object_get(json_object_get(d->docs[0], "metadata"), "name"),
				 &line, &col));
	cr_assert_eq(line, 2);
	cr_assert_eq(col, 9);
	yaml_docs_free(d);
}

Test(yaml_json, syntax_errors_name_file_line_and_column)
{
	load_fails("a: [1, 2\nb: 3\n", "t.yaml:");
	load_fails("a: b: c\n", "t.yaml:1:");
}

Test(yaml_json, duplicate_keys_are_rejected_with_their_position)
{
	load_fails("a: 1\nb: 2\na: 3\n", "t.yaml:3:1: duplicate key 'a'");
}

Test(yaml_json, unknown_aliases_are_rejected)
{
	load_fails("a: *nope\n", "unknown alias");
}

Test(yaml_json, aliases_inside_their_own_anchor_are_rejected)
{
	load_fails("a: &x [1, *x]\n", "refers to a node that contains it");
}

Test(yaml_json, deep_nesting_is_bounded)
{
	char buf[1024] = "";
	for (int i = 0; i < 100; i++)
		strcat(buf, "[");
	load_fails(buf, "nesting deeper than");
}

Test(yaml_json, alias_bombs_hit_the_node_limit)
{
	/* Each level doubles the size: 2^30 nodes if expanded. */
	char buf[8192];
	int n = snprintf(buf, sizeof(buf), "a0: &a0 [x, x, x, x, x, x, x, x]\n");
	for (int i = 1; i <= 30; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d]\n", i, i,
			      i - 1, i - 1, i - 1, i - 1);
	load_fails(buf, "document too large");
}

Test(yaml_json, empty_input_has_no_documents)
{
	struct yaml_docs *d = load_ok("");
	cr_assert_eq(d->n_docs, 0);
	yaml_docs_free(d);
}
