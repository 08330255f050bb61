/*
 * Pods and what makes them for --simulate: Pod objects (pending or bound),
 * Deployments/ReplicaSets/StatefulSets expanded into their missing replicas
 * (with StatefulSet volume claim templates), DaemonSet templates, and the
 * volume topology a pod's claims impose (bound PV node affinity, unbound
 * WaitForFirstConsumer StorageClass allowedTopologies). Called by
 * simulate-load.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/simulate-internal.h"

/* Pods one workload may expand to. */
#define SIMULATE_MAX_REPLICAS 100000

static const struct volume_claim *find_claim(struct yctx *y, uint32_t ns, const char *name)
{
	for (uint32_t i = 0; i < y->n_pvcs; i++)
		if (y->pvcs[i].ns == ns && streq(strtab_str(&y->c->st, y->pvcs[i].name), name))
			return &y->pvcs[i];
	return NULL;
}

/* What one claim requires of the node: a bound volume's node affinity, or
 * an unbound WaitForFirstConsumer class's allowed topologies. */
static int claim_topology(struct yctx *y, const struct volume_claim *pvc, struct pod *p)
{
	int r;

	if (pvc->volume != STR_NONE) {
		for (uint32_t i = 0; i < y->n_pvs; i++)
			if (y->pvs[i].name == pvc->volume &&
			    (r = requirements_intersect(&p->reqs, &y->pvs[i].reqs, &y->c->st)) < 0)
				return r;
		return 0;
	}
	for (uint32_t i = 0; i < y->n_scs; i++) {
		const struct storage_class *sc = &y->scs[i];
		bool match = pvc->storage_class != STR_NONE ? sc->name == pvc->storage_class : sc->is_default;
		if (match && sc->wait_for_first_consumer &&
		    (r = requirements_intersect(&p->reqs, &sc->reqs, &y->c->st)) < 0)
			return r;
	}
	return 0;
}

/* Adds what the pod's PersistentVolumeClaims require of its node; a
 * missing claim makes the pod unplaceable, as it stays Pending in Kubernetes. */
static int pod_volumes(struct yctx *y, const yaml_node_t *spec, struct pod *p)
{
	const yaml_node_t *vols = yget(y, spec, "volumes");
	yaml_node_t *v;
	int r;

	if (!vols)
		return 0;
	if ((r = yexpect(y, vols, YAML_SEQUENCE_NODE, "a list of volumes")) < 0)
		return r;
	YSEQ_FOREACH(y, vols, v) {
		const char *claim = NULL;
		const struct volume_claim *pvc;
		if ((r = ystr(y, yget(y, yget(y, v, "persistentVolumeClaim"), "claimName"), &claim)) < 0)
			return r;
		if (!claim)
			continue;
		pvc = find_claim(y, p->ns, claim);
		if (!pvc) {
			char *msg = arena_alloc(&y->c->arena, 300);
			if (!msg)
				return -ENOMEM;
			snprintf(msg, 300, "persistentvolumeclaim \"%.200s\" not found", claim);
			p->invalid = msg;
			return 0;
		}
		if ((r = claim_topology(y, pvc, p)) < 0)
			return r;
	}
	return 0;
}

static bool owned_by(struct yctx *y, const yaml_node_t *meta, const char *kind, const char *name)
{
	const yaml_node_t *refs = yget(y, meta, "ownerReferences");
	yaml_node_t *o;
	size_t len = strlen(name);

	if (!yis(refs, YAML_SEQUENCE_NODE))
		return false;
	YSEQ_FOREACH(y, refs, o) {
		const char *k = NULL, *n = NULL;
		if (ystr(y, yget(y, o, "kind"), &k) < 0 || ystr(y, yget(y, o, "name"), &n) < 0 || !k || !n)
			continue;
		if (!streq(k, kind) && !(streq(kind, "Deployment") && streq(k, "ReplicaSet")))
			continue;
		if (!*name && streq(k, kind))
			return true; /* any owner of that kind */
		/* A Deployment's pods belong to its ReplicaSets, named "<deployment>-<hash>". */
		if (streq(n, name) || (streq(k, "ReplicaSet") && streq(kind, "Deployment") &&
				       !strncmp(n, name, len) && n[len] == '-'))
			return true;
	}
	return false;
}

