/*
 * Unschedulable pods' reasons, remembered per pod (see unschedulable.h).
 * Called by the scheduler daemon after each solve and from its periodic
 * summary; never logs itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "scheduler/unschedulable.h"

struct unschedulable_pod {
	char *ns, *name, *reason;
};

static void pod_free(struct unschedulable_pod *p)
{
	if (!p)
		return;
	free(p->ns);
	free(p->name);
	free(p->reason);
	free(p);
}

void unschedulable_init(struct unschedulable *u)
{
	*u = (struct unschedulable){ 0 };
}

void unschedulable_done(struct unschedulable *u)
{
	size_t it = 0;
	void *v;

	while (hashmap_next(&u->pods, &it, NULL, &v))
		pod_free(v);
	hashmap_done(&u->pods);
}

int unschedulable_note(struct unschedulable *u, const struct proto_pod *p, const char *reason)
{
	struct unschedulable_pod *e = p->uid ? hashmap_get(&u->pods, p->uid) : NULL, *fresh;
	char *copy;
	int r;

	if (!p->uid || !*p->uid)
		return 1; /* nothing to know it by: say it every time */
	if (e && streq(e->reason, reason))
		return 0;
	if (e) {
		copy = strdup(reason);
		if (!copy)
			return -ENOMEM;
		free(e->reason);
		e->reason = copy;
		return 1;
	}
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh)
		return -ENOMEM;
	fresh->ns = strdup(p->ns);
	fresh->name = strdup(p->name);
	fresh->reason = strdup(reason);
	if (!fresh->ns || !fresh->name || !fresh->reason) {
		pod_free(fresh);
		return -ENOMEM;
	}
	r = hashmap_put(&u->pods, p->uid, fresh, NULL);
	if (r < 0) {
		pod_free(fresh);
		return r;
	}
	return 1;
}

void unschedulable_forget(struct unschedulable *u, const char *uid)
{
	pod_free(hashmap_remove(&u->pods, uid));
}

void unschedulable_sweep(struct unschedulable *u,
			 bool (*still_pending)(const char *ns, const char *name, const char *uid,
					       void *userdata),
			 void *userdata)
{
	const char *uid;
	size_t it = 0;
	void *v;

	/* hashmap_remove() leaves a tombstone: iterating on is safe. */
	while (hashmap_next(&u->pods, &it, &uid, &v)) {
		struct unschedulable_pod *p = v;

		if (!still_pending(p->ns, p->name, uid, userdata))
			unschedulable_forget(u, uid);
	}
}

size_t unschedulable_count(const struct unschedulable *u)
{
	return u->pods.n;
}

struct tally {
	const char *reason; /* the leading part of a pod's reason */
	size_t len, pods;
};

static int tally_cmp(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;
	size_t n = MIN(x->len, y->len);
	int c;

	if (x->pods != y->pods)
		return x->pods > y->pods ? -1 : 1;
	c = strncmp(x->reason, y->reason, n);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

size_t unschedulable_summary(const struct unschedulable *u, char *buf, size_t size)
{
	struct tally *t = calloc(u->pods.n ? u->pods.n : 1, sizeof(*t));
	size_t n = 0, pods = 0, len, others = 0, other_reasons = 0, it = 0;
	void *v;

	if (size)
		buf[0] = '\0';
	while (hashmap_next(&u->pods, &it, NULL, &v)) {
		const struct unschedulable_pod *p = v;
		const char *end = strstr(p->reason, "; ");
		size_t l = end ? (size_t)(end - p->reason) : strlen(p->reason), k;

		pods++;
		if (!t)
			continue;
		for (k = 0; k < n && !(t[k].len == l && !strncmp(t[k].reason, p->reason, l)); k++)
			;
		if (k == n)
			t[n++] = (struct tally){ p->reason, l, 0 };
		t[k].pods++;
	}
	if (!pods || !size) {
		free(t);
		return pods;
	}
	snprintf(buf, size, "%zu pod(s) unschedulable", pods);
	len = strlen(buf);
	if (t) {
		qsort(t, n, sizeof(*t), tally_cmp);
		for (size_t k = 0; k < n; k++) {
			if (k >= UNSCHEDULABLE_SUMMARY_REASONS) {
				others += t[k].pods;
				other_reasons++;
				continue;
			}
			snprintf(buf + len, size - len, "%s%zu for %.*s", k ? "; " : ": ", t[k].pods,
				 (int)t[k].len, t[k].reason);
			len += strlen(buf + len);
		}
		if (others)
			snprintf(buf + len, size - len, "; and %zu for %zu other reason(s)", others,
				 other_reasons);
	}
	free(t);
	return pods;
}
