/*
 * JSON trees in an arena: the tree is in the arena, can be read and changed
 * with ordinary jansson calls (values added later are malloc'd and freed on
 * release: LeakSanitizer and valgrind would see them otherwise), a second
 * load while one is live falls back to malloc, parse errors leave the arena
 * usable, and jansson values outside any arena are untouched.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/json-arena.h"

static const char page[] =
	"{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"7\"},\"items\":["
	"{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"x\"}}},"
	"{\"metadata\":{\"name\":\"b\"}}]}";

Test(json_arena, tree_lives_in_the_arena_and_takes_changes)
{
	struct json_arena ja = { 0 };
	json_t *root = json_arena_load(&ja, page, strlen(page), 0, NULL), *item;

	cr_assert_not_null(root);
	cr_assert(ja.live);
	cr_assert(arena_owns(&ja.arena, root));
	item = json_array_get(json_object_get(root, "items"), 0);
	cr_assert(arena_owns(&ja.arena, item));
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(item, "metadata"), "name")),
			 "a");
	/* Changes after the load: a malloc'd value in, an arena value out,
	 * and enough keys that the object's table grows from the heap. */
	for (int i = 0; i < 40; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(json_object_set_new(item, key, json_string("heap")), 0);
		cr_assert_not(arena_owns(&ja.arena, json_object_get(item, key)));
	}
	cr_assert_eq(json_object_del(item, "metadata"), 0);
	json_arena_release(&ja, root);
	cr_assert_not(ja.live);
	/* The arena is used again for the next page. */
	root = json_arena_load(&ja, page, strlen(page), 0, NULL);
	cr_assert(arena_owns(&ja.arena, root));
	cr_assert_eq(json_array_size(json_object_get(root, "items")), 2);
	json_arena_release(&ja, root);
	json_arena_done(&ja);
}

Test(json_arena, second_load_while_live_is_malloced)
{
	struct json_arena ja = { 0 };
	json_t *first = json_arena_load(&ja, page, strlen(page), 0, NULL);
	json_t *second = json_arena_load(&ja, page, strlen(page), 0, NULL);

	cr_assert_not_null(first);
	cr_assert_not_null(second);
	cr_assert(arena_owns(&ja.arena, first));
	cr_assert_not(arena_owns(&ja.arena, second));
	json_arena_release(&ja, second);
	cr_assert(ja.live, "releasing the fallback must not end the arena's tree");
	cr_assert_str_eq(json_string_value(json_object_get(first, "kind")), "PodList");
	json_arena_release(&ja, first);
	cr_assert_not(ja.live);
	json_arena_done(&ja);
}

Test(json_arena, two_arenas_live_at_once)
{
	struct json_arena a = { 0 }, b = { 0 };
	json_t *ra = json_arena_load(&a, page, strlen(page), 0, NULL);
	json_t *rb = json_arena_load(&b, page, strlen(page), 0, NULL);

	cr_assert(arena_owns(&a.arena, ra));
	cr_assert(arena_owns(&b.arena, rb));
	cr_assert_not(arena_owns(&a.arena, rb));
	json_object_set_new(ra, "x", json_integer(1));
	json_arena_release(&a, ra);
	json_object_set_new(rb, "x", json_integer(2));
	json_arena_release(&b, rb);
	json_arena_done(&a);
	json_arena_done(&b);
}

Test(json_arena, parse_error_leaves_the_arena_usable)
{
	struct json_arena ja = { 0 };
	json_error_t err;
	json_t *root = json_arena_load(&ja, "{\"items\":[1,2", 13, 0, &err);

	cr_assert_null(root);
	cr_assert_neq(err.text[0], '\0');
	cr_assert_not(ja.live);
	root = json_arena_load(&ja, page, strlen(page), 0, NULL);
	cr_assert(arena_owns(&ja.arena, root));
	json_arena_release(&ja, root);
	json_arena_done(&ja);
}

Test(json_arena, values_outside_arenas_are_plain_heap_values)
{
	struct json_arena ja = { 0 };
	json_t *before = json_pack("{s:[i,i], s:s}", "a", 1, 2, "b", "text"), *root, *after;
	char *dump;

	root = json_arena_load(&ja, page, strlen(page), 0, NULL);
	/* Built while a tree is live but not parsing: heap, and json_dumps()
	 * output must be free()-able as jansson documents. */
	after = json_pack("{s:o}", "copy", json_deep_copy(json_object_get(root, "metadata")));
	cr_assert_not(arena_owns(&ja.arena, after));
	dump = json_dumps(after, JSON_COMPACT);
	cr_assert_str_eq(dump, "{\"copy\":{\"resourceVersion\":\"7\"}}");
	free(dump);
	json_arena_release(&ja, root);
	cr_assert_eq(json_integer_value(json_array_get(json_object_get(before, "a"), 1)), 2);
	json_decref(before);
	json_decref(after);
	json_arena_done(&ja);
}
