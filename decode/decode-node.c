/*
 * Nodes, and the dispatch from an object's kind to its decoder. A Node is
 * linked to its NodeClaim by the owner reference Karpenter (and the
 * launcher) put on it at registration.
 */
#include <errno.h>
#include <stdio.h>

#include "state/state-store.h"
#include "decode/decode.h"

int decode_node(struct decoder *d, const json_t *obj, struct proto_node *n)
{
	const json_t *spec = json_object_get(obj, "spec"), *status = json_object_get(obj, "status");
	const json_t *c, *o;
	struct decoded_meta m;
	size_t i;
	int r;

	*n = (struct proto_node){ 0 };
	if ((r = decode_metadata(d, obj, "Node", false, &m)) < 0)
		return r;
	n->name = m.name;
	n->uid = m.uid;
	n->resource_version = m.resource_version;
	n->creation_time = m.creation_ms;
	n->deletion_time = m.deletion_ms;
	if ((r = decode_kv(d, m.labels, "metadata.labels", PROTO_MAX_LABELS, PROTO_MAX_LABEL_VALUE_LEN, &n->labels, &n->n_labels)) < 0 ||
	    (r = decode_taints(d, json_object_get(spec, "taints"), "spec.taints", &n->taints,
			       &n->n_taints)) < 0 ||
	    (r = decode_resources(d, json_object_get(status, "capacity"), "status.capacity",
				  &n->capacity, &n->n_capacity)) < 0 ||
	    (r = decode_resources(d, json_object_get(status, "allocatable"), "status.allocatable",
				  &n->allocatable, &n->n_allocatable)) < 0 ||
	    (r = decode_string(d, spec, "providerID", "spec", &n->provider_id)) < 0 ||
	    (r = decode_strings(d, json_path(obj, "metadata.finalizers"), "metadata.finalizers",
				&n->finalizers, &n->n_finalizers)) < 0)
		goto fail;
	if (n->n_finalizers > PROTO_MAX_FINALIZERS) {
		r = decode_fail(d, "metadata.finalizers: more than %u", PROTO_MAX_FINALIZERS);
		goto fail;
	}
	n->unschedulable = json_is_true(json_object_get(spec, "unschedulable"));
	n->do_not_disrupt = streq_ptr(json_string_value(json_object_get(m.annotations,
									ANNOTATION_DO_NOT_DISRUPT)), "true");
	n->ready = PROTO_COND_UNKNOWN;
	json_array_foreach(json_object_get(status, "conditions"), i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), "Ready"))
			n->ready = (uint8_t)decode_condition_status(
				json_string_value(json_object_get(c, "status")));
	json_array_foreach(json_path(obj, "metadata.ownerReferences"), i, o)
		if (streq_ptr(json_string_value(json_object_get(o, "kind")), "NodeClaim") &&
		    (r = decode_string(d, o, "name", "metadata.ownerReferences", &n->nodeclaim)) < 0)
			goto fail;
	return 0;
fail:
	return decode_prefix(d, "node", NULL, m.name, r);
}

/*
 * What decodes must also travel: an object proto would refuse to encode (a
 * string or list past its limit in proto/limits.h, or more than a frame
 * holds) is invalid here, with the field named, instead of failing later
 * in the publisher where nothing can be done about it.
 */
static int fits_the_wire(struct decoder *d, const struct proto_object *o)
{
	struct proto_error err;
	const char *ns, *name;
	int r = proto_object_check(o, &err);

	if (r >= 0 || r == -ENOMEM)
		return r;
	state_object_name(o, &ns, &name);
	return decode_fail(d, "%s %s%s%s: too large for kanna's wire format: %s",
			   proto_object_kind_name(o->kind), ns, *ns ? "/" : "", name, err.text);
}

int decode_object(struct decoder *d, const char *kind, const json_t *obj,
		  struct proto_object *ret)
{
	int r;

#define KIND(name, k, s, fn)                                                        \
	if (streq(kind, name)) {                                                    \
		struct proto_##s *p = arena_alloc(d->arena, sizeof(*p));            \
		if (!p)                                                             \
			return -ENOMEM;                                             \
		ret->kind = k;                                                      \
		ret->s = p;                                                         \
		r = fn(d, obj, p);                                                  \
		return r < 0 ? r : fits_the_wire(d, ret);                           \
	}
	KIND("Pod", PROTO_OBJECT_POD, pod, decode_pod)
	KIND("Node", PROTO_OBJECT_NODE, node, decode_node)
	KIND("NodePool", PROTO_OBJECT_NODEPOOL, nodepool, decode_nodepool)
	KIND("Provisioner", PROTO_OBJECT_NODEPOOL, nodepool, decode_nodepool)
	KIND("NodeClaim", PROTO_OBJECT_NODECLAIM, nodeclaim, decode_nodeclaim)
	KIND("EC2NodeClass", PROTO_OBJECT_NODECLASS, nodeclass, decode_nodeclass)
	KIND("AWSNodeTemplate", PROTO_OBJECT_NODECLASS, nodeclass, decode_nodeclass)
	KIND("PodDisruptionBudget", PROTO_OBJECT_PDB, pdb, decode_pdb)
	KIND("PersistentVolumeClaim", PROTO_OBJECT_PVC, pvc, decode_pvc)
	KIND("PersistentVolume", PROTO_OBJECT_PV, pv, decode_pv)
	KIND("StorageClass", PROTO_OBJECT_STORAGECLASS, storageclass, decode_storageclass)
	KIND("DaemonSet", PROTO_OBJECT_DAEMONSET, daemonset, decode_daemonset)
	KIND("Namespace", PROTO_OBJECT_NAMESPACE, namespace, decode_namespace)
	KIND("NodeOverlay", PROTO_OBJECT_NODEOVERLAY, nodeoverlay, decode_nodeoverlay)
#undef KIND
	return decode_fail(d, "kind %s is not one the watcher decodes", kind);
}