int load_pod(struct yctx *y, const yaml_node_t *obj, uint32_t ns, const char *name)
{
	const yaml_node_t *meta = yget(y, obj, "metadata"), *spec = yget(y, obj, "spec");
	const char *node = NULL, *phase = NULL;
	struct pod *p;
	int r;

	if ((r = ystr(y, yget(y, spec, "nodeName"), &node)) < 0 ||
	    (r = ystr(y, yget(y, yget(y, obj, "status"), "phase"), &phase)) < 0)
		return r;
	if (phase && (streq(phase, "Succeeded") || streq(phase, "Failed")))
		return 0;
	/* Pending DaemonSet pods are not ours to place; bound ones use their node. */
	if (!node && owned_by(y, meta, "DaemonSet", ""))
		return 0;
	if (!(p = cluster_add_pod(y->c)))
		return -ENOMEM;
	p->name = yintern(y, name);
	if (node)
		p->node = yintern(y, node);
	if ((r = ypod(y, meta, spec, ns, p)) < 0)
		return r;
	return pod_volumes(y, spec, p);
}

/* volumeClaimTemplates: each replica mounts "<template>-<set>-<ordinal>",
 * created unbound unless the dump has it. */
static int statefulset_claims(struct yctx *y, const yaml_node_t *vcts, uint32_t ns, const char *set,
			      int64_t ordinal, struct pod *p)
{
	yaml_node_t *t;
	int r;

	if (!vcts)
		return 0;
	if ((r = yexpect(y, vcts, YAML_SEQUENCE_NODE, "volumeClaimTemplates")) < 0)
		return r;
	YSEQ_FOREACH(y, vcts, t) {
		const char *tn = NULL;
		char cn[1024];
		if ((r = ystr(y, yget(y, yget(y, t, "metadata"), "name"), &tn)) < 0)
			return r;
		snprintf(cn, sizeof(cn), "%.300s-%.300s-%lld", tn ? tn : "", set, (long long)ordinal);
		if (!find_claim(y, ns, cn) && (r = load_pvc(y, t, ns, cn)) < 0)
			return r;
		if ((r = claim_topology(y, find_claim(y, ns, cn), p)) < 0)
			return r;
	}
	return 0;
}

int load_workload(struct yctx *y, const yaml_node_t *obj, const char *kind, uint32_t ns,
			 const char *name)
{
	const yaml_node_t *spec = yget(y, obj, "spec"), *tmpl = yget(y, spec, "template");
	const yaml_node_t *meta = yget(y, obj, "metadata");
	int64_t replicas = 1, have = 0;
	int r;

	if (streq(kind, "ReplicaSet") && yget(y, meta, "ownerReferences"))
		return 0; /* its Deployment (in the same dump) accounts for it */
	if ((r = yint(y, yget(y, spec, "replicas"), &replicas)) < 0)
		return r;
	if (replicas < 0 || replicas > SIMULATE_MAX_REPLICAS)
		return yerr(y, yget(y, spec, "replicas"), "replicas must be between 0 and %d",
			    SIMULATE_MAX_REPLICAS);
	if ((r = yexpect(y, tmpl, YAML_MAPPING_NODE, "spec.template")) < 0)
		return r;
	/* Pods of the dump that belong to it already exist: expand only the rest. */
	for (uint32_t i = 0; i < y->c->n_pods; i++) {
		const char *pn = strtab_str(&y->c->st, y->c->pods[i].name);
		size_t len = strlen(name);
		if (y->c->pods[i].ns == ns && !strncmp(pn, name, len) && pn[len] == '-')
			have++;
	}
	for (int64_t i = have; i < replicas; i++) {
		char pname[512];
		struct pod *p = cluster_add_pod(y->c);
		if (!p)
			return -ENOMEM;
		snprintf(pname, sizeof(pname), "%.400s-%lld", name, (long long)i);
		p->name = yintern(y, pname);
		if ((r = ypod(y, yget(y, tmpl, "metadata"), yget(y, tmpl, "spec"), ns, p)) < 0)
			return r;
		if ((r = pod_volumes(y, yget(y, tmpl, "spec"), p)) < 0)
			return r;
		if (streq(kind, "StatefulSet") && !p->invalid &&
		    (r = statefulset_claims(y, yget(y, spec, "volumeClaimTemplates"), ns, name, i, p)) < 0)
			return r;
	}
	return 0;
}

int load_daemonset(struct yctx *y, const yaml_node_t *obj, uint32_t ns, const char *name)
{
	const yaml_node_t *tmpl = yget(y, yget(y, obj, "spec"), "template");
	struct pod *p = cluster_add_daemonset(y->c);
	int r;

	if (!p)
		return -ENOMEM;
	p->name = yintern(y, name);
	if ((r = yexpect(y, tmpl, YAML_MAPPING_NODE, "spec.template")) < 0)
		return r;
	return ypod(y, yget(y, tmpl, "metadata"), yget(y, tmpl, "spec"), ns, p);
}

