/*
 * The instance-type catalog of a cluster dump (dump.h): the input's own
 * kanna.dev/v1alpha1 InstanceType objects when it has any (spec {cpu,
 * memory, pods, arch, gpuCount, gpuName, labels, offerings: [{zone,
 * capacityType, price, available}]}), else Karpenter's fake catalog when
 * asked (tests, fuzzing), else the shipped catalog in the region the input
 * talks about. Plugged into cluster_from_state() as its fill_catalog.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"
#include "dump/dump-internal.h"

/* Labels an InstanceType may add to the well-known ones it gets. */
#define INSTANCE_TYPE_MAX_LABELS 50

static uint32_t intern(struct catalog *cat, const char *s)
{
	int64_t id = strtab_intern(cat->st, s);
	return id < 0 ? STR_NONE : (uint32_t)id;
}

/* A quantity written as a string or a plain number. */
static int quantity(struct dump_input *in, const json_t *v, const json_t *obj, bool milli,
		    int64_t *ret)
{
	char buf[32];
	const char *s = json_string_value(v);

	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		s = buf;
	}
	if (!s || quantity_parse(s, milli, ret) < 0)
		return dump_error(in, v, obj, "invalid quantity \"%s\"", s ? s : "(not a string)");
	return 0;
}

static int integer(struct dump_input *in, const json_t *v, const json_t *obj, int64_t *ret)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return dump_error(in, v, obj, "expected an integer");
	*ret = json_integer_value(v);
	return 0;
}

static int string(struct dump_input *in, const json_t *v, const json_t *obj, const char **ret)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return dump_error(in, v, obj, "expected a string");
	*ret = json_string_value(v);
	return 0;
}

/* Every key of o must be one of known (NULL-terminated): an unknown one is
 * refused, never ignored (it would change the answer without a word). */
static int known_fields(struct dump_input *in, const json_t *o, const json_t *obj, const char *what,
			const char *const *known)
{
	const char *k;
	const json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		size_t i = 0;
		char list[512];
		size_t n = 0;

		while (known[i] && !streq(known[i], k))
			i++;
		if (known[i])
			continue;
		for (i = 0; known[i] && n < sizeof(list); i++)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", known[i]);
		/* true, false and null are shared values without a position of
		 * their own: point at the map that holds them. */
		return dump_error(in, json_is_boolean(v) || json_is_null(v) ? o : v, obj,
				  "unknown field \"%s\" in %s (known: %s)", k, what, list);
	}
	return 0;
}

/* A map field: 0 when absent, 1 when given as a map (whose keys are all in
 * known, unless known is NULL), else an error saying what it should be. */
static int map_given(struct dump_input *in, const json_t *m, const json_t *obj, const char *what,
		     const char *expected, const char *const *known)
{
	int r;

	if (!m || json_is_null(m))
		return 0;
	if (!json_is_object(m))
		return dump_error(in, m, obj, "%s: expected %s", what, expected);
	if (known && (r = known_fields(in, m, obj, what, known)) < 0)
		return r;
	return 1;
}

static int offering(struct dump_input *in, struct catalog *cat, const json_t *o, const json_t *obj,
		    struct offering *ret)
{
	static const char *const fields[] = { "zone", "capacityType", "price", "available", NULL };
	const char *zone = NULL, *ct = NULL;
	const json_t *price = json_object_get(o, "price"), *avail = json_object_get(o, "available");
	double pr;
	int r, z;

	if (!json_is_object(o))
		return dump_error(in, o, obj, "expected an offering");
	if ((r = known_fields(in, o, obj, "an InstanceType offering", fields)) < 0)
		return r;
	if ((r = string(in, json_object_get(o, "zone"), obj, &zone)) < 0 ||
	    (r = string(in, json_object_get(o, "capacityType"), obj, &ct)) < 0)
		return r;
	if (!zone || !ct || !price || (!streq(ct, "spot") && !streq(ct, "on-demand")))
		return dump_error(in, o, obj, "an offering needs zone, capacityType (spot or on-demand) and price");
	if (json_is_string(price)) {
		char *end;
		pr = strtod(json_string_value(price), &end);
		if (*end || end == json_string_value(price))
			pr = -1;
	} else
		pr = json_is_number(price) ? json_number_value(price) : -1;
	if (pr < 0)
		return dump_error(in, price, obj, "invalid price");
	if (avail && !json_is_null(avail) && !json_is_boolean(avail))
		return dump_error(in, avail, obj, "available: expected true or false");
	z = catalog_zone(cat, intern(cat, zone), STR_NONE);
	if (z < 0)
		return dump_error(in, o, obj, "too many zones");
	*ret = (struct offering){ (uint8_t)z, streq(ct, "spot") ? CT_SPOT : CT_ON_DEMAND,
				  !json_is_false(avail), pr };
	return 0;
}

