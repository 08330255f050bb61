/* kanna-sim PATCH formats: RFC 7386 merge patch, RFC 6902 JSON patch, strategic merge. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>

#include "sim/k8s-patch.h"

static void expect(enum k8s_patch_type type, const char *target, const char *patch,
		   const char *want)
{
	json_t *t = json_loads(target, 0, NULL), *p = json_loads(patch, JSON_DECODE_ANY, NULL);
	json_t *w = json_loads(want, 0, NULL), *out = NULL;
	char err[256] = "";

	cr_assert(t && p && w, "bad test JSON");
	cr_assert_eq(k8s_patch_apply(type, t, p, &out, err, sizeof(err)), 0, "%s", err);
	if (!json_equal(out, w)) {
		char *got = json_dumps(out, JSON_SORT_KEYS | JSON_COMPACT);

		cr_assert_fail("patch %s on %s gave %s, want %s", patch, target, got, want);
	}
	json_decref(t);
	json_decref(p);
	json_decref(w);
	json_decref(out);
}

static int apply_error(enum k8s_patch_type type, const char *target, const char *patch)
{
	json_t *t = json_loads(target, 0, NULL), *p = json_loads(patch, JSON_DECODE_ANY, NULL);
	json_t *out = NULL;
	char err[256] = "";
	int r = k8s_patch_apply(type, t, p, &out, err, sizeof(err));

	cr_assert_null(out);
	cr_assert_neq(err[0], '\0');
	json_decref(t);
	json_decref(p);
	return r;
}

Test(sim_patch, merge_patch_follows_rfc7386_examples)
{
	expect(K8S_PATCH_MERGE, "{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
	expect(K8S_PATCH_MERGE, "{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}");
	expect(K8S_PATCH_MERGE, "{\"a\":\"b\"}", "{\"a\":null}", "{}");
	expect(K8S_PATCH_MERGE, "{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
	expect(K8S_PATCH_MERGE, "{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}",
	       "{\"a\":{\"b\":\"d\"}}");
	expect(K8S_PATCH_MERGE, "{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}");
	expect(K8S_PATCH_MERGE, "{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}");
}

Test(sim_patch, json_patch_applies_every_operation)
{
	expect(K8S_PATCH_JSON, "{\"spec\":{\"unschedulable\":false}}",
	       "[{\"op\":\"replace\",\"path\":\"/spec/unschedulable\",\"value\":true}]",
	       "{\"spec\":{\"unschedulable\":true}}");
	expect(K8S_PATCH_JSON, "{\"a\":[1,3]}", "[{\"op\":\"add\",\"path\":\"/a/1\",\"value\":2},"
	       "{\"op\":\"add\",\"path\":\"/a/-\",\"value\":4}]", "{\"a\":[1,2,3,4]}");
	expect(K8S_PATCH_JSON, "{\"a\":{\"b~c/d\":1}}",
	       "[{\"op\":\"remove\",\"path\":\"/a/b~0c~1d\"}]", "{\"a\":{}}");
	expect(K8S_PATCH_JSON, "{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/b\"},"
	       "{\"op\":\"copy\",\"from\":\"/b\",\"path\":\"/c\"},"
	       "{\"op\":\"test\",\"path\":\"/c\",\"value\":1}]", "{\"b\":1,\"c\":1}");
}

Test(sim_patch, json_patch_failures_are_unprocessable_or_bad_requests)
{
	cr_assert_eq(apply_error(K8S_PATCH_JSON, "{\"a\":1}",
				 "[{\"op\":\"test\",\"path\":\"/a\",\"value\":2}]"), -EPROTO);
	cr_assert_eq(apply_error(K8S_PATCH_JSON, "{\"a\":1}",
				 "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":2}]"), -EPROTO);
	cr_assert_eq(apply_error(K8S_PATCH_JSON, "{\"a\":[1]}",
				 "[{\"op\":\"remove\",\"path\":\"/a/5\"}]"), -EPROTO);
	cr_assert_eq(apply_error(K8S_PATCH_JSON, "{}", "{\"op\":\"add\"}"), -EINVAL);
	cr_assert_eq(apply_error(K8S_PATCH_JSON, "{}", "[{\"op\":\"frob\",\"path\":\"/a\"}]"),
		     -EINVAL);
	cr_assert_eq(apply_error(K8S_PATCH_MERGE, "{}", "[1]"), -EINVAL);
}

Test(sim_patch, strategic_merge_merges_containers_env_and_conditions_by_key)
{
	expect(K8S_PATCH_STRATEGIC,
	       "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"env\":[{\"name\":\"E\",\"value\":\"1\"}]},"
	       "{\"name\":\"b\",\"image\":\"y\"}]}}",
	       "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
	       "\"containers\":[{\"name\":\"a\",\"image\":\"z\",\"env\":[{\"name\":\"F\",\"value\":\"2\"}]}]}}",
	       "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"z\",\"env\":[{\"name\":\"E\",\"value\":\"1\"},"
	       "{\"name\":\"F\",\"value\":\"2\"}]},{\"name\":\"b\",\"image\":\"y\"}]}}");
	expect(K8S_PATCH_STRATEGIC,
	       "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},{\"type\":\"X\",\"status\":\"True\"}]}}",
	       "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	       "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"X\",\"status\":\"True\"}]}}");
}

Test(sim_patch, strategic_merge_directives_delete_replace_and_other_lists_replace)
{
	expect(K8S_PATCH_STRATEGIC, "{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}",
	       "{\"containers\":[{\"name\":\"a\",\"$patch\":\"delete\"}]}",
	       "{\"containers\":[{\"name\":\"b\"}]}");
	expect(K8S_PATCH_STRATEGIC, "{\"tolerations\":[{\"key\":\"a\"}]}",
	       "{\"tolerations\":[{\"key\":\"b\"}]}", "{\"tolerations\":[{\"key\":\"b\"}]}");
	expect(K8S_PATCH_STRATEGIC, "{\"metadata\":{\"finalizers\":[\"a\"]}}",
	       "{\"metadata\":{\"finalizers\":[\"b\",\"a\"]}}",
	       "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}");
	expect(K8S_PATCH_STRATEGIC, "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
	       "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"a\"]}}",
	       "{\"metadata\":{\"finalizers\":[\"b\"]}}");
	expect(K8S_PATCH_STRATEGIC, "{\"spec\":{\"a\":1,\"b\":2}}",
	       "{\"spec\":{\"$patch\":\"replace\",\"c\":3}}", "{\"spec\":{\"c\":3}}");
}

Test(sim_patch, content_types_map_to_patch_types)
{
	enum k8s_patch_type t;

	cr_assert_eq(k8s_patch_type_from_content_type("application/merge-patch+json", &t), 0);
	cr_assert_eq(t, K8S_PATCH_MERGE);
	cr_assert_eq(k8s_patch_type_from_content_type("application/strategic-merge-patch+json; charset=utf-8", &t), 0);
	cr_assert_eq(t, K8S_PATCH_STRATEGIC);
	cr_assert_eq(k8s_patch_type_from_content_type("application/json-patch+json", &t), 0);
	cr_assert_eq(t, K8S_PATCH_JSON);
	cr_assert_eq(k8s_patch_type_from_content_type("application/apply-patch+yaml", &t), 0);
	cr_assert_eq(t, K8S_PATCH_APPLY);
	cr_assert_eq(k8s_patch_type_from_content_type("application/json", &t), -EINVAL);
}
