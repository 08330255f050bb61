/*
 * Server-side printers for kanna-sim's built-in kinds: for each, the columns
 * and cells kube-apiserver's printers produce (pods, nodes, namespaces,
 * events, config maps, services, service accounts, claims, volumes,
 * storage classes, Deployments, ReplicaSets, StatefulSets, DaemonSets,
 * PDBs, leases, CRDs), wide columns included. Pure functions of one
 * object; k8s-table.c builds the Table around them.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "sim/k8s-printers.h"

/* Cells are built in this much room; longer text is cut, as a terminal would. */
#define PRINTER_CELL_MAX 1024

void k8s_human_age(const char *timestamp, char *buf, size_t len)
{
	struct tm tm = {};
	long s, m, h, d;

	if (!timestamp || !strptime(timestamp, "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, len, "<unknown>");
		return;
	}
	s = (long)difftime(time(NULL), timegm(&tm));
	s = s < 0 ? 0 : s;
	m = s / 60, h = s / 3600, d = s / 86400;
	if (s < 120)
		snprintf(buf, len, "%lds", s);
	else if (m < 10)
		snprintf(buf, len, "%ldm%lds", m, s % 60);
	else if (m < 180)
		snprintf(buf, len, "%ldm", m);
	else if (h < 8)
		snprintf(buf, len, "%ldh%ldm", h, m % 60);
	else if (h < 48)
		snprintf(buf, len, "%ldh", h);
	else if (h < 192)
		snprintf(buf, len, "%ldd%ldh", d, h % 24);
	else
		snprintf(buf, len, "%ldd", d);
}

/* obj at a dotted path of plain keys ("status.nodeInfo.osImage"), or NULL. */
static const json_t *at(const json_t *obj, const char *path)
{
	char key[128];

	while (obj && *path) {
		size_t n = strcspn(path, ".");

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		obj = json_object_get(obj, key);
		path += n + (path[n] == '.');
	}
	return obj;
}

static const char *str(const json_t *obj, const char *path, const char *dflt)
{
	const char *s = json_string_value(at(obj, path));

	return s && *s ? s : dflt;
}

static json_int_t num(const json_t *obj, const char *path)
{
	return json_integer_value(at(obj, path));
}

static void add_str(json_t *cells, const char *s)
{
	json_array_append_new(cells, json_string(s ? s : ""));
}

static void add_int(json_t *cells, json_int_t v)
{
	json_array_append_new(cells, json_integer(v));
}

static void add_fmt(json_t *cells, const char *fmt, ...) _printf_(2, 3);
static void add_fmt(json_t *cells, const char *fmt, ...)
{
	char buf[PRINTER_CELL_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	add_str(cells, buf);
}

static void add_name(json_t *cells, const json_t *obj)
{
	add_str(cells, str(obj, "metadata.name", ""));
}

static void add_age(json_t *cells, const json_t *obj)
{
	char age[32];

	k8s_human_age(str(obj, "metadata.creationTimestamp", NULL), age, sizeof(age));
	add_str(cells, age);
}

/* Appends text to buf (joined by sep), cut at the end of buf. */
static void join(char *buf, size_t len, const char *sep, const char *text)
{
	size_t used = strlen(buf);

	if (used + 1 < len)
		snprintf(buf + used, len - used, "%s%s", used ? sep : "", text);
}

/* Container names and images of a pod template (workload wide columns). */
static void add_containers(json_t *cells, const json_t *obj, bool images_too)
{
	char names[PRINTER_CELL_MAX] = "", images[PRINTER_CELL_MAX] = "";
	const json_t *c;
	size_t i;

	json_array_foreach(at(obj, "spec.template.spec.containers"), i, c) {
		join(names, sizeof(names), ",", str(c, "name", ""));
		join(images, sizeof(images), ",", str(c, "image", ""));
	}
	add_str(cells, names);
	if (images_too)
		add_str(cells, images);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* metav1.FormatLabelSelector: requirements sorted by key, "<none>" if empty. */
static void add_selector(json_t *cells, const json_t *sel)
{
	char buf[PRINTER_CELL_MAX] = "", *reqs[64];
	const json_t *v, *e;
	const char *k;
	size_t n = 0, i, j;

	json_object_foreach((json_t *)json_object_get(sel, "matchLabels"), k, v)
		if (n < ARRAY_SIZE(reqs) && asprintf(&reqs[n], "%s=%s", k, json_string_value(v) ?: "") >= 0)
			n++;
	json_array_foreach(json_object_get(sel, "matchExpressions"), i, e) {
		const char *op = str(e, "operator", ""), *key = str(e, "key", "");
		char values[512] = "";

		json_array_foreach(json_object_get(e, "values"), j, v)
			join(values, sizeof(values), ",", json_string_value(v) ?: "");
		if (n >= ARRAY_SIZE(reqs))
			break;
		if ((streq(op, "In") && asprintf(&reqs[n], "%s in (%s)", key, values) >= 0) ||
		    (streq(op, "NotIn") && asprintf(&reqs[n], "%s notin (%s)", key, values) >= 0) ||
		    (streq(op, "Exists") && asprintf(&reqs[n], "%s", key) >= 0) ||
		    (streq(op, "DoesNotExist") && asprintf(&reqs[n], "!%s", key) >= 0))
			n++;
	}
	qsort_safe(reqs, n, sizeof(*reqs), cmp_str);
	for (i = 0; i < n; i++) {
		join(buf, sizeof(buf), ",", reqs[i]);
		free(reqs[i]);
	}
	add_str(cells, *buf ? buf : "<none>");
}

/* labels.FormatLabels of a string map: "k=v,..." sorted, "<none>" if empty. */
static void add_labels(json_t *cells, const json_t *map)
{
	json_t *sel = json_pack("{s:O}", "matchLabels", map ? map : json_object());

	add_selector(cells, sel);
	json_decref(sel);
}

static void pod_cells(const json_t *pod, json_t *cells)
{
	const json_t *st, *g, *c;
	size_t total = json_array_size(at(pod, "spec.containers")), ready = 0, gates = 0, met = 0, i, j;
	long restarts = 0;
	const char *status = str(pod, "status.reason", NULL) ?: str(pod, "status.phase", "Unknown");

	json_array_foreach(at(pod, "status.containerStatuses"), i, st) {
		ready += json_is_true(json_object_get(st, "ready"));
		restarts += (long)num(st, "restartCount");
	}
	if (at(pod, "metadata.deletionTimestamp"))
		status = "Terminating";
	add_name(cells, pod);
	add_fmt(cells, "%zu/%zu", ready, total);
	add_str(cells, status);
	add_fmt(cells, "%ld", restarts);
	add_age(cells, pod);
	add_str(cells, str(pod, "status.podIP", "<none>"));
	add_str(cells, str(pod, "spec.nodeName", "<none>"));
	add_str(cells, str(pod, "status.nominatedNodeName", "<none>"));
	json_array_foreach(at(pod, "spec.readinessGates"), i, g) {
		gates++;
		json_array_foreach(at(pod, "status.conditions"), j, c)
			met += streq_ptr(str(c, "type", NULL), str(g, "conditionType", "")) &&
			       streq_ptr(str(c, "status", NULL), "True");
	}
	if (gates)
		add_fmt(cells, "%zu/%zu", met, gates);
	else
		add_str(cells, "<none>");
}

static const char *node_address(const json_t *node, const char *type)
{
	const json_t *a;
	size_t i;

	json_array_foreach(at(node, "status.addresses"), i, a)
		if (streq_ptr(str(a, "type", NULL), type))
			return str(a, "address", "<none>");
	return "<none>";
}

static void node_cells(const json_t *node, json_t *cells)
{
	const char *status = "Unknown", *key;
	char roles[PRINTER_CELL_MAX] = "";
	const json_t *c, *v;
	size_t i;

	json_array_foreach(at(node, "status.conditions"), i, c)
		if (streq_ptr(str(c, "type", NULL), "Ready"))
			status = streq_ptr(str(c, "status", NULL), "True") ? "Ready" : "NotReady";
	json_object_foreach((json_t *)at(node, "metadata.labels"), key, v) {
		if (strncmp(key, "node-role.kubernetes.io/", 24) == 0 && key[24])
			join(roles, sizeof(roles), ",", key + 24);
		else if (streq(key, "kubernetes.io/role") && json_string_value(v))
			join(roles, sizeof(roles), ",", json_string_value(v));
	}
	add_name(cells, node);
	add_fmt(cells, "%s%s", status, json_is_true(at(node, "spec.unschedulable")) ?
					       ",SchedulingDisabled" : "");
	add_str(cells, *roles ? roles : "<none>");
	add_age(cells, node);
	add_str(cells, str(node, "status.nodeInfo.kubeletVersion", ""));
	add_str(cells, node_address(node, "InternalIP"));
	add_str(cells, node_address(node, "ExternalIP"));
	add_str(cells, str(node, "status.nodeInfo.osImage", "<unknown>"));
	add_str(cells, str(node, "status.nodeInfo.kernelVersion", "<unknown>"));
	add_str(cells, str(node, "status.nodeInfo.containerRuntimeVersion", "<unknown>"));
}

static void deployment_cells(const json_t *d, json_t *cells)
{
	add_name(cells, d);
	add_fmt(cells, "%lld/%lld", (long long)num(d, "status.readyReplicas"),
		(long long)num(d, "spec.replicas"));
	add_int(cells, num(d, "status.updatedReplicas"));
	add_int(cells, num(d, "status.availableReplicas"));
	add_age(cells, d);
	add_containers(cells, d, true);
	add_selector(cells, at(d, "spec.selector"));
}

static void replicaset_cells(const json_t *rs, json_t *cells)
{
	add_name(cells, rs);
	add_int(cells, num(rs, "spec.replicas"));
	add_int(cells, num(rs, "status.replicas"));
	add_int(cells, num(rs, "status.readyReplicas"));
	add_age(cells, rs);
	add_containers(cells, rs, true);
	add_selector(cells, at(rs, "spec.selector"));
}

static void statefulset_cells(const json_t *set, json_t *cells)
{
	add_name(cells, set);
	add_fmt(cells, "%lld/%lld", (long long)num(set, "status.readyReplicas"),
		(long long)num(set, "spec.replicas"));
	add_age(cells, set);
	add_containers(cells, set, true);
}

static void daemonset_cells(const json_t *set, json_t *cells)
{
	add_name(cells, set);
	add_int(cells, num(set, "status.desiredNumberScheduled"));
	add_int(cells, num(set, "status.currentNumberScheduled"));
	add_int(cells, num(set, "status.numberReady"));
	add_int(cells, num(set, "status.updatedNumberScheduled"));
	add_int(cells, num(set, "status.numberAvailable"));
	add_labels(cells, at(set, "spec.template.spec.nodeSelector"));
	add_age(cells, set);
	add_containers(cells, set, true);
	add_selector(cells, at(set, "spec.selector"));
}

/* helper.GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order. */
static void add_access_modes(json_t *cells, const json_t *modes)
{
	static const char *const names[][2] = {
		{ "ReadWriteOnce", "RWO" }, { "ReadOnlyMany", "ROX" },
		{ "ReadWriteMany", "RWX" }, { "ReadWriteOncePod", "RWOP" },
	};
	char buf[64] = "";
	const json_t *m;
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		json_array_foreach(modes, j, m)
			if (streq_ptr(json_string_value(m), names[i][0])) {
				join(buf, sizeof(buf), ",", names[i][1]);
				break;
			}
	add_str(cells, buf);
}

/* The class from spec.storageClassName or the beta annotation. */
static const char *storage_class(const json_t *obj)
{
	return str(obj, "spec.storageClassName", NULL) ?:
	       json_string_value(json_object_get(at(obj, "metadata.annotations"),
						 "volume.beta.kubernetes.io/storage-class")) ?: "";
}

static void pvc_cells(const json_t *pvc, json_t *cells)
{
	bool bound = str(pvc, "spec.volumeName", NULL) != NULL;

	add_name(cells, pvc);
	add_str(cells, at(pvc, "metadata.deletionTimestamp") ? "Terminating" :
							       str(pvc, "status.phase", ""));
	add_str(cells, str(pvc, "spec.volumeName", ""));
	add_str(cells, bound ? str(pvc, "status.capacity.storage", "0") : "");
	if (bound)
		add_access_modes(cells, at(pvc, "status.accessModes"));
	else
		add_str(cells, "");
	add_str(cells, storage_class(pvc));
	add_str(cells, str(pvc, "spec.volumeAttributesClassName", "<unset>"));
	add_age(cells, pvc);
	add_str(cells, str(pvc, "spec.volumeMode", "<unset>"));
}

static void pv_cells(const json_t *pv, json_t *cells)
{
	const json_t *claim = at(pv, "spec.claimRef");

	add_name(cells, pv);
	add_str(cells, str(pv, "spec.capacity.storage", "0"));
	add_access_modes(cells, at(pv, "spec.accessModes"));
	add_str(cells, str(pv, "spec.persistentVolumeReclaimPolicy", ""));
	add_str(cells, at(pv, "metadata.deletionTimestamp") ? "Terminating" :
							      str(pv, "status.phase", ""));
	if (claim)
		add_fmt(cells, "%s/%s", str(claim, "namespace", ""), str(claim, "name", ""));
	else
		add_str(cells, "");
	add_str(cells, storage_class(pv));
	add_str(cells, str(pv, "spec.volumeAttributesClassName", "<unset>"));
	add_str(cells, str(pv, "status.reason", ""));
	add_age(cells, pv);
	add_str(cells, str(pv, "spec.volumeMode", "<unset>"));
}

static void storageclass_cells(const json_t *sc, json_t *cells)
{
	const char *def = json_string_value(json_object_get(at(sc, "metadata.annotations"),
							    "storageclass.kubernetes.io/is-default-class"));

	if (streq_ptr(def, "true"))
		add_fmt(cells, "%s (default)", str(sc, "metadata.name", ""));
	else
		add_name(cells, sc);
	add_str(cells, str(sc, "provisioner", ""));
	add_str(cells, str(sc, "reclaimPolicy", "Delete"));
	add_str(cells, str(sc, "volumeBindingMode", "Immediate"));
	json_array_append_new(cells, json_boolean(json_is_true(json_object_get(sc, "allowVolumeExpansion"))));
	add_age(cells, sc);
}

static void lease_cells(const json_t *lease, json_t *cells)
{
	add_name(cells, lease);
	add_str(cells, str(lease, "spec.holderIdentity", ""));
	add_age(cells, lease);
}

/* minAvailable / maxUnavailable: an integer or a percentage, "N/A" when unset. */
static void add_int_or_string(json_t *cells, const json_t *v)
{
	if (json_is_integer(v))
		add_fmt(cells, "%lld", (long long)json_integer_value(v));
	else
		add_str(cells, json_string_value(v) ?: "N/A");
}

static void pdb_cells(const json_t *pdb, json_t *cells)
{
	add_name(cells, pdb);
	add_int_or_string(cells, at(pdb, "spec.minAvailable"));
	add_int_or_string(cells, at(pdb, "spec.maxUnavailable"));
	add_int(cells, num(pdb, "status.disruptionsAllowed"));
	add_age(cells, pdb);
}

static void namespace_cells(const json_t *ns, json_t *cells)
{
	add_name(cells, ns);
	add_str(cells, str(ns, "status.phase", ""));
	add_age(cells, ns);
}

static void configmap_cells(const json_t *cm, json_t *cells)
{
	add_name(cells, cm);
	add_int(cells, (json_int_t)(json_object_size(json_object_get(cm, "data")) +
				    json_object_size(json_object_get(cm, "binaryData"))));
	add_age(cells, cm);
}

static void secret_cells(const json_t *secret, json_t *cells)
{
	add_name(cells, secret);
	add_str(cells, str(secret, "type", ""));
	add_int(cells, (json_int_t)json_object_size(json_object_get(secret, "data")));
	add_age(cells, secret);
}

static void serviceaccount_cells(const json_t *sa, json_t *cells)
{
	add_name(cells, sa);
	add_int(cells, (json_int_t)json_array_size(json_object_get(sa, "secrets")));
	add_age(cells, sa);
}

/* printService's EXTERNAL-IP: by type, with "<pending>" for an unready balancer. */
static void add_external_ip(json_t *cells, const json_t *svc)
{
	const char *type = str(svc, "spec.type", "ClusterIP");
	char buf[PRINTER_CELL_MAX] = "";
	const json_t *v;
	size_t i;

	json_array_foreach(at(svc, "spec.externalIPs"), i, v)
		join(buf, sizeof(buf), ",", json_string_value(v) ?: "");
	if (streq(type, "ExternalName")) {
		add_str(cells, str(svc, "spec.externalName", ""));
		return;
	}
	if (streq(type, "LoadBalancer")) {
		json_array_foreach(at(svc, "status.loadBalancer.ingress"), i, v)
			join(buf, sizeof(buf), ",", str(v, "ip", NULL) ?: str(v, "hostname", ""));
		add_str(cells, *buf ? buf : "<pending>");
		return;
	}
	add_str(cells, *buf ? buf : "<none>");
}

static void service_cells(const json_t *svc, json_t *cells)
{
	char ports[PRINTER_CELL_MAX] = "", one[128];
	const json_t *p;
	size_t i;

	json_array_foreach(at(svc, "spec.ports"), i, p) {
		if (num(p, "nodePort"))
			snprintf(one, sizeof(one), "%lld:%lld/%s", (long long)num(p, "port"),
				 (long long)num(p, "nodePort"), str(p, "protocol", "TCP"));
		else
			snprintf(one, sizeof(one), "%lld/%s", (long long)num(p, "port"),
				 str(p, "protocol", "TCP"));
		join(ports, sizeof(ports), ",", one);
	}
	add_name(cells, svc);
	add_str(cells, str(svc, "spec.type", "ClusterIP"));
	add_str(cells, str(svc, "spec.clusterIP", "<none>"));
	add_external_ip(cells, svc);
	add_str(cells, *ports ? ports : "<none>");
	add_age(cells, svc);
	add_labels(cells, at(svc, "spec.selector"));
}

/* printEvent: "5s (x3 over 2m)" once repeated; kind/name; "component, host". */
static void event_cells(const json_t *ev, json_t *cells)
{
	const char *kind = str(ev, "involvedObject.kind", ""), *host = str(ev, "source.host", NULL);
	json_int_t count = num(ev, "count");
	char first_age[32], last_age[32], object[512];
	size_t i;

	k8s_human_age(str(ev, "firstTimestamp", NULL), first_age, sizeof(first_age));
	k8s_human_age(str(ev, "lastTimestamp", NULL), last_age, sizeof(last_age));
	if (!str(ev, "lastTimestamp", NULL))
		snprintf(last_age, sizeof(last_age), "%s", first_age);
	if (count > 1)
		add_fmt(cells, "%s (x%lld over %s)", last_age, (long long)count, first_age);
	else
		add_str(cells, last_age);
	for (i = 0; kind[i] && i < 100; i++)
		object[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] - 'A' + 'a' : kind[i]);
	snprintf(object + i, sizeof(object) - i, "/%s", str(ev, "involvedObject.name", ""));
	add_str(cells, str(ev, "type", ""));
	add_str(cells, str(ev, "reason", ""));
	add_str(cells, object);
	add_str(cells, str(ev, "involvedObject.fieldPath", ""));
	add_fmt(cells, "%s%s%s", str(ev, "source.component", ""), host ? ", " : "", host ?: "");
	add_str(cells, str(ev, "message", ""));
	add_str(cells, first_age);
	add_int(cells, count);
	add_name(cells, ev);
}

/* The default table convertor, which the CRD resource itself uses. */
static void crd_cells(const json_t *crd, json_t *cells)
{
	add_name(cells, crd);
	add_str(cells, str(crd, "metadata.creationTimestamp", ""));
}

#define COLUMNS(name, ...) static const struct k8s_column name[] = { __VA_ARGS__ }
#define NAME { "Name", "string", 0 }
#define AGE { "Age", "string", 0 }
#define WIDE(n) { n, "string", 1 }

COLUMNS(pod_columns, NAME, { "Ready", "string", 0 }, { "Status", "string", 0 },
	{ "Restarts", "string", 0 }, AGE, WIDE("IP"), WIDE("Node"), WIDE("Nominated Node"),
	WIDE("Readiness Gates"));
COLUMNS(node_columns, NAME, { "Status", "string", 0 }, { "Roles", "string", 0 }, AGE,
	{ "Version", "string", 0 }, WIDE("Internal-IP"), WIDE("External-IP"), WIDE("OS-Image"),
	WIDE("Kernel-Version"), WIDE("Container-Runtime"));
COLUMNS(deployment_columns, NAME, { "Ready", "string", 0 }, { "Up-to-date", "integer", 0 },
	{ "Available", "integer", 0 }, AGE, WIDE("Containers"), WIDE("Images"), WIDE("Selector"));
COLUMNS(replicaset_columns, NAME, { "Desired", "integer", 0 }, { "Current", "integer", 0 },
	{ "Ready", "integer", 0 }, AGE, WIDE("Containers"), WIDE("Images"), WIDE("Selector"));
COLUMNS(statefulset_columns, NAME, { "Ready", "string", 0 }, AGE, WIDE("Containers"),
	WIDE("Images"));
COLUMNS(daemonset_columns, NAME, { "Desired", "integer", 0 }, { "Current", "integer", 0 },
	{ "Ready", "integer", 0 }, { "Up-to-date", "integer", 0 }, { "Available", "integer", 0 },
	{ "Node Selector", "string", 0 }, AGE, WIDE("Containers"), WIDE("Images"),
	WIDE("Selector"));
COLUMNS(pvc_columns, NAME, { "Status", "string", 0 }, { "Volume", "string", 0 },
	{ "Capacity", "string", 0 }, { "Access Modes", "string", 0 },
	{ "StorageClass", "string", 0 }, { "VolumeAttributesClass", "string", 0 }, AGE,
	WIDE("VolumeMode"));
COLUMNS(pv_columns, NAME, { "Capacity", "string", 0 }, { "Access Modes", "string", 0 },
	{ "Reclaim Policy", "string", 0 }, { "Status", "string", 0 }, { "Claim", "string", 0 },
	{ "StorageClass", "string", 0 }, { "VolumeAttributesClass", "string", 0 },
	{ "Reason", "string", 0 }, AGE, WIDE("VolumeMode"));
COLUMNS(storageclass_columns, NAME, { "Provisioner", "string", 0 },
	{ "ReclaimPolicy", "string", 0 }, { "VolumeBindingMode", "string", 0 },
	{ "AllowVolumeExpansion", "string", 0 }, AGE);
COLUMNS(lease_columns, NAME, { "Holder", "string", 0 }, AGE);
COLUMNS(pdb_columns, NAME, { "Min Available", "string", 0 }, { "Max Unavailable", "string", 0 },
	{ "Allowed Disruptions", "integer", 0 }, AGE);
COLUMNS(namespace_columns, NAME, { "Status", "string", 0 }, AGE);
COLUMNS(configmap_columns, NAME, { "Data", "string", 0 }, AGE);
/* printers.go printSecret. */
COLUMNS(secret_columns, NAME, { "Type", "string", 0 }, { "Data", "string", 0 }, AGE);
COLUMNS(serviceaccount_columns, NAME, { "Secrets", "string", 0 }, AGE);
COLUMNS(service_columns, NAME, { "Type", "string", 0 }, { "Cluster-IP", "string", 0 },
	{ "External-IP", "string", 0 }, { "Port(s)", "string", 0 }, AGE, WIDE("Selector"));
/* Upstream's Event printer: the name comes last, not first. */
COLUMNS(event_columns, { "Last Seen", "string", 0 }, { "Type", "string", 0 },
	{ "Reason", "string", 0 }, { "Object", "string", 0 }, WIDE("Subobject"), WIDE("Source"),
	{ "Message", "string", 0 }, WIDE("First Seen"), { "Count", "integer", 1 }, WIDE("Name"));
COLUMNS(crd_columns, NAME, { "Created At", "date", 0 });

#define PRINTER(group, kind, name) { group, kind, name##_columns, ARRAY_SIZE(name##_columns), name##_cells }

static const struct k8s_printer printers[] = {
	PRINTER("", "Pod", pod),
	PRINTER("", "Node", node),
	PRINTER("", "Namespace", namespace),
	PRINTER("", "Event", event),
	PRINTER("", "ConfigMap", configmap),
	PRINTER("", "Secret", secret),
	PRINTER("", "Service", service),
	PRINTER("", "ServiceAccount", serviceaccount),
	PRINTER("", "PersistentVolumeClaim", pvc),
	PRINTER("", "PersistentVolume", pv),
	PRINTER("storage.k8s.io", "StorageClass", storageclass),
	PRINTER("apps", "Deployment", deployment),
	PRINTER("apps", "ReplicaSet", replicaset),
	PRINTER("apps", "StatefulSet", statefulset),
	PRINTER("apps", "DaemonSet", daemonset),
	PRINTER("policy", "PodDisruptionBudget", pdb),
	PRINTER("coordination.k8s.io", "Lease", lease),
	PRINTER("apiextensions.k8s.io", "CustomResourceDefinition", crd),
};

const struct k8s_printer *k8s_printer_find(const struct k8s_resource *res)
{
	if (res->custom)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(printers); i++)
		if (streq(res->group, printers[i].group) && streq(res->kind, printers[i].kind))
			return &printers[i];
	return NULL;
}
