/*
 * Lease-based leader election (see lease.h). One periodic tick reads the
 * Lease and decides: create it, renew ours, take over an expired one, or
 * stand by. Expiry is judged by when *we* last saw the record change
 * (client-go's observedTime), not by the holder's clock, so skewed clocks
 * cannot steal a live lease.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/kube-client-internal.h"
#include "common/lease.h"
#include "common/log.h"

struct lease {
	struct kube_client *client;
	struct lease_options opt;
	struct lease_handlers h;
	char *name, *namespace, *identity, *path, *collection;
	bool leader, busy;
	char *holder, *observed_rv;
	uint64_t observed_usec;   /* when the record last changed, our clock */
	uint64_t last_renew_usec; /* our last successful write as leader */
	int64_t transitions;
	char timer_name[64];
};

/* metav1.MicroTime: 2006-01-02T15:04:05.000000Z */
static void micro_time_now(char buf[64])
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, 64, "%.19s.%06ldZ", base, ts.tv_nsec / 1000);
}

static void set_leader(struct lease *l, bool leader)
{
	if (l->leader == leader)
		return;
	l->leader = leader;
	if (leader) {
		log_info_kv(LOG_KV({ "lease", l->name }, { "identity", l->identity }),
			    "successfully acquired lease %s/%s", l->namespace, l->name);
		if (l->h.on_started_leading)
			l->h.on_started_leading(l->h.userdata);
	} else {
		log_warn_kv(LOG_KV({ "lease", l->name }, { "identity", l->identity }),
			    "lost lease %s/%s", l->namespace, l->name);
		if (l->h.on_stopped_leading)
			l->h.on_stopped_leading(l->h.userdata);
	}
}

static void check_renew_deadline(struct lease *l)
{
	if (l->leader && clock_monotonic_usec() - l->last_renew_usec >
				 (uint64_t)l->opt.renew_deadline_sec * 1000000u)
		set_leader(l, false);
}

static void on_written(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct lease *l = userdata;

	(void)c;
	l->busy = false;
	if (resp->status == 200 || resp->status == 201) {
		l->last_renew_usec = clock_monotonic_usec();
		set_leader(l, true);
		return;
	}
	if (resp->status == 409) {
		/* Someone else wrote first: they hold it now. */
		log_debug("lease %s: lost a write race", l->name);
		if (l->leader)
			set_leader(l, false);
		return;
	}
	log_warn("Failed to write lease %s/%s: %s", l->namespace, l->name,
		 resp->error ? resp->error : "no response");
	check_renew_deadline(l);
}

static int lease_write(struct lease *l, const char *method, const char *path, const char *rv,
		       bool acquire)
{
	_cleanup_free_ char *body = NULL;
	char now[64];
	json_t *o;
	int r;

	micro_time_now(now);
	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:I}}", "apiVersion",
		      "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", l->name,
		      "namespace", l->namespace, "spec", "holderIdentity", l->identity,
		      "leaseDurationSeconds", (int)l->opt.duration_sec, "renewTime", now,
		      "leaseTransitions", (json_int_t)(l->transitions + (acquire ? 1 : 0)));
	if (!o)
		return -ENOMEM;
	if (rv)
		json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string(rv));
	if (acquire)
		json_object_set_new(json_object_get(o, "spec"), "acquireTime", json_string(now));
	body = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!body)
		return -ENOMEM;
	l->busy = true;
	r = kube_request(l->client, method, path, NULL, body, on_written, l);
	if (r < 0)
		l->busy = false;
	return r;
}

static void on_read(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct lease *l = userdata;
	const json_t *spec = json_object_get(resp->body, "spec");
	const char *holder, *rv;
	uint64_t now = clock_monotonic_usec();

	(void)c;
	l->busy = false;
	if (resp->status == 404) {
		lease_write(l, "POST", l->collection, NULL, true);
		return;
	}
	if (resp->status != 200) {
		log_warn("Failed to read lease %s/%s: %s", l->namespace, l->name,
			 resp->error ? resp->error : "no response");
		check_renew_deadline(l);
		return;
	}
	holder = json_string_value(json_object_get(spec, "holderIdentity"));
	rv = json_string_value(json_object_get(json_object_get(resp->body, "metadata"), "resourceVersion"));
	l->transitions = json_integer_value(json_object_get(spec, "leaseTransitions"));
	if (!streq_ptr(rv, l->observed_rv)) {
		free(l->observed_rv);
		l->observed_rv = rv ? strdup(rv) : NULL;
		l->observed_usec = now;
	}
	if (!streq_ptr(holder, l->holder)) {
		free(l->holder);
		l->holder = holder ? strdup(holder) : NULL;
		if (holder && !streq(holder, l->identity))
			log_info("lease %s/%s is held by %s", l->namespace, l->name, holder);
	}
	if (holder && streq(holder, l->identity)) {
		lease_write(l, "PUT", l->path, rv, false);
		return;
	}
	if (!holder || !*holder ||
	    now - l->observed_usec > (uint64_t)l->opt.duration_sec * 1000000u) {
		lease_write(l, "PUT", l->path, rv, true);
		return;
	}
	if (l->leader)
		set_leader(l, false);
}

static int on_tick(struct loop *loop, void *userdata)
{
	struct lease *l = userdata;

	(void)loop;
	if (l->busy)
		return 0;
	l->busy = true;
	if (kube_request(l->client, "GET", l->path, NULL, NULL, on_read, l) < 0)
		l->busy = false;
	return 0;
}

int lease_new(struct lease **ret, struct kube_client *c, const struct lease_options *opts,
	      const struct lease_handlers *h)
{
	struct lease *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return -ENOMEM;
	l->client = c;
	l->opt = *opts;
	if (h)
		l->h = *h;
	if (!l->opt.duration_sec)
		l->opt.duration_sec = LEASE_DEFAULT_DURATION_SEC;
	if (!l->opt.renew_deadline_sec)
		l->opt.renew_deadline_sec = LEASE_DEFAULT_RENEW_DEADLINE_SEC;
	if (!l->opt.retry_period_sec)
		l->opt.retry_period_sec = LEASE_DEFAULT_RETRY_PERIOD_SEC;
	l->name = strdup(opts->name);
	l->namespace = strdup(opts->namespace);
	l->identity = strdup(opts->identity);
	if (!l->name || !l->namespace || !l->identity ||
	    asprintf(&l->collection, "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
		     opts->namespace) < 0 ||
	    asprintf(&l->path, "%s/%s", l->collection, opts->name) < 0) {
		lease_free(l);
		return -ENOMEM;
	}
	snprintf(l->timer_name, sizeof(l->timer_name), "lease-%s", opts->name);
	r = loop_add_periodic(c->loop, l->timer_name, (uint64_t)l->opt.retry_period_sec * 1000000u,
			      on_tick, l);
	if (r < 0) {
		lease_free(l);
		return r;
	}
	on_tick(c->loop, l);
	*ret = l;
	return 0;
}

struct lease *lease_free(struct lease *l)
{
	if (!l)
		return NULL;
	loop_remove_periodic(l->client->loop, l->timer_name);
	free(l->name);
	free(l->namespace);
	free(l->identity);
	free(l->path);
	free(l->collection);
	free(l->holder);
	free(l->observed_rv);
	free(l);
	return NULL;
}

bool lease_is_leader(const struct lease *l)
{
	return l->leader;
}

const char *lease_holder(const struct lease *l)
{
	return l->holder;
}
