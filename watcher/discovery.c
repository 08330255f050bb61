/*
 * API discovery (see discovery.h). One refresh at a time: the group
 * documents first, then one resource list per version they name; every
 * answer says which group or group version it is about, so requests need
 * no context of their own. The set found replaces the last one only when
 * every request of the refresh succeeded (404 counts: not served).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "watcher/discovery.h"

struct served_set {
	char *gvr[DISCOVERY_MAX_SERVED]; /* "group/version/resource" */
	size_t n;
};

struct discovery {
	struct kube_client *client;
	const char *const *groups;
	discovery_done_fn done;
	void *userdata;
	struct served_set known, next;
	unsigned pending; /* requests of the running refresh */
	bool running, failed, have_known;
};

static void set_clear(struct served_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->gvr[i]);
	s->n = 0;
}

static int set_add(struct served_set *s, const char *gv, const char *resource)
{
	if (s->n == DISCOVERY_MAX_SERVED) {
		log_warn("Failed to remember %s/%s as served: more than %d resources in the "
			 "discovered groups", gv, resource, DISCOVERY_MAX_SERVED);
		return 0;
	}
	if (asprintf(&s->gvr[s->n], "%s/%s", gv, resource) < 0)
		return -ENOMEM;
	s->n++;
	return 0;
}

static void request_done(struct discovery *d)
{
	if (--d->pending > 0)
		return;
	d->running = false;
	if (d->failed) {
		set_clear(&d->next);
	} else {
		set_clear(&d->known);
		d->known = d->next;
		d->next = (struct served_set){ 0 };
		d->have_known = true;
	}
	if (d->done)
		d->done(d, d->failed ? -EIO : 0, d->userdata);
}

/* An answer that is neither the document nor 404: this refresh failed. */
static bool answer_ok(struct discovery *d, const struct kube_response *resp, const char *what)
{
	if (resp->status == 200 && json_is_object(resp->body))
		return true;
	if (resp->status == 404)
		return false; /* not served: nothing to add */
	log_warn("Failed to discover %s: %s", what,
		 resp->error ? resp->error : resp->status ? "unexpected answer" : "no answer");
	d->failed = true;
	return false;
}

static void on_resource_list(struct kube_client *c, const struct kube_response *resp,
			     void *userdata)
{
	struct discovery *d = userdata;
	const char *gv = json_string_value(json_object_get(resp->body, "groupVersion"));
	const json_t *r;
	size_t i;

	(void)c;
	if (answer_ok(d, resp, "a group version's resources") && gv) {
		json_array_foreach(json_object_get(resp->body, "resources"), i, r) {
			const char *name = json_string_value(json_object_get(r, "name"));
			/* "nodepools/status" is a subresource, not a collection. */
			if (name && !strchr(name, '/') && set_add(&d->next, gv, name) < 0)
				d->failed = true;
		}
	}
	request_done(d);
}

static void on_group(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct discovery *d = userdata;
	const json_t *v;
	size_t i;

	if (answer_ok(d, resp, "an API group")) {
		json_array_foreach(json_object_get(resp->body, "versions"), i, v) {
			const char *gv = json_string_value(json_object_get(v, "groupVersion"));
			char path[256];

			if (!gv || snprintf(path, sizeof(path), "/apis/%s", gv) >= (int)sizeof(path))
				continue;
			d->pending++;
			if (kube_request(c, "GET", path, NULL, NULL, on_resource_list, d) < 0) {
				d->pending--;
				d->failed = true;
			}
		}
	}
	request_done(d);
}

int discovery_refresh(struct discovery *d)
{
	if (d->running)
		return 0;
	d->running = true;
	d->failed = false;
	set_clear(&d->next);
	/* Held until every group is asked, so an early answer cannot end it. */
	d->pending = 1;
	for (const char *const *g = d->groups; *g; g++) {
		char path[256];

		snprintf(path, sizeof(path), "/apis/%s", *g);
		d->pending++;
		if (kube_request(d->client, "GET", path, NULL, NULL, on_group, d) < 0) {
			d->pending--;
			d->failed = true;
		}
	}
	request_done(d);
	return 0;
}

int discovery_new(struct discovery **ret, struct kube_client *c, const char *const *groups,
		  discovery_done_fn done, void *userdata)
{
	struct discovery *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->client = c;
	d->groups = groups;
	d->done = done;
	d->userdata = userdata;
	*ret = d;
	return 0;
}

struct discovery *discovery_free(struct discovery *d)
{
	if (!d)
		return NULL;
	set_clear(&d->known);
	set_clear(&d->next);
	free(d);
	return NULL;
}

bool discovery_known(const struct discovery *d)
{
	return d->have_known;
}

bool discovery_served(const struct discovery *d, const char *group, const char *version,
		      const char *resource)
{
	char want[256];

	snprintf(want, sizeof(want), "%s/%s/%s", group, version, resource);
	for (size_t i = 0; i < d->known.n; i++)
		if (streq(d->known.gvr[i], want))
			return true;
	return false;
}
