/*
 * Namespaces: only their labels matter to kanna, because pod (anti-)affinity
 * terms select the namespaces they count by namespaceSelector.
 */
#include "decode/decode.h"

int decode_namespace(struct decoder *d, const json_t *obj, struct proto_namespace *ns)
{
	struct decoded_meta m;
	int r;

	*ns = (struct proto_namespace){ 0 };
	if ((r = decode_metadata(d, obj, "Namespace", false, &m)) < 0)
		return r;
	ns->name = m.name;
	ns->uid = m.uid;
	ns->resource_version = m.resource_version;
	r = decode_kv(d, m.labels, "metadata.labels", PROTO_MAX_LABELS, PROTO_MAX_LABEL_VALUE_LEN, &ns->labels, &ns->n_labels);
	return r < 0 ? decode_prefix(d, "namespace", NULL, m.name, r) : 0;
}
