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
