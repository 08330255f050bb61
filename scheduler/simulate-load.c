/*
 * The --simulate loader: a YAML stream (documents, or kind: List) of
 * NodePools (karpenter.sh v1, v1beta1; v1alpha5 Provisioners converted),
 * Nodes, Pods, Deployments/ReplicaSets/StatefulSets (expanded into their
 * missing pending pods), DaemonSets, PVCs, PVs, StorageClasses and our own
 * kanna.dev/v1alpha1 InstanceTypes into a cluster model. EC2NodeClass,
 * PodDisruptionBudget and other kinds are accepted and ignored. Called by
 * scheduler/main.c and the fuzz target; reads no file but the catalog.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/simulate-internal.h"

/* Documents in one input, and pods one workload may expand to. */
#define SIMULATE_MAX_DOCUMENTS 100000
#define SIMULATE_MAX_REPLICAS 100000

static int nodepool_requirements(struct yctx *y, struct nodepool *np, const yaml_node_t *reqs,
				 const yaml_node_t *labels, bool provisioner)
{
	struct label *l;
	uint32_t n;
	int r;

	if ((r = yrequirements(y, reqs, &np->reqs)) < 0 ||
	    (r = ylabels(y, labels, &l, &n)) < 0)
		return r;
	for (uint32_t i = 0; i < n; i++)
		if ((r = requirements_add(&np->reqs, &y->c->st, l[i].key, REQ_IN, &l[i].value, 1, 0)) < 0)
			return r;
	if ((r = requirements_add(&np->reqs, &y->c->st, K_NODEPOOL, REQ_IN, &np->name, 1, 0)) < 0)
		return r;
	if (provisioner &&
	    (r = requirements_add(&np->reqs, &y->c->st, K_PROVISIONER_NAME, REQ_IN, &np->name, 1, 0)) < 0)
		return r;
	/* Karpenter's AWS defaulting: on-demand unless capacity types are given. */
	if (!requirements_get(&np->reqs, K_CAPACITY_TYPE)) {
		uint32_t od = V_ON_DEMAND;
		r = requirements_add(&np->reqs, &y->c->st, K_CAPACITY_TYPE, REQ_IN, &od, 1, 0);
	}
	return r;
}

static int nodepool_limits(struct yctx *y, struct nodepool *np, const yaml_node_t *limits)
{
	struct resources lim = { { 0 } };
	int64_t nodes = 0;
	int r;

	if (!limits)
		return 0;
	if ((r = yresources(y, limits, &lim)) < 0 || (r = yint(y, yget(y, limits, "nodes"), &nodes)) < 0)
		return r;
	for (int i = 0; i < SCHED_MAX_RESOURCES; i++)
		if (yget(y, limits, strtab_str(&y->c->st, y->c->cat.resource_names[i])) && i < (int)y->c->cat.n_resources)
			np->limits.v[i] = lim.v[i];
	if (yget(y, limits, "nodes"))
		np->node_limit = nodes;
	return 0;
}

static int load_nodepool(struct yctx *y, const yaml_node_t *obj, const char *api, const char *name)
{
	bool provisioner = strstr(api, "v1alpha5") != NULL;
	const yaml_node_t *spec = yget(y, obj, "spec"), *tspec, *tmeta;
	struct nodepool *np;
	int64_t weight = 0;
	int r;

	for (uint32_t i = 0; i < y->c->n_nodepools; i++)
		if (streq(strtab_str(&y->c->st, y->c->nodepools[i].name), name))
			return yerr(y, obj, "duplicate NodePool \"%s\"", name);
	if (!(np = cluster_add_nodepool(y->c)))
		return -ENOMEM;
	np->name = yintern(y, name);
	if (spec && (r = yexpect(y, spec, YAML_MAPPING_NODE, "a spec")) < 0)
		return r;
	if ((r = yint(y, yget(y, spec, "weight"), &weight)) < 0)
		return r;
	if (weight < 0 || weight > 100)
		return yerr(y, yget(y, spec, "weight"), "weight must be between 0 and 100");
	np->weight = (int32_t)weight;
	if (provisioner) {
		if ((r = nodepool_requirements(y, np, yget(y, spec, "requirements"), yget(y, spec, "labels"), true)) < 0 ||
		    (r = ytaints(y, yget(y, spec, "taints"), &np->taints, &np->n_taints)) < 0)
			return r;
		return nodepool_limits(y, np, yget(y, yget(y, spec, "limits"), "resources"));
	}
	tmeta = yget(y, yget(y, spec, "template"), "metadata");
	tspec = yget(y, yget(y, spec, "template"), "spec");
	if ((r = nodepool_requirements(y, np, yget(y, tspec, "requirements"), yget(y, tmeta, "labels"), false)) < 0 ||
	    (r = ytaints(y, yget(y, tspec, "taints"), &np->taints, &np->n_taints)) < 0)
		return r;
	return nodepool_limits(y, np, yget(y, spec, "limits"));
}

