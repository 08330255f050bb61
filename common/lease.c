/*
 * Lease-based leader election (see lease.h). One periodic tick reads the
 * Lease and decides (lease_decide()): create it, renew ours, leave it be
 * when a sibling just renewed it, take over an expired one, or stand by.
 * Another holder's expiry is judged by when *we* last saw the record
 * change (client-go's observedTime), not by the holder's clock, so skewed
 * clocks cannot steal a live lease, and is looked at again right when it
 * comes, not at the next periodic look; only a sibling's renewTime (same
 * identity: same pod or host, same clock) is read as a time.
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
	bool busy;
	struct lease_memory mem;
	char *holder, *observed_rv, *acquire_time;
	int64_t transitions;
	char timer_name[64];
	sd_event_source *expiry_check; /* a look at the holder's expiry */
};

int lease_options_check(const struct lease_options *o, char *err, size_t size)
{
	const char *why = NULL;

	/* client-go NewLeaderElector: "leaseDuration must be greater than
	 * renewDeadline", "renewDeadline must be greater than
	 * retryPeriod*JitterFactor" (JitterFactor = 1.2), each > 0, "Lock
	 * identity is empty". */
	if (!o->identity || !*o->identity)
		why = "the leader election identity is empty";
	else if (!o->duration_usec || !o->renew_deadline_usec || !o->retry_period_usec)
		why = "lease-duration, lease-renew-deadline and lease-retry-period must be greater than zero";
	else if (o->duration_usec <= o->renew_deadline_usec)
		why = "lease-duration must be greater than lease-renew-deadline";
	else if (o->renew_deadline_usec * 10 <= o->retry_period_usec * 12)
		why = "lease-renew-deadline must be greater than lease-retry-period * 1.2";
	if (!why)
		return 0;
	snprintf(err, size, "%s", why);
	return -EINVAL;
}

enum lease_step lease_decide(const struct lease_options *o, struct lease_memory *m,
			     const struct lease_seen *s, uint64_t now)
{
	if (s->changed)
		m->observed_usec = now;
	if (s->held && s->mine) {
		/* Ours (client-go: IsLeader, so renew). A sibling's renewal
		 * younger than a retry period holds it for all of us: no
		 * write, so three daemons do not make three writes a period. */
		if (s->renew_age_usec >= 0 && (uint64_t)s->renew_age_usec < o->retry_period_usec) {
			if (now - (uint64_t)s->renew_age_usec > m->renewed_usec)
				m->renewed_usec = now - (uint64_t)s->renew_age_usec;
			return LEASE_SIBLING_RENEWED;
		}
		return LEASE_RENEW;
	}
	if (!s->held || now - m->observed_usec > o->duration_usec)
		return LEASE_ACQUIRE;
	return LEASE_STAND_BY;
}

uint64_t lease_expiry_check_delay(const struct lease_options *o, const struct lease_memory *m,
				  uint64_t now)
{
	uint64_t expiry = m->observed_usec + o->duration_usec + 1000;

	return expiry > now && expiry - now < o->retry_period_usec ? expiry - now : 0;
}

bool lease_renew_deadline_passed(const struct lease_options *o, const struct lease_memory *m,
				 uint64_t now)
{
	return m->leader && now - m->renewed_usec > o->renew_deadline_usec;
}

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

/* Our realtime minus a MicroTime (or RFC 3339 time) in µs; -1 when it does
 * not parse or lies ahead of our clock. */
static int64_t micro_time_age_usec(const char *t)
{
	struct tm tm = { 0 };
	const char *p;
	int64_t usec = 0, scale = 100000, then, now = (int64_t)clock_realtime_usec();

	if (!t || !(p = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm)))
		return -1;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			usec += (*p - '0') * scale;
	if (*p != 'Z')
		return -1;
	then = (int64_t)timegm(&tm) * 1000000 + usec;
	return then <= now ? now - then : -1;
}

static void set_leader(struct lease *l, bool leader)
{
	if (l->mem.leader == leader)
		return;
	l->mem.leader = leader;
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
	if (!lease_renew_deadline_passed(&l->opt, &l->mem, clock_monotonic_usec()))
		return;
	log_error("failed to renew lease %s/%s: not renewed for the renew deadline (%gs)",
		  l->namespace, l->name, (double)l->opt.renew_deadline_usec / 1e6);
	set_leader(l, false);
}

static void on_written(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct lease *l = userdata;

	(void)c;
	l->busy = false;
	if (resp->status == 200 || resp->status == 201) {
		l->mem.renewed_usec = clock_monotonic_usec();
		set_leader(l, true);
		return;
	}
	if (resp->status == 409)
		/* Another wrote first: a sibling renewing (then the Lease
		 * holds for us too) or another replica taking a free one. The
		 * next read tells which. */
		log_debug("lease %s: lost a write race, retrying in the next period", l->name);
	else
		log_warn("Failed to write lease %s/%s: %s", l->namespace, l->name,
			 resp->error ? resp->error : "no response");
	check_renew_deadline(l);
}

/* A write on the record last read (rv; NULL creates it). Taking it from
 * another holder counts a transition and starts a new acquireTime; a
 * renewal keeps both, as client-go does. */
