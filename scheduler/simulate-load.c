/*
 * The --simulate loader: a YAML stream (documents, or kind: List) of
 * NodePools (karpenter.sh v1, v1beta1; v1alpha5 Provisioners converted),
 * Nodes, Pods, Deployments/ReplicaSets/StatefulSets (expanded into their
 * missing pending pods), DaemonSets, PVCs, PVs, StorageClasses and our own
 * kanna.dev/v1alpha1 InstanceTypes into a cluster model. EC2NodeClass,
 * PodDisruptionBudget and other kinds are accepted and ignored. Called by
 * scheduler/main.c and the fuzz target; reads no file but the catalog.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/simulate-internal.h"

/* Documents in one input. */
#define SIMULATE_MAX_DOCUMENTS 100000

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

/* A NodeClaim without its Node yet is capacity in flight: its labels are
 * its single-valued requirements, its size its instance type's. */
static int load_nodeclaim(struct yctx *y, const yaml_node_t *obj, const char *name)
{
	const yaml_node_t *meta = yget(y, obj, "metadata"), *spec = yget(y, obj, "spec");
	const yaml_node_t *status = yget(y, obj, "status");
	struct requirements reqs = { 0 };
	struct label *l;
	const char *node_name = NULL;
	uint32_t n_l;
	struct node *nd;
	int r;

	if ((r = ylabels(y, yget(y, meta, "labels"), &l, &n_l)) < 0 ||
	    (r = yrequirements(y, yget(y, spec, "requirements"), &reqs)) < 0 ||
	    (r = ystr(y, yget(y, status, "nodeName"), &node_name)) < 0)
		goto out;
	r = -ENOMEM;
	nd = cluster_add_in_flight(y->c, yintern(y, name), l, n_l, &reqs,
				   node_name ? yintern(y, node_name) : STR_NONE);
	if (!nd)
		goto out;
	if ((r = ytaints(y, yget(y, spec, "taints"), &nd->taints, &nd->n_taints)) < 0 ||
	    (r = yresources(y, yget(y, status, "capacity"), &nd->capacity)) < 0 ||
	    (r = yresources(y, yget(y, status, "allocatable"), &nd->allocatable)) < 0)
		goto out;
	r = 0;
out:
	requirements_free(&reqs);
	return r;
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

int load_pvc(struct yctx *y, const yaml_node_t *obj, uint32_t ns, const char *name)
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
		if (streq(kind, "NodeClaim") || streq(kind, "Machine"))
			return load_nodeclaim(y, obj, name);
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
			return load_workload(y, root, k, yintern(y, ns && *ns ? ns : "default"), name);
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

/*
 * An AWS zone name: <2 letters>-[gov-]<word>-<digits><letter>, e.g.
 * us-east-1a, eu-west-1b, ap-northeast-1c, us-gov-west-1a. Strict, so that
 * names that merely end in a digit and a letter (pod names) do not count.
 */
static bool zone_like(const char *s, size_t *region_len)
{
	const char *p = s;
	size_t n = strlen(s);

	if (n < 7 || !islower((unsigned char)p[0]) || !islower((unsigned char)p[1]) || p[2] != '-')
		return false;
	p += 3;
	if (strncmp(p, "gov-", 4) == 0)
		p += 4;
	if (!islower((unsigned char)*p))
		return false;
	while (islower((unsigned char)*p))
		p++;
	if (*p++ != '-' || !isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	if (!islower((unsigned char)p[0]) || p[1] != '\0')
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
	if (r >= 0)
		r = cluster_settle_in_flight(y.c);
	if (r >= 0) {
		cluster_assign_nodepools(y.c);
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