static int load_node(struct yctx *y, const yaml_node_t *obj, const char *name)
{
	const yaml_node_t *meta = yget(y, obj, "metadata"), *spec = yget(y, obj, "spec");
	const yaml_node_t *status = yget(y, obj, "status");
	struct node *n = cluster_add_node(y->c);
	int r;

	if (!n)
		return -ENOMEM;
	n->name = yintern(y, name);
	if ((r = ylabels(y, yget(y, meta, "labels"), &n->labels, &n->n_labels)) < 0 ||
	    (r = ytaints(y, yget(y, spec, "taints"), &n->taints, &n->n_taints)) < 0 ||
	    (r = ybool(y, yget(y, spec, "unschedulable"), &n->unschedulable)) < 0 ||
	    (r = yresources(y, yget(y, status, "capacity"), &n->capacity)) < 0 ||
	    (r = yresources(y, yget(y, status, "allocatable"), &n->allocatable)) < 0)
		return r;
	if (!yget(y, status, "allocatable"))
		n->allocatable = n->capacity;
	if (!yget(y, status, "capacity"))
		n->capacity = n->allocatable;
	if (!n->allocatable.v[RES_CPU] && !n->allocatable.v[RES_MEMORY])
		return yerr(y, obj, "Node \"%s\" has no status.allocatable or status.capacity", name);
	return 0;
}