/*
 * kubeReserved / systemReserved (cpu, memory, ephemeral-storage; pid is
 * accepted and reserves nothing schedulable) subtracted from allocatable.
 */
static int reserved(struct dump_input *in, const json_t *m, const json_t *obj, const char *what,
		    struct resources *alloc)
{
	static const char *const names[] = { "cpu", "memory", "ephemeral-storage", "pid", NULL };
	const char *k;
	const json_t *v;
	int r;

	if ((r = map_given(in, m, obj, what, "a map of resource quantities", names)) <= 0)
		return r;
	json_object_foreach((json_t *)m, k, v) {
		int64_t q = 0;
		int slot = streq(k, "cpu") ? RES_CPU : streq(k, "memory") ? RES_MEMORY :
			   streq(k, "ephemeral-storage") ? RES_EPHEMERAL_STORAGE : -1;

		if ((r = quantity(in, v, obj, slot == RES_CPU, &q)) < 0)
			return r;
		if (q < 0)
			return dump_error(in, v, obj, "%s.%s: a negative reservation", what, k);
		if (slot >= 0)
			alloc->v[slot] -= q;
	}
	return 0;
}

/* evictionHard: memory.available and nodefs.available (an amount or a share
 * of capacity) hold back allocatable; the other signals are accepted and
 * hold back nothing schedulable. */
static int eviction(struct dump_input *in, const json_t *m, const json_t *obj,
		    const struct resources *cap, struct resources *alloc)
{
	static const char *const signals[] = { "memory.available", "nodefs.available", "nodefs.inodesFree",
					       "imagefs.available", "imagefs.inodesFree", "pid.available",
					       NULL };
	const char *k;
	const json_t *v;
	int r;

	if ((r = map_given(in, m, obj, "evictionHard", "a map of signals to thresholds", signals)) <= 0)
		return r;
	json_object_foreach((json_t *)m, k, v) {
		int slot = streq(k, "memory.available") ? RES_MEMORY :
			   streq(k, "nodefs.available") ? RES_EPHEMERAL_STORAGE : -1;
		int64_t q = 0;
		double pct = -1;

		if (!json_is_string(v) || quantity_or_percent_parse(json_string_value(v), &q, &pct) < 0)
			return dump_error(in, v, obj, "evictionHard.%s: expected a quantity or a percentage", k);
		if (slot >= 0)
			alloc->v[slot] -= pct >= 0 ? (int64_t)((double)cap->v[slot] * pct / 100.0) : q;
	}
	return 0;
}

/*
 * The overhead an InstanceType gives: exactly kubeReserved + systemReserved
 * + evictionHard, with vmMemoryOverheadPercent taken off the memory, each
 * part it leaves out zero. Sets *given when it gives any of them (else
 * Karpenter's AWS defaults apply, as the shipped catalog's).
 */
static int given_overhead(struct dump_input *in, const json_t *spec, const json_t *obj, int64_t cpu,
			  int64_t mem, int64_t pods, struct resources *cap, struct resources *alloc,
			  bool *given)
{
	const json_t *kr = json_object_get(spec, "kubeReserved"), *sr = json_object_get(spec, "systemReserved");
	const json_t *eh = json_object_get(spec, "evictionHard");
	const json_t *vm = json_object_get(spec, "vmMemoryOverheadPercent");
	double vm_pct = 0;
	int r;

	*given = kr || sr || eh || vm;
	if (!*given)
		return 0;
	if (vm) {
		if (!json_is_number(vm) || json_number_value(vm) < 0 || json_number_value(vm) >= 100)
			return dump_error(in, vm, obj, "vmMemoryOverheadPercent: expected a number from 0 to 100");
		vm_pct = json_number_value(vm);
	}
	*cap = (struct resources){ { 0 } };
	cap->v[RES_CPU] = cpu;
	cap->v[RES_MEMORY] = mem - (int64_t)ceil((double)mem * vm_pct / 100.0);
	cap->v[RES_PODS] = pods;
	cap->v[RES_EPHEMERAL_STORAGE] = CATALOG_ROOT_VOLUME_BYTES;
	*alloc = *cap;
	if ((r = reserved(in, kr, obj, "kubeReserved", alloc)) < 0 ||
	    (r = reserved(in, sr, obj, "systemReserved", alloc)) < 0 ||
	    (r = eviction(in, eh, obj, cap, alloc)) < 0)
		return r;
	for (int i = 0; i <= RES_EPHEMERAL_STORAGE; i++)
		if (alloc->v[i] < 0)
			return dump_error(in, spec, obj, "the overhead is more than the instance type holds");
	return 0;
}

