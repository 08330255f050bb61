/* Hash map: put/get/replace/remove, growth past many entries, iteration. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "common/hashmap.h"

Test(hashmap, stores_replaces_and_removes_by_key)
{
	struct hashmap m = { 0 };
	void *old;
	int a = 1, b = 2;
	cr_assert_null(hashmap_get(&m, "x"));
	cr_assert_eq(hashmap_put(&m, "x", &a, &old), 0);
	cr_assert_null(old);
	cr_assert_eq(hashmap_get(&m, "x"), &a);
	cr_assert_eq(hashmap_put(&m, "x", &b, &old), 0);
	cr_assert_eq(old, &a);
	cr_assert_eq(m.n, 1);
	cr_assert_eq(hashmap_remove(&m, "x"), &b);
	cr_assert_null(hashmap_get(&m, "x"));
	cr_assert_eq(m.n, 0);
	hashmap_done(&m);
}

Test(hashmap, survives_100k_keys_with_churn_and_iterates_each_live_key_once)
{
	struct hashmap m = { 0 };
	char key[32];
	size_t it = 0, seen = 0;
	const char *k;
	void *v;
	for (long i = 0; i < 100000; i++) {
		snprintf(key, sizeof(key), "pod/default/p-%ld", i);
		cr_assert_eq(hashmap_put(&m, key, (void *)(i + 1), NULL), 0);
	}
	for (long i = 0; i < 100000; i += 2) {
		snprintf(key, sizeof(key), "pod/default/p-%ld", i);
		cr_assert_eq(hashmap_remove(&m, key), (void *)(i + 1));
	}
	for (long i = 1; i < 100000; i += 2) {
		snprintf(key, sizeof(key), "pod/default/p-%ld", i);
		cr_assert_eq(hashmap_get(&m, key), (void *)(i + 1));
	}
	while (hashmap_next(&m, &it, &k, &v)) {
		cr_assert_eq((long)v % 2, 0, "only odd indexes (even values) remain");
		seen++;
	}
	cr_assert_eq(seen, 50000);
	cr_assert_eq(m.n, 50000);
	hashmap_done(&m);
}

static bool drop_odd(const char *key, void *value, void *userdata)
{
	(void)key;
	(*(int *)userdata)++;
	return (uintptr_t)value % 2 == 1;
}

Test(hashmap, remove_if_drops_what_it_is_told_and_keeps_the_rest_findable)
{
	struct hashmap m = { 0 };
	char key[16];
	int asked = 0;

	for (uintptr_t i = 1; i <= 1000; i++) {
		snprintf(key, sizeof(key), "k%lu", (unsigned long)i);
		cr_assert_eq(hashmap_put(&m, key, (void *)i, NULL), 0);
	}
	cr_expect_eq(hashmap_remove_if(&m, drop_odd, &asked), 500);
	cr_expect_eq(asked, 1000, "every entry is asked once");
	cr_expect_eq(m.n, 500);
	for (uintptr_t i = 1; i <= 1000; i++) {
		snprintf(key, sizeof(key), "k%lu", (unsigned long)i);
		cr_expect_eq((uintptr_t)hashmap_get(&m, key), i % 2 ? 0 : i, "%s", key);
	}
	hashmap_done(&m);
}