static int grow_array(void **v, uint32_t *n, uint32_t *cap, size_t size)
{
	if (*n == *cap) {
		uint32_t c = *cap ? *cap * 2 : 16;
		void *nv = realloc(*v, c * size);
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	memset((char *)*v + (size_t)*n * size, 0, size);
	(*n)++;
	return 0;
}

static int load_pvc(struct yctx *y, const yaml_node_t *obj, uint32_t ns, const char *name)
{
	const yaml_node_t *spec = yget(y, obj, "spec");
	const char *vol = NULL, *sc = NULL;
	int r;

	if ((r = ystr(y, yget(y, spec, "volumeName"), &vol)) < 0 ||
	    (r = ystr(y, yget(y, spec, "storageClassName"), &sc)) < 0 ||
	    (r = grow_array((void **)&y->pvcs, &y->n_pvcs, &y->cap_pvcs, sizeof(*y->pvcs))) < 0)
		return r;
	y->pvcs[y->n_pvcs - 1] = (struct volume_claim){ ns, yintern(y, name),
							 vol ? yintern(y, vol) : STR_NONE,
							 sc ? yintern(y, sc) : STR_NONE };
	return 0;
}

static int first_term(struct yctx *y, const yaml_node_t *terms, const char *field,
		      struct requirements *r)
{
	int ret;

	if (!terms)
		return 0;
	if ((ret = yexpect(y, terms, YAML_SEQUENCE_NODE, "a list of terms")) < 0)
		return ret;
	if (terms->data.sequence.items.top == terms->data.sequence.items.start)
		return 0;
	/* Only the first term: volumes are zonal, their terms name one zone set. */
	yaml_node_t *t = yaml_document_get_node(y->doc, *terms->data.sequence.items.start);
	return yrequirements(y, yget(y, t, field), r);
}

static int load_pv(struct yctx *y, const yaml_node_t *obj, const char *name)
{
	const yaml_node_t *na = yget(y, yget(y, obj, "spec"), "nodeAffinity");
	int r = grow_array((void **)&y->pvs, &y->n_pvs, &y->cap_pvs, sizeof(*y->pvs));

	if (r < 0)
		return r;
	y->pvs[y->n_pvs - 1].name = yintern(y, name);
	return first_term(y, yget(y, yget(y, na, "required"), "nodeSelectorTerms"), "matchExpressions",
			  &y->pvs[y->n_pvs - 1].reqs);
}

static int load_storage_class(struct yctx *y, const yaml_node_t *obj, const char *name)
{
	const yaml_node_t *ann = yget(y, yget(y, obj, "metadata"), "annotations");
	const char *mode = NULL, *def = NULL;
	int r = grow_array((void **)&y->scs, &y->n_scs, &y->cap_scs, sizeof(*y->scs));
	struct storage_class *sc;

	if (r < 0)
		return r;
	sc = &y->scs[y->n_scs - 1];
	sc->name = yintern(y, name);
	if ((r = ystr(y, yget(y, obj, "volumeBindingMode"), &mode)) < 0 ||
	    (r = ystr(y, yget(y, ann, "storageclass.kubernetes.io/is-default-class"), &def)) < 0)
		return r;
	sc->wait_for_first_consumer = mode && streq(mode, "WaitForFirstConsumer");
	sc->is_default = def && streq(def, "true");
	return first_term(y, yget(y, obj, "allowedTopologies"), "matchLabelExpressions", &sc->reqs);
}

/* kanna.dev/v1alpha1 InstanceType: spec {cpu, memory, pods, arch, gpuCount,
 * gpuName, labels, offerings: [{zone, capacityType, price, available}]}. */
static int load_instance_type(struct yctx *y, const yaml_node_t *obj, const char *name)
{
	const yaml_node_t *spec = yget(y, obj, "spec"), *offs = yget(y, spec, "offerings"), *o;
	struct label labels[64];
	struct offering off[SCHED_MAX_ZONES * CT_N];
	struct instance_type it = { 0 };
	const char *arch = "amd64", *gpu_name = NULL;
	int64_t cpu = 0, mem = 0, pods = 110, gpus = 0;
	struct label *extra;
	uint32_t n_extra, n = 0;
	int r;

	if ((r = yexpect(y, spec, YAML_MAPPING_NODE, "an InstanceType spec")) < 0 ||
	    (r = yquantity(y, yget(y, spec, "cpu"), true, &cpu)) < 0 ||
	    (r = yquantity(y, yget(y, spec, "memory"), false, &mem)) < 0 ||
	    (r = yint(y, yget(y, spec, "pods"), &pods)) < 0 ||
	    (r = yint(y, yget(y, spec, "gpuCount"), &gpus)) < 0 ||
	    (r = ystr(y, yget(y, spec, "arch"), &arch)) < 0 ||
	    (r = ystr(y, yget(y, spec, "gpuName"), &gpu_name)) < 0 ||
	    (r = ylabels(y, yget(y, spec, "labels"), &extra, &n_extra)) < 0)
		return r;
	if (cpu <= 0 || mem <= 0 || pods <= 0)
		return yerr(y, spec, "InstanceType \"%s\" needs positive cpu, memory and pods", name);
	if (n_extra > 50)
		return yerr(y, spec, "too many labels");
	it.name = yintern(y, name);
	labels[n++] = (struct label){ K_INSTANCE_TYPE, it.name };
	labels[n++] = (struct label){ K_ARCH, yintern(y, arch) };
	labels[n++] = (struct label){ K_OS, V_LINUX };
	if (gpus > 0) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%lld", (long long)gpus);
		labels[n++] = (struct label){ K_INSTANCE_GPU_COUNT, yintern(y, buf) };
		if (gpu_name)
			labels[n++] = (struct label){ K_INSTANCE_GPU_NAME, yintern(y, gpu_name) };
	}
	for (uint32_t i = 0; i < n_extra; i++)
		labels[n++] = extra[i];
	it.labels = labels;
	it.n_labels = n;
	/* cpu rounds up to whole vCPUs; memory is the advertised size. */
	catalog_capacity((cpu + 999) / 1000, mem >> 20, pods, &it.capacity, &it.allocatable);
	it.capacity.v[RES_NVIDIA_GPU] = it.allocatable.v[RES_NVIDIA_GPU] = gpus;
	if (offs && (r = yexpect(y, offs, YAML_SEQUENCE_NODE, "a list of offerings")) < 0)
		return r;
	if (offs)
		YSEQ_FOREACH(y, offs, o) {
			const char *zone = NULL, *ct = NULL, *price = NULL;
			bool available = true;
			if ((r = yexpect(y, o, YAML_MAPPING_NODE, "an offering")) < 0 ||
			    (r = ystr(y, yget(y, o, "zone"), &zone)) < 0 ||
			    (r = ystr(y, yget(y, o, "capacityType"), &ct)) < 0 ||
			    (r = ystr(y, yget(y, o, "price"), &price)) < 0 ||
			    (r = ybool(y, yget(y, o, "available"), &available)) < 0)
				return r;
			if (!zone || !ct || !price || (!streq(ct, "spot") && !streq(ct, "on-demand")))
				return yerr(y, o, "an offering needs zone, capacityType (spot or on-demand) and price");
			char *end;
			double pr = strtod(price, &end);
			if (*end || pr < 0)
				return yerr(y, yget(y, o, "price"), "invalid price \"%s\"", price);
			if (it.n_offerings >= ARRAY_SIZE(off))
				return yerr(y, o, "too many offerings");
			int z = catalog_zone(&y->c->cat, yintern(y, zone), STR_NONE);
			if (z < 0)
				return yerr(y, o, "too many zones");
			off[it.n_offerings++] = (struct offering){ (uint8_t)z, streq(ct, "spot") ? CT_SPOT : CT_ON_DEMAND,
								   available, pr };
		}
	it.offerings = off;
	y->n_instance_types++;
	return catalog_add_type(&y->c->cat, &it);
}