/* resources: the extended resources the type offers, name → count. */
static int extended_resources(struct dump_input *in, struct catalog *cat, const json_t *m,
			      const json_t *obj, int64_t gpus, struct resources *cap,
			      struct resources *alloc)
{
	const char *k;
	const json_t *v;
	int r;

	if ((r = map_given(in, m, obj, "resources", "a map of extended resource names to counts", NULL)) <= 0)
		return r;
	json_object_foreach((json_t *)m, k, v) {
		int64_t n = 0;
		int slot;

		if (!strchr(k, '/'))
			return dump_error(in, v, obj, "resources: \"%s\" is not an extended resource name "
				       "(domain/name, e.g. nvidia.com/gpu); cpu, memory and pods have "
				       "their own fields", k);
		if ((r = quantity(in, v, obj, false, &n)) < 0)
			return r;
		if (n < 0)
			return dump_error(in, v, obj, "resources.%s: a negative count", k);
		if (streq(k, "nvidia.com/gpu") && gpus > 0 && n != gpus)
			return dump_error(in, v, obj, "resources.nvidia.com/gpu (%lld) disagrees with gpuCount (%lld)",
					  (long long)n, (long long)gpus);
		slot = catalog_resource(cat, k, true);
		if (slot < 0)
			return dump_error(in, v, obj, "resources: too many extended resources");
		cap->v[slot] = alloc->v[slot] = n;
	}
	return 0;
}

static int instance_type(struct dump_input *in, struct catalog *cat, const json_t *obj)
{
	static const char *const fields[] = {
		"cpu", "memory", "pods", "arch", "gpuCount", "gpuName", "labels", "offerings", "resources",
		"kubeReserved", "systemReserved", "evictionHard", "vmMemoryOverheadPercent", NULL
	};
	bool overhead_given;
	const json_t *spec = json_object_get(obj, "spec"), *extra, *offs, *o;
	struct label labels[INSTANCE_TYPE_MAX_LABELS + 8];
	struct offering off[SCHED_MAX_ZONES * CT_N];
	struct instance_type it = { 0 };
	const char *arch = "amd64", *gpu_name = NULL, *k;
	int64_t cpu = 0, mem = 0, pods = 110, gpus = 0;
	const char *name = dump_name(obj);
	const json_t *v;
	uint32_t n = 0;
	size_t i;
	int r;

	if (!json_is_object(spec))
		return dump_error(in, spec, obj, "expected an InstanceType spec");
	if ((r = known_fields(in, spec, obj, "an InstanceType spec", fields)) < 0)
		return r;
	if ((r = quantity(in, json_object_get(spec, "cpu"), obj, true, &cpu)) < 0 ||
	    (r = quantity(in, json_object_get(spec, "memory"), obj, false, &mem)) < 0 ||
	    (r = integer(in, json_object_get(spec, "pods"), obj, &pods)) < 0 ||
	    (r = integer(in, json_object_get(spec, "gpuCount"), obj, &gpus)) < 0 ||
	    (r = string(in, json_object_get(spec, "arch"), obj, &arch)) < 0 ||
	    (r = string(in, json_object_get(spec, "gpuName"), obj, &gpu_name)) < 0)
		return r;
	if (cpu <= 0 || mem <= 0 || pods <= 0 || gpus < 0)
		return dump_error(in, spec, obj, "InstanceType \"%s\" needs positive cpu, memory and pods", name);
	it.name = intern(cat, name);
	labels[n++] = (struct label){ K_INSTANCE_TYPE, it.name };
	labels[n++] = (struct label){ K_ARCH, intern(cat, arch) };
	labels[n++] = (struct label){ K_OS, V_LINUX };
	if (gpus > 0) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%lld", (long long)gpus);
		labels[n++] = (struct label){ K_INSTANCE_GPU_COUNT, intern(cat, buf) };
		if (gpu_name)
			labels[n++] = (struct label){ K_INSTANCE_GPU_NAME, intern(cat, gpu_name) };
	}
	extra = json_object_get(spec, "labels");
	if (extra && !json_is_object(extra))
		return dump_error(in, extra, obj, "labels: expected a map of strings");
	if (json_object_size(extra) > INSTANCE_TYPE_MAX_LABELS)
		return dump_error(in, extra, obj, "too many labels");
	json_object_foreach((json_t *)extra, k, v) {
		if (!json_is_string(v))
			return dump_error(in, v, obj, "expected a string");
		labels[n++] = (struct label){ intern(cat, k), intern(cat, json_string_value(v)) };
	}
	for (uint32_t l = 0; l < n; l++)
		if (labels[l].key == STR_NONE || labels[l].value == STR_NONE)
			return -ENOMEM;
	it.labels = labels;
	it.n_labels = n;
	if ((r = given_overhead(in, spec, obj, cpu, mem, pods, &it.capacity, &it.allocatable,
				&overhead_given)) < 0)
		return r;
	/* Karpenter's AWS defaults: cpu rounds up to whole vCPUs; memory is
	 * the advertised size. */
	if (!overhead_given)
		catalog_capacity((cpu + 999) / 1000, mem >> 20, pods, cat->vm_memory_overhead,
				 &it.capacity, &it.allocatable);
	it.capacity.v[RES_NVIDIA_GPU] = it.allocatable.v[RES_NVIDIA_GPU] = gpus;
	if ((r = extended_resources(in, cat, json_object_get(spec, "resources"), obj, gpus, &it.capacity,
				    &it.allocatable)) < 0)
		return r;
	offs = json_object_get(spec, "offerings");
	if (offs && !json_is_array(offs))
		return dump_error(in, offs, obj, "expected a list of offerings");
	json_array_foreach(offs, i, o) {
		if (it.n_offerings >= ARRAY_SIZE(off))
			return dump_error(in, o, obj, "too many offerings");
		if ((r = offering(in, cat, o, obj, &off[it.n_offerings++])) < 0)
			return r;
	}
	it.offerings = off;
	return catalog_add_type(cat, &it);
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

