/*
 * The reaper's memory of each NodeClaim (struct claim_work): made when a
 * pass first looks at one, forgotten once no pass looked at it and no
 * request of its own is in flight. Plus the small lookups every file of
 * the reaper uses. Called by daemon.c, termination.c, drain.c,
 * disruption.c and the GC.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "reaper/reaper.h"

const struct state_store *reaper_store(const struct reaper *r)
{
	return replica_store(r->replica);
}

struct claim_work *reaper_work(struct reaper *r, const char *name)
{
	struct claim_work *w = hashmap_get(&r->work, name);

	if (!w) {
		if (!(w = calloc(1, sizeof(*w))) || !(w->name = strdup(name)) ||
		    hashmap_put(&r->work, name, w, NULL) < 0) {
			if (w)
				free(w->name);
			free(w);
			log_error("Failed to track nodeclaim %s: out of memory", name);
			return NULL;
		}
	}
	w->seen_pass = r->pass;
	return w;
}

static void claim_work_free(struct claim_work *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; i < w->n_replacements; i++)
		free(w->replacements[i]);
	free(w->replacements);
	held_plan_free(w->held_plan);
	free(w->name);
	free(w);
}

static bool work_stale(const char *key, void *value, void *userdata)
{
	struct claim_work *w = value;
	const struct reaper *r = userdata;

	(void)key;
	if (r && (w->seen_pass == r->pass || w->in_flight))
		return false;
	claim_work_free(w);
	return true;
}

/* Work records of NodeClaims no pass looked at any more (all: teardown; the
 * requests still in flight are cancelled then and call nothing back). */
void reaper_forget_work(struct reaper *r, bool all)
{
	hashmap_remove_if(&r->work, work_stale, all ? NULL : r);
	if (all)
		hashmap_done(&r->work);
}

const char *provider_instance_id(const char *provider_id)
{
	const char *slash = provider_id ? strrchr(provider_id, '/') : NULL;

	if (!provider_id || strncmp(provider_id, "aws://", 6) != 0 || !slash ||
	    strncmp(slash + 1, "i-", 2) != 0)
		return NULL;
	return slash + 1;
}

bool has_string(char *const *v, uint32_t n, const char *s)
{
	for (uint32_t i = 0; i < n; i++)
		if (streq(v[i], s))
			return true;
	return false;
}