/* Adds what the pod's PersistentVolumeClaims require of its node. */
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
		const struct volume_claim *pvc = NULL;
		if ((r = ystr(y, yget(y, yget(y, v, "persistentVolumeClaim"), "claimName"), &claim)) < 0)
			return r;
		if (!claim)
			continue;
		for (uint32_t i = 0; i < y->n_pvcs; i++)
			if (y->pvcs[i].ns == p->ns && streq(strtab_str(&y->c->st, y->pvcs[i].name), claim))
				pvc = &y->pvcs[i];
		if (!pvc) {
			char *msg = arena_alloc(&y->c->arena, 300);
			if (!msg)
				return -ENOMEM;
			snprintf(msg, 300, "persistentvolumeclaim \"%.200s\" not found", claim);
			p->invalid = msg;
			return 0;
		}
		if (pvc->volume != STR_NONE) {
			for (uint32_t i = 0; i < y->n_pvs; i++)
				if (y->pvs[i].name == pvc->volume &&
				    (r = requirements_intersect(&p->reqs, &y->pvs[i].reqs, &y->c->st)) < 0)
					return r;
			continue;
		}
		for (uint32_t i = 0; i < y->n_scs; i++) {
			const struct storage_class *sc = &y->scs[i];
			bool match = pvc->storage_class != STR_NONE ? sc->name == pvc->storage_class : sc->is_default;
			if (match && sc->wait_for_first_consumer &&
			    (r = requirements_intersect(&p->reqs, &sc->reqs, &y->c->st)) < 0)
				return r;
		}
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
		/* A Deployment's pods belong to its ReplicaSets, named "<deployment>-<hash>". */
		if (streq(n, name) || (streq(k, "ReplicaSet") && streq(kind, "Deployment") &&
				       !strncmp(n, name, len) && n[len] == '-'))
			return true;
	}
	return false;
}

static int load_pod(struct yctx *y, const yaml_node_t *obj, uint32_t ns, const char *name)
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