struct zone_scan {
	char region[64];
	char zones[SCHED_MAX_ZONES][72]; /* a region and a letter, or a zone name */
	size_t n;
};

/* Every zone-like string value, in document order: the first names the
 * region; later zones of that region beyond a, b, c are added. */
static void scan_zones(const json_t *v, struct zone_scan *zs)
{
	const char *s, *k;
	const json_t *e;
	size_t i, rl;

	if (json_is_array(v))
		json_array_foreach(v, i, e)
			scan_zones(e, zs);
	else if (json_is_object(v))
		json_object_foreach((json_t *)v, k, e)
			scan_zones(e, zs);
	if (!(s = json_string_value(v)) || !zone_like(s, &rl) || rl >= sizeof(zs->region) ||
	    strlen(s) >= sizeof(zs->zones[0]))
		return;
	if (!zs->region[0]) {
		memcpy(zs->region, s, rl);
		zs->region[rl] = '\0';
		for (char z = 'a'; z <= 'c'; z++, zs->n++) {
			memcpy(zs->zones[zs->n], s, rl);
			zs->zones[zs->n][rl] = z;
			zs->zones[zs->n][rl + 1] = '\0';
		}
	}
	if (rl != strlen(zs->region) || strncmp(s, zs->region, rl) || zs->n >= SCHED_MAX_ZONES)
		return;
	for (i = 0; i < zs->n; i++)
		if (streq(zs->zones[i], s))
			return;
	snprintf(zs->zones[zs->n++], sizeof(zs->zones[0]), "%s", s);
}

/* The shipped catalog, in the region the input talks about (us-east-1 if
 * it names no zone), zones a/b/c plus any other of that region it names. */
static int shipped_catalog(struct dump_input *in, struct catalog *cat, char *err, size_t errlen)
{
	struct zone_scan zs = { .n = 0 };
	const char *zones[SCHED_MAX_ZONES];
	char path[4096];
	size_t i;
	int r;

	for (i = 0; i < in->n_given; i++)
		scan_zones(json_array_get(in->objects, i), &zs);
	if (!zs.region[0]) {
		json_t *fallback = json_string("us-east-1a");
		if (!fallback)
			return -ENOMEM;
		scan_zones(fallback, &zs);
		json_decref(fallback);
	}
	for (i = 0; i < zs.n; i++)
		zones[i] = zs.zones[i];
	if (in->opts && in->opts->catalog_path)
		snprintf(path, sizeof(path), "%s", in->opts->catalog_path);
	else
		catalog_default_path(path, sizeof(path));
	r = catalog_load_tsv(cat, path, zs.region, zones, zs.n);
	if (r < 0)
		snprintf(err, errlen, "Failed to load the instance-type catalog %s: %s", path, strerror(-r));
	return r;
}

int dump_fill_catalog(struct catalog *cat, void *userdata, char *err, size_t errlen)
{
	struct dump_input *in = userdata;
	const json_t *obj;
	bool own = false;
	size_t i;
	int r = 0;

	json_array_foreach(in->objects, i, obj) {
		const char *api = json_string_value(json_object_get(obj, "apiVersion"));
		if (i >= in->n_given || r < 0)
			break;
		if (streq(dump_kind(obj), "InstanceType") && api && strstr(api, "kanna.dev")) {
			own = true;
			r = instance_type(in, cat, obj);
		}
	}
	if (r >= 0 && !own)
		r = in->opts && in->opts->fake_types ? catalog_add_fake_types(cat, in->opts->fake_types) :
						       shipped_catalog(in, cat, err, errlen);
	return r; /* cluster_from_state() applies the NodeOverlays and finalizes */
}
