/*
 * Batching of pending pods (see batch.h). The watcher re-announces every
 * pending pod periodically, so "new" means a pod not already in the batch:
 * re-announcements refresh a pod's copy without extending the idle window.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "scheduler/batch.h"

void batch_init(struct batch *b, uint64_t idle_usec, uint64_t max_usec)
{
	*b = (struct batch){ .idle_usec = idle_usec, .max_usec = max_usec };
}

void batch_set_windows(struct batch *b, uint64_t idle_usec, uint64_t max_usec)
{
	b->idle_usec = idle_usec;
	b->max_usec = max_usec;
}

void batch_done(struct batch *b)
{
	size_t it = 0;
	void *v;

	while (hashmap_next(&b->pods, &it, NULL, &v))
		free(v);
	hashmap_done(&b->pods);
	hashmap_done(&b->held);
}

int batch_add(struct batch *b, const struct proto_pod *p, uint64_t now_usec)
{
	char key[2 * PROTO_MAX_NAME_LEN + 2];
	struct proto_pod *copy;
	void *old = NULL;
	int r;

	snprintf(key, sizeof(key), "%s/%s", p->ns, p->name);
	if (hashmap_get(&b->held, key))
		return 0;
	copy = proto_pod_dup(p);
	if (!copy)
		return -ENOMEM;
	r = hashmap_put(&b->pods, key, copy, &old);
	if (r < 0) {
		free(copy);
		return r;
	}
	if (old) {
		free(old);
		return 0;
	}
	if (b->pods.n == 1)
		b->first_usec = now_usec;
	b->last_new_usec = now_usec;
	return 1;
}

bool batch_due(const struct batch *b, uint64_t now_usec)
{
	return b->pods.n > 0 && (now_usec - b->last_new_usec >= b->idle_usec ||
				 now_usec - b->first_usec >= b->max_usec);
}

int batch_take(struct batch *b, struct proto_pod ***ret, size_t *n)
{
	struct proto_pod **pods = calloc(b->pods.n + 1, sizeof(*pods));
	size_t it = 0, k = 0;
	void *v;

	if (!pods)
		return -ENOMEM;
	while (hashmap_next(&b->pods, &it, NULL, &v))
		pods[k++] = v;
	hashmap_done(&b->pods);
	*ret = pods;
	*n = k;
	return 0;
}

int batch_hold(struct batch *b, const char *key, uint64_t until_usec)
{
	return hashmap_put(&b->held, key, (void *)(uintptr_t)until_usec, NULL);
}

void batch_release(struct batch *b, const char *key)
{
	hashmap_remove(&b->held, key);
}

int batch_hold_pods(struct batch *b, struct proto_pod *const *pods, size_t n, uint64_t until_usec)
{
	char key[2 * PROTO_MAX_NAME_LEN + 2];
	int r;

	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s/%s", pods[i]->ns, pods[i]->name);
		if ((r = batch_hold(b, key, until_usec)) < 0)
			return r;
	}
	return 0;
}

void batch_release_pods(struct batch *b, struct proto_pod *const *pods, size_t n)
{
	char key[2 * PROTO_MAX_NAME_LEN + 2];

	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s/%s", pods[i]->ns, pods[i]->name);
		batch_release(b, key);
	}
}

static bool hold_expired(const char *key, void *value, void *userdata)
{
	(void)key;
	return (uint64_t)(uintptr_t)value <= *(const uint64_t *)userdata;
}

size_t batch_expire(struct batch *b, uint64_t now_usec)
{
	return hashmap_remove_if(&b->held, hold_expired, &now_usec);
}