static int load_workload(struct yctx *y, const yaml_node_t *obj, const char *kind, uint32_t ns,
			 const char *name, const yaml_node_t *root_items)
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
	(void)root_items;
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
		if (streq(kind, "StatefulSet")) {
			/* volumeClaimTemplates: claim "<template>-<set>-<ordinal>", unbound. */
			const yaml_node_t *vcts = yget(y, spec, "volumeClaimTemplates");
			yaml_node_t *t;
			if (vcts && (r = yexpect(y, vcts, YAML_SEQUENCE_NODE, "volumeClaimTemplates")) < 0)
				return r;
			if (vcts)
				YSEQ_FOREACH(y, vcts, t) {
					const char *tn = NULL;
					char cn[1024];
					if ((r = ystr(y, yget(y, yget(y, t, "metadata"), "name"), &tn)) < 0)
						return r;
					snprintf(cn, sizeof(cn), "%.300s-%.300s-%lld", tn ? tn : "", name, (long long)i);
					bool exists = false;
					for (uint32_t k = 0; k < y->n_pvcs; k++)
						exists |= y->pvcs[k].ns == ns && streq(strtab_str(&y->c->st, y->pvcs[k].name), cn);
					if (!exists && (r = load_pvc(y, t, ns, cn)) < 0)
						return r;
				}
		}
		if ((r = pod_volumes(y, yget(y, tmpl, "spec"), p)) < 0)
			return r;
		/* A StatefulSet pod mounts its claims without listing them as volumes. */
		if (streq(kind, "StatefulSet") && !p->invalid) {
			const yaml_node_t *vcts = yget(y, spec, "volumeClaimTemplates");
			yaml_node_t *t;
			if (vcts)
				YSEQ_FOREACH(y, vcts, t) {
					const char *tn = NULL;
					char cn[1024];
					(void)ystr(y, yget(y, yget(y, t, "metadata"), "name"), &tn);
					snprintf(cn, sizeof(cn), "%.300s-%.300s-%lld", tn ? tn : "", name, (long long)i);
					for (uint32_t k = 0; k < y->n_pvcs; k++) {
						const struct volume_claim *pvc = &y->pvcs[k];
						if (pvc->ns != ns || !streq(strtab_str(&y->c->st, pvc->name), cn))
							continue;
						for (uint32_t s2 = 0; s2 < y->n_scs; s2++) {
							const struct storage_class *sc = &y->scs[s2];
							bool match = pvc->storage_class != STR_NONE ? sc->name == pvc->storage_class : sc->is_default;
							if (match && sc->wait_for_first_consumer &&
							    (r = requirements_intersect(&p->reqs, &sc->reqs, &y->c->st)) < 0)
								return r;
						}
					}
				}
		}
	}
	return 0;
}

static int load_daemonset(struct yctx *y, const yaml_node_t *obj, uint32_t ns, const char *name)
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

/* Pass 0: catalog, NodePools, Nodes, volumes. Pass 1: pods and workloads. */
static int load_object(struct yctx *y, const yaml_node_t *obj, int pass)
{
	const char *api = NULL, *kind = NULL, *name = NULL, *ns = NULL;
	const yaml_node_t *meta;
	int r;

	if ((r = yexpect(y, obj, YAML_MAPPING_NODE, "a Kubernetes object")) < 0 ||
	    (r = ystr(y, yget(y, obj, "apiVersion"), &api)) < 0 ||
	    (r = ystr(y, yget(y, obj, "kind"), &kind)) < 0)
		return r;
	if (!kind)
		return yerr(y, obj, "object without kind");
	meta = yget(y, obj, "metadata");
	if ((r = ystr(y, yget(y, meta, "name"), &name)) < 0 ||
	    (r = ystr(y, yget(y, meta, "namespace"), &ns)) < 0)
		return r;
	if (!name || !*name)
		return yerr(y, obj, "%s without metadata.name", kind);
	uint32_t nsid = yintern(y, ns && *ns ? ns : "default");
	if (!api)
		api = "";
	if (pass == 0) {
		if (streq(kind, "NodePool") || streq(kind, "Provisioner"))
			return load_nodepool(y, obj, api, name);
		if (streq(kind, "Node"))
			return load_node(y, obj, name);
		if (streq(kind, "PersistentVolumeClaim"))
			return load_pvc(y, obj, nsid, name);
		if (streq(kind, "PersistentVolume"))
			return load_pv(y, obj, name);
		if (streq(kind, "StorageClass"))
			return load_storage_class(y, obj, name);
		if (streq(kind, "InstanceType") && strstr(api, "kanna.dev"))
			return load_instance_type(y, obj, name);
		return 0;
	}
	if (streq(kind, "Pod"))
		return load_pod(y, obj, nsid, name);
	if (streq(kind, "Deployment") || streq(kind, "ReplicaSet") || streq(kind, "StatefulSet"))
		return 0; /* pass 2, once every Pod is known */
	if (streq(kind, "DaemonSet"))
		return load_daemonset(y, obj, nsid, name);
	return 0;
}