static int lease_write(struct lease *l, const char *method, const char *path, const char *rv,
		       bool take)
{
	_cleanup_free_ char *body = NULL;
	char now[64];
	json_t *o, *spec;
	int r;

	micro_time_now(now);
	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:I}}", "apiVersion",
		      "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", l->name,
		      "namespace", l->namespace, "spec", "holderIdentity", l->identity,
		      "leaseDurationSeconds", (int)((l->opt.duration_usec + 999999) / 1000000),
		      "renewTime", now,
		      "leaseTransitions", (json_int_t)(l->transitions + (take && rv ? 1 : 0)));
	if (!o)
		return -ENOMEM;
	spec = json_object_get(o, "spec");
	if (rv)
		json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string(rv));
	if (take || !l->acquire_time)
		json_object_set_new(spec, "acquireTime", json_string(now));
	else
		json_object_set_new(spec, "acquireTime", json_string(l->acquire_time));
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

static int on_tick(struct loop *loop, void *userdata);

/* A standby looks again right after the holder's Lease expires, when that
 * comes before the next periodic look. */
static void schedule_expiry_check(struct lease *l, uint64_t now)
{
	uint64_t delay = lease_expiry_check_delay(&l->opt, &l->mem, now);

	l->expiry_check = sd_event_source_disable_unref(l->expiry_check);
	if (delay && loop_add_timer(l->client->loop, delay, on_tick, l, &l->expiry_check) < 0)
		l->expiry_check = NULL; /* the periodic look comes anyway */
}

static int replace_string(char **dst, const char *src)
{
	char *copy = NULL;

	if (src && !(copy = strdup(src)))
		return -ENOMEM;
	free(*dst);
	*dst = copy;
	return 0;
}

static void on_read(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct lease *l = userdata;
	const json_t *spec = json_object_get(resp->body, "spec");
	const char *holder, *rv;
	struct lease_seen seen;
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
	seen = (struct lease_seen){
		.held = holder && *holder, .mine = holder && streq(holder, l->identity),
		.changed = !streq_ptr(rv, l->observed_rv),
		.renew_age_usec = micro_time_age_usec(
			json_string_value(json_object_get(spec, "renewTime"))),
	};
	if (replace_string(&l->acquire_time,
			   json_string_value(json_object_get(spec, "acquireTime"))) < 0 ||
	    (seen.changed && replace_string(&l->observed_rv, rv) < 0))
		return;
	if (!streq_ptr(holder, l->holder)) {
		if (replace_string(&l->holder, holder) < 0)
			return;
		if (seen.held && !seen.mine)
			log_info("lease %s/%s is held by %s", l->namespace, l->name, holder);
	}
	switch (lease_decide(&l->opt, &l->mem, &seen, now)) {
	case LEASE_SIBLING_RENEWED:
		set_leader(l, true);
		break;
	case LEASE_RENEW:
		if (lease_write(l, "PUT", l->path, rv, false) < 0)
			check_renew_deadline(l);
		break;
	case LEASE_ACQUIRE:
		lease_write(l, "PUT", l->path, rv, true);
		break;
	case LEASE_STAND_BY:
		set_leader(l, false);
		schedule_expiry_check(l, now);
		break;
	}
}

static int on_tick(struct loop *loop, void *userdata)
{
	struct lease *l = userdata;

	(void)loop;
	check_renew_deadline(l);
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
	struct lease *l;
	char err[128];
	int r;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->client = c;
	l->opt = *opts;
	if (h)
		l->h = *h;
	if (!l->opt.duration_usec)
		l->opt.duration_usec = LEASE_DEFAULT_DURATION_USEC;
	if (!l->opt.renew_deadline_usec)
		l->opt.renew_deadline_usec = LEASE_DEFAULT_RENEW_DEADLINE_USEC;
	if (!l->opt.retry_period_usec)
		l->opt.retry_period_usec = LEASE_DEFAULT_RETRY_PERIOD_USEC;
	r = lease_options_check(&l->opt, err, sizeof(err));
	if (r < 0) {
		log_error("Failed to start leader election: %s", err);
		free(l);
		return r;
	}
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
	r = loop_add_periodic(c->loop, l->timer_name, l->opt.retry_period_usec, on_tick, l);
	if (r < 0) {
		lease_free(l);
		return r;
	}
	log_info_kv(LOG_KV({ "lease", l->name }, { "identity", l->identity }),
		    "attempting to acquire leader lease %s/%s...", l->namespace, l->name);
	on_tick(c->loop, l);
	*ret = l;
	return 0;
}

struct lease *lease_free(struct lease *l)
{
	if (!l)
		return NULL;
	if (l->timer_name[0])
		loop_remove_periodic(l->client->loop, l->timer_name);
	sd_event_source_disable_unref(l->expiry_check);
	free(l->name);
	free(l->namespace);
	free(l->identity);
	free(l->path);
	free(l->collection);
	free(l->holder);
	free(l->observed_rv);
	free(l->acquire_time);
	free(l);
	return NULL;
}

bool lease_is_leader(const struct lease *l)
{
	return l->mem.leader;
}

const char *lease_holder(const struct lease *l)
{
	return l->holder;
}