static int load_document(struct yctx *y, const yaml_node_t *root, int pass)
{
	const char *kind = NULL;
	const yaml_node_t *items;
	yaml_node_t *item;
	int r;

	if ((r = ystr(y, yget(y, root, "kind"), &kind)) < 0)
		return r;
	if (!kind || !streq(kind, "List") || !(items = yget(y, root, "items"))) {
		if (pass < 2)
			return load_object(y, root, pass);
		items = NULL;
	}
	if (pass == 2) {
		/* Workloads, after every Pod (their existing replicas) is loaded. */
		const yaml_node_t *list = items;
		if (!list) {
			const char *k = NULL, *name = NULL, *ns = NULL;
			(void)ystr(y, yget(y, root, "kind"), &k);
			if (!k || (!streq(k, "Deployment") && !streq(k, "ReplicaSet") && !streq(k, "StatefulSet")))
				return 0;
			(void)ystr(y, yget(y, yget(y, root, "metadata"), "name"), &name);
			(void)ystr(y, yget(y, yget(y, root, "metadata"), "namespace"), &ns);
			return load_workload(y, root, k, yintern(y, ns && *ns ? ns : "default"), name, NULL);
		}
		if ((r = yexpect(y, list, YAML_SEQUENCE_NODE, "items: a list of objects")) < 0)
			return r;
		YSEQ_FOREACH(y, list, item)
			if ((r = load_document(y, item, 2)) < 0)
				return r;
		return 0;
	}
	if ((r = yexpect(y, items, YAML_SEQUENCE_NODE, "items: a list of objects")) < 0)
		return r;
	YSEQ_FOREACH(y, items, item)
		if ((r = load_object(y, item, pass)) < 0)
			return r;
	return 0;
}

static bool zone_like(const char *s, size_t *region_len)
{
	/* us-east-1a, eu-west-1b, ap-northeast-1c, us-gov-west-1a */
	size_t n = strlen(s);
	if (n < 6 || s[n - 1] < 'a' || s[n - 1] > 'z' || s[n - 2] < '0' || s[n - 2] > '9')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	if (!strchr(s, '-') || strchr(s, '-') == s)
		return false;
	*region_len = n - 1;
	return true;
}

/* The shipped catalog, in the region the input talks about (the first
 * zone-like value it mentions), zones a/b/c plus any other it names. */
static int load_shipped_catalog(struct yctx *y, const struct simulate_options *opts)
{
	char region[64] = "us-east-1", path[4096];
	const char *zones[SCHED_MAX_ZONES];
	char zone_buf[SCHED_MAX_ZONES][64];
	size_t n = 0, rl;
	int r;

	for (uint32_t i = K_N_FIXED; i < y->c->st.n; i++) {
		const char *s = strtab_str(&y->c->st, i);
		if (zone_like(s, &rl) && rl < sizeof(region)) {
			memcpy(region, s, rl);
			region[rl] = '\0';
			break;
		}
	}
	for (char z = 'a'; z <= 'c'; z++) {
		snprintf(zone_buf[n], sizeof(zone_buf[n]), "%s%c", region, z);
		zones[n] = zone_buf[n];
		n++;
	}
	for (uint32_t i = K_N_FIXED; i < y->c->st.n && n < SCHED_MAX_ZONES; i++) {
		const char *s = strtab_str(&y->c->st, i);
		if (zone_like(s, &rl) && rl == strlen(region) && !strncmp(s, region, rl) && s[rl] > 'c' &&
		    strlen(s) < sizeof(zone_buf[n])) {
			bool seen = false;
			for (size_t k = 0; k < n; k++)
				seen |= streq(zones[k], s);
			if (seen)
				continue;
			snprintf(zone_buf[n], sizeof(zone_buf[n]), "%s", s);
			zones[n] = zone_buf[n];
			n++;
		}
	}
	if (opts && opts->catalog_path)
		snprintf(path, sizeof(path), "%s", opts->catalog_path);
	else
		catalog_default_path(path, sizeof(path));
	r = catalog_load_tsv(&y->c->cat, path, region, zones, n);
	if (r < 0)
		snprintf(y->err, y->err_size, "Failed to load the instance-type catalog %s: %s", path,
			 strerror(-r));
	return r;
}

static void node_pools(struct cluster *c)
{
	for (uint32_t i = 0; i < c->n_nodes; i++) {
		struct node *n = &c->nodes[i];
		uint32_t pool = labels_get(n->labels, n->n_labels, K_NODEPOOL);
		if (pool == STR_NONE)
			pool = labels_get(n->labels, n->n_labels, K_PROVISIONER_NAME);
		for (uint32_t p = 0; pool != STR_NONE && p < c->n_nodepools; p++)
			if (c->nodepools[p].name == pool) {
				n->nodepool = (int32_t)p;
				resources_add(&c->nodepools[p].in_use, &n->capacity, c->cat.n_resources);
				c->nodepools[p].nodes_in_use++;
			}
	}
}

static int load_all(struct yctx *y, yaml_parser_t *parser, yaml_document_t **docsp, size_t *n_docs)
{
	size_t cap = 0;
	yaml_document_t *docs = NULL;
	int r;

	for (;;) {
		if (*n_docs >= SIMULATE_MAX_DOCUMENTS)
			return yerr(y, NULL, "more than %d documents", SIMULATE_MAX_DOCUMENTS);
		if (*n_docs == cap) {
			cap = cap ? cap * 2 : 16;
			yaml_document_t *nd = realloc(docs, cap * sizeof(*docs));
			if (!nd)
				return -ENOMEM;
			docs = *docsp = nd;
		}
		if (!yaml_parser_load(parser, &docs[*n_docs])) {
			snprintf(y->err, y->err_size, "%s:%zu:%zu: %s%s%s", y->file,
				 parser->problem_mark.line + 1, parser->problem_mark.column + 1,
				 parser->problem ? parser->problem : "invalid YAML",
				 parser->context ? " " : "", parser->context ? parser->context : "");
			return -EINVAL;
		}
		yaml_node_t *root = yaml_document_get_root_node(&docs[*n_docs]);
		if (!root) {
			yaml_document_delete(&docs[*n_docs]);
			break;
		}
		(*n_docs)++;
	}
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < *n_docs; i++) {
			y->doc = &docs[i];
			yaml_node_t *root = yaml_document_get_root_node(&docs[i]);
			if (pass == 0 && root->type != YAML_MAPPING_NODE)
				return yerr(y, root, "expected a Kubernetes object (a mapping)");
			if ((r = load_document(y, root, pass)) < 0)
				return r;
		}
	return 0;
}

int simulate_load(const char *file, const char *data, size_t size,
		  const struct simulate_options *opts, struct cluster **ret, char *err,
		  size_t err_size)
{
	struct yctx y = { .file = file, .err = err, .err_size = err_size };
	yaml_document_t *docs = NULL;
	yaml_parser_t parser;
	size_t n_docs = 0;
	int r;

	err[0] = '\0';
	if ((r = cluster_new(&y.c)) < 0)
		return r;
	if (!yaml_parser_initialize(&parser)) {
		cluster_free(y.c);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, size);
	/* Documents stay loaded until every pass is done (workloads look back). */
	r = load_all(&y, &parser, &docs, &n_docs);
	if (r >= 0 && opts && opts->fake_types)
		r = y.n_instance_types ? 0 : catalog_add_fake_types(&y.c->cat, opts->fake_types);
	else if (r >= 0 && !y.n_instance_types)
		r = load_shipped_catalog(&y, opts);
	if (r >= 0)
		r = catalog_finalize(&y.c->cat);
	if (r >= 0) {
		node_pools(y.c);
		cluster_compute_daemon_overhead(y.c);
	}
	for (size_t i = 0; i < n_docs; i++)
		yaml_document_delete(&docs[i]);
	free(docs);
	yaml_parser_delete(&parser);
	for (uint32_t i = 0; i < y.n_pvs; i++)
		requirements_free(&y.pvs[i].reqs);
	for (uint32_t i = 0; i < y.n_scs; i++)
		requirements_free(&y.scs[i].reqs);
	free(y.pvs);
	free(y.scs);
	free(y.pvcs);
	if (r < 0) {
		if (!err[0])
			snprintf(err, err_size, "%s: %s", file, strerror(-r));
		cluster_free(y.c);
		return r;
	}
	*ret = y.c;
	return 0;
}
