/*
 * Node classes: karpenter.k8s.aws/v1 and v1beta1 EC2NodeClass, and the
 * Karpenter 0.x forms converted into the same model — v1alpha1
 * AWSNodeTemplate and the inline `provider` of a v1alpha5 Provisioner,
 * whose map selectors ({"karpenter.sh/discovery": "x"}, "aws-ids": "a,b")
 * become selector terms. Also what the launcher resolved (status).
 * spec.userData leaves as its SHA-256 only (user_data_sha256): the launcher
 * alone needs the text and GETs it (launcher/nodeclass-launch.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/quantity.h"
#include "decode/decode.h"

static int selector_terms(struct decoder *d, const json_t *arr, const char *where,
			  struct proto_selector_term **ret, uint32_t *n)
{
	const json_t *e;
	char at[256];
	size_t i;
	int r;

	r = decode_list(d, arr, where, PROTO_MAX_SELECTOR_TERMS, "terms", sizeof(**ret), (void **)ret);
	*n = 0;
	if (r <= 0)
		return r;
	json_array_foreach(arr, i, e) {
		struct proto_selector_term *t = &(*ret)[i];
		decode_path(at, sizeof(at), "%s[%zu]", where, i);
		if ((r = decode_kv(d, json_object_get(e, "tags"), at, PROTO_MAX_LABELS, PROTO_MAX_VALUE_LEN, &t->tags, &t->n_tags)) < 0 ||
		    (r = decode_string(d, e, "id", at, &t->id)) < 0 ||
		    (r = decode_string(d, e, "name", at, &t->name)) < 0 ||
		    (r = decode_string(d, e, "alias", at, &t->alias)) < 0 ||
		    (r = decode_string(d, e, "owner", at, &t->owner)) < 0 ||
		    (r = decode_string(d, e, "ssmParameter", at, &t->ssm_parameter)) < 0)
			return r;
		if (!t->n_tags && !t->id && !t->name && !t->alias && !t->ssm_parameter)
			return decode_fail(d, "%s: a term needs tags, id, name, alias or ssmParameter",
					   at);
	}
	*n = (uint32_t)json_array_size(arr);
	return 0;
}

/* The comma-separated values of map[key] (absent: none), spaces around
 * each trimmed, appended to list at *n. */
static int split_values(struct decoder *d, const json_t *map, const char *key, const char *where,
			char **list, size_t *n)
{
	const char *p = json_string_value(json_object_get(map, key));

	while (p && *p) {
		size_t len = strcspn(p, ",");
		const char *v = p;

		p += len;
		if (*p == ',')
			p++;
		while (len && *v == ' ')
			v++, len--;
		while (len && v[len - 1] == ' ')
			len--;
		if (!len)
			continue;
		if (*n == PROTO_MAX_SELECTOR_TERMS)
			return decode_fail(d, "%s.%s: more than %u values", where, key,
					   PROTO_MAX_SELECTOR_TERMS);
		if (!(list[(*n)++] = arena_strndup(d->arena, v, len)))
			return -ENOMEM;
	}
	return 0;
}

/*
 * v1alpha1 map selector → terms. Subnets and security groups: "aws-ids"
 * (or its alias "aws::ids", as upstream's conversion reads it) gives one
 * term per id, each with the remaining keys as its tags (without ids, one
 * tags term), "aws::name" a name term ("*" means the tag merely exists, as
 * the old webhook had it).
 * AMIs as upstream's conversion to v1beta1 (NewAMISelectorTerms) and the
 * v0.31 DescribeImages it replaced (getFiltersAndOwners): "aws-ids" or its
 * alias "aws::ids", "aws::name" and "aws::owners" (comma-separated) give a
 * term for each owner × id × name, each with the remaining keys as tags;
 * a term without owner or id is searched among self's and Amazon's images
 * (launcher/nodeclass-ec2.c).
 */
static int map_selector(struct decoder *d, const json_t *map, const char *where, bool ami,
			struct proto_selector_term **ret, uint32_t *n)
{
	static const char *const special[] = { "aws-ids", "aws::ids", "aws::name", "aws::owners" };
	char *ids[PROTO_MAX_SELECTOR_TERMS + 1] = { NULL }, *names[PROTO_MAX_SELECTOR_TERMS + 1] = { NULL },
	     *owners[PROTO_MAX_SELECTOR_TERMS + 1] = { NULL };
	size_t n_ids = 0, n_names = 0, n_owners = 0;
	struct proto_kv *tags = NULL;
	uint32_t n_tags = 0, k = 0;
	json_t *rest;
	int r;

	*ret = NULL;
	*n = 0;
	if (!map || json_is_null(map))
		return 0;
	if (!json_is_object(map))
		return decode_fail(d, "%s: expected a map", where);
	*ret = arena_calloc(d->arena, PROTO_MAX_SELECTOR_TERMS + 1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	if ((r = split_values(d, map, "aws-ids", where, ids, &n_ids)) < 0 ||
	    (r = split_values(d, map, "aws::ids", where, ids, &n_ids)) < 0 ||
	    (ami && (r = split_values(d, map, "aws::owners", where, owners, &n_owners)) < 0))
		return r;
	if (ami)
		r = split_values(d, map, "aws::name", where, names, &n_names);
	else if (json_string_value(json_object_get(map, "aws::name")) &&
		 !(names[n_names++] = arena_strdup(d->arena, json_string_value(json_object_get(map, "aws::name")))))
		r = -ENOMEM;
	if (r < 0)
		return r;
	rest = json_deep_copy(map);
	if (!rest)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(special); i++)
		json_object_del(rest, special[i]);
	r = json_object_size(rest) ? decode_kv(d, rest, where, PROTO_MAX_LABELS, PROTO_MAX_VALUE_LEN, &tags, &n_tags) : 0;
	json_decref(rest);
	if (r < 0)
		return r;
	if (ami && !n_owners && !n_ids && !n_names && !n_tags)
		return 0; /* {}: no selector, the family's default AMIs */
	if (ami) {
		/* The product, with "" (none) standing in for an empty list. */
		size_t no = n_owners ?: 1, ni = n_ids ?: 1, nn = n_names ?: 1;

		if (no * ni * nn > PROTO_MAX_SELECTOR_TERMS)
			return decode_fail(d, "%s: %zu owners × %zu ids × %zu names make more than %u terms",
					   where, no, ni, nn, PROTO_MAX_SELECTOR_TERMS);
		for (size_t o = 0; o < no; o++)
			for (size_t i = 0; i < ni; i++)
				for (size_t m = 0; m < nn; m++, k++) {
					(*ret)[k] = (struct proto_selector_term){
						.owner = owners[o], .id = ids[i], .name = names[m],
						.tags = tags, .n_tags = n_tags,
					};
				}
		*n = k;
		return 0;
	}
	/* Each id AND the tags (v0.32's NewSubnetSelectorTerms and
	 * NewSecurityGroupSelectorTerms, pkg/utils/nodeclass/nodeclass.go:
	 * one term per id, each with every other key as its tags). */
	for (size_t i = 0; i < n_ids && k < PROTO_MAX_SELECTOR_TERMS; i++)
		(*ret)[k++] = (struct proto_selector_term){ .id = ids[i], .tags = tags, .n_tags = n_tags };
	if (n_names && k < PROTO_MAX_SELECTOR_TERMS)
		(*ret)[k++].name = names[0];
	if (n_tags && !n_ids && k < PROTO_MAX_SELECTOR_TERMS)
		(*ret)[k++] = (struct proto_selector_term){ .tags = tags, .n_tags = n_tags };
	*n = k;
	return 0;
}

static int block_devices(struct decoder *d, const json_t *arr, struct proto_nodeclass *nc)
{
	const json_t *e;
	char at[128];
	size_t i;
	int r;

	if (!json_is_array(arr))
		return 0;
	if (json_array_size(arr) > PROTO_MAX_BLOCK_DEVICES)
		return decode_fail(d, "spec.blockDeviceMappings: more than %u", PROTO_MAX_BLOCK_DEVICES);
	nc->block_devices = arena_calloc(d->arena, json_array_size(arr) + 1, sizeof(*nc->block_devices));
	if (!nc->block_devices)
		return -ENOMEM;
	json_array_foreach(arr, i, e) {
		struct proto_block_device *b = &nc->block_devices[i];
		const json_t *ebs = json_object_get(e, "ebs");
		const char *size = json_string_value(json_object_get(ebs, "volumeSize"));

		decode_path(at, sizeof(at), "spec.blockDeviceMappings[%zu]", i);
		if ((r = decode_string(d, e, "deviceName", at, &b->device_name)) < 0)
			return r;
		if (!b->device_name)
			return decode_fail(d, "%s.deviceName: is required", at);
		decode_path(at, sizeof(at), "spec.blockDeviceMappings[%zu].ebs", i);
		if ((r = decode_string(d, ebs, "volumeType", at, &b->volume_type)) < 0 ||
		    (r = decode_string(d, ebs, "kmsKeyID", at, &b->kms_key_id)) < 0 ||
		    (r = decode_string(d, ebs, "snapshotID", at, &b->snapshot_id)) < 0)
			return r;
		if (size && quantity_parse(size, false, &b->volume_size_bytes) < 0)
			return decode_fail(d, "%s.volumeSize: '%s' is not a quantity", at, size);
		b->iops = (int32_t)json_integer_value(json_object_get(ebs, "iops"));
		b->throughput = (int32_t)json_integer_value(json_object_get(ebs, "throughput"));
		b->encrypted = json_is_true(json_object_get(ebs, "encrypted"));
		b->delete_on_termination = !json_is_false(json_object_get(ebs, "deleteOnTermination"));
		b->root_volume = json_is_true(json_object_get(e, "rootVolume"));
	}
	nc->n_block_devices = (uint32_t)json_array_size(arr);
	return 0;
}

static int metadata_options(struct decoder *d, const json_t *o, uint8_t source_api,
			    struct proto_metadata_options *m)
{
	int r;

	/* Karpenter's defaults: IMDSv2 required, IPv6 off, hop limit 1 in v1;
	 * 2 in v1beta1 and v1alpha1 (the AWSNodeTemplate and v1beta1
	 * EC2NodeClass webhooks defaulted httpPutResponseHopLimit to 2). */
	*m = (struct proto_metadata_options){
		.http_put_response_hop_limit = source_api == PROTO_API_V1 ? 1 : 2,
	};
	if ((r = decode_string(d, o, "httpEndpoint", "spec.metadataOptions", &m->http_endpoint)) < 0 ||
	    (r = decode_string(d, o, "httpProtocolIPv6", "spec.metadataOptions",
			       &m->http_protocol_ipv6)) < 0 ||
	    (r = decode_string(d, o, "httpTokens", "spec.metadataOptions", &m->http_tokens)) < 0)
		return r;
	if (json_is_integer(json_object_get(o, "httpPutResponseHopLimit")))
		m->http_put_response_hop_limit =
			(int32_t)json_integer_value(json_object_get(o, "httpPutResponseHopLimit"));
	if (!m->http_endpoint && !(m->http_endpoint = arena_strdup(d->arena, "enabled")))
		return -ENOMEM;
	if (!m->http_tokens && !(m->http_tokens = arena_strdup(d->arena, "required")))
		return -ENOMEM;
	if (!m->http_protocol_ipv6 && !(m->http_protocol_ipv6 = arena_strdup(d->arena, "disabled")))
		return -ENOMEM;
	return 0;
}

static int resolved_list(struct decoder *d, const json_t *arr, const char *where,
			 struct proto_resolved **ret, uint32_t *n)
{
	const json_t *e;
	char at[128];
	size_t i;
	uint32_t k = 0;
	int r;

	*ret = NULL;
	*n = 0;
	if (!json_is_array(arr))
		return 0;
	*ret = arena_calloc(d->arena, MIN(json_array_size(arr), PROTO_MAX_RESOLVED) + 1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	json_array_foreach(arr, i, e) {
		struct proto_resolved *x = &(*ret)[k];
		if (k == PROTO_MAX_RESOLVED)
			break;
		decode_path(at, sizeof(at), "%s[%zu]", where, i);
		if ((r = decode_string(d, e, "id", at, &x->id)) < 0 ||
		    (r = decode_string(d, e, "name", at, &x->name)) < 0 ||
		    (r = decode_string(d, e, "zone", at, &x->zone)) < 0 ||
		    (r = decode_string(d, e, "zoneID", at, &x->zone_id)) < 0 ||
		    (r = decode_requirements(d, json_object_get(e, "requirements"), at,
					     &x->requirements, &x->n_requirements)) < 0)
			return r;
		if (x->id)
			k++;
	}
	*n = k;
	return 0;
}

/*
 * Fields of Karpenter's node classes that kanna does not implement. Each
 * would change the instances (their network, storage, CPU, kubelet), so a
 * class using one is refused visibly — the launcher's ValidationSucceeded
 * condition names the field and no NodeClaim is launched for it — never
 * launched with the field dropped. Paths are under spec (blockDeviceMappings
 * items and kubelet are checked by their own lists).
 */
static const char *const unsupported_spec_fields[] = {
	"networkInterfaces", "connectionTracking",
	"instanceStorePolicy", "capacityReservationSelectorTerms", "placementGroupSelector",
	"cpuOptions", "ipPrefixCount", "context",
	/* v1alpha1 (and the v1alpha5 provider): a launch template of the
	 * user's; kanna builds its own (launcher/nodeclass-template.c). */
	"launchTemplate",
};
static const char *const unsupported_ebs_fields[] = { "volumeInitializationRate" };

static void note_unsupported(FILE *f, unsigned *n, const char *path)
{
	fprintf(f, "%s%s", (*n)++ ? ", " : "", path);
}

static bool kubelet_key_known(const char *key)
{
	for (size_t k = 0; k < decode_kubelet_n_fields; k++)
		if (streq(key, decode_kubelet_fields[k]))
			return true;
	for (size_t k = 0; k < decode_kubelet_n_unsupported_fields; k++)
		if (streq(key, decode_kubelet_unsupported_fields[k]))
			return true;
	return false;
}

/* "spec.a is not supported by kanna" / "spec.a, spec.b are not supported
 * by kanna", or NULL: every field the spec sets that kanna does not honour. */
static int unsupported_fields(struct decoder *d, const json_t *spec, const char *prefix, char **ret)
{
	const json_t *kubelet = json_object_get(spec, "kubelet"), *e;
	char *text = NULL;
	size_t len = 0, i;
	unsigned n = 0;
	FILE *f;
	int r = 0;

	*ret = NULL;
	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	for (size_t k = 0; k < ARRAY_SIZE(unsupported_spec_fields); k++)
		if (json_object_get(spec, unsupported_spec_fields[k])) {
			char at[128];

			decode_path(at, sizeof(at), "%s.%s", prefix, unsupported_spec_fields[k]);
			note_unsupported(f, &n, at);
		}
	json_array_foreach(json_object_get(spec, "blockDeviceMappings"), i, e)
		for (size_t k = 0; k < ARRAY_SIZE(unsupported_ebs_fields); k++)
			if (json_object_get(json_object_get(e, "ebs"), unsupported_ebs_fields[k])) {
				char at[128];

				decode_path(at, sizeof(at), "%s.blockDeviceMappings[%zu].ebs.%s", prefix, i,
					    unsupported_ebs_fields[k]);
				note_unsupported(f, &n, at);
			}
	for (size_t k = 0; k < decode_kubelet_n_unsupported_fields; k++)
		if (json_object_get(kubelet, decode_kubelet_unsupported_fields[k])) {
			char at[128];

			decode_path(at, sizeof(at), "%s.kubelet.%s", prefix,
				    decode_kubelet_unsupported_fields[k]);
			note_unsupported(f, &n, at);
		}
	/* v1's kubelet is an open map (any KubeletConfiguration key): a key
	 * kanna neither reads nor lists above is refused too, by name. */
	if (json_is_object(kubelet)) {
		const char *key;
		const json_t *v;
		char at[128];

		json_object_foreach((json_t *)kubelet, key, v) {
			if (kubelet_key_known(key))
				continue;
			decode_path(at, sizeof(at), "%s.kubelet.%s", prefix, key);
			note_unsupported(f, &n, at);
		}
	}
	if (n)
		fprintf(f, " %s not supported by kanna", n == 1 ? "is" : "are");
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	if (n) {
		if (strlen(text) > PROTO_MAX_TEXT_LEN)
			text[PROTO_MAX_TEXT_LEN] = '\0';
		if (!(*ret = arena_strdup(d->arena, text)))
			r = -ENOMEM;
	}
	free(text);
	return r;
}

/* Fields common to every form: amiFamily, role/profile, tags, userData… */
static int nodeclass_common(struct decoder *d, const json_t *spec, struct proto_nodeclass *nc)
{
	int r;

	if ((r = decode_string(d, spec, "amiFamily", "spec", &nc->ami_family)) < 0 ||
	    (r = decode_string(d, spec, "role", "spec", &nc->role)) < 0 ||
	    (r = decode_string(d, spec, "instanceProfile", "spec", &nc->instance_profile)) < 0 ||
	    (r = decode_kv(d, json_object_get(spec, "tags"), "spec.tags", PROTO_MAX_LABELS, PROTO_MAX_VALUE_LEN, &nc->tags, &nc->n_tags)) < 0 ||
	    (r = decode_string(d, spec, "userData", "spec", &nc->user_data)) < 0 ||
	    (r = block_devices(d, json_object_get(spec, "blockDeviceMappings"), nc)) < 0 ||
	    (r = metadata_options(d, json_object_get(spec, "metadataOptions"), nc->source_api,
				  &nc->metadata_options)) < 0 ||
	    (r = decode_kubelet(d, json_object_get(spec, "kubelet"), "spec.kubelet", &nc->kubelet)) < 0)
		return r;
	if (nc->user_data && strlen(nc->user_data) > PROTO_MAX_USER_DATA_LEN)
		return decode_fail(d, "spec.userData: longer than EC2's %u bytes", PROTO_MAX_USER_DATA_LEN);
	nc->detailed_monitoring = json_is_true(json_object_get(spec, "detailedMonitoring"));
	if (json_is_boolean(json_object_get(spec, "associatePublicIPAddress")))
		nc->associate_public_ip_address =
			json_is_true(json_object_get(spec, "associatePublicIPAddress")) ? PROTO_COND_TRUE
											 : PROTO_COND_FALSE;
	return 0;
}

/* After nodeclass_hash (which covers the text): the state feed every
 * replica subscribes to carries the hex SHA-256 of spec.userData, not the
 * text; the arena's copy is wiped. */
static int user_data_to_digest(struct decoder *d, struct proto_nodeclass *nc)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char *hex;

	if (!nc->user_data)
		return 0;
	if (!EVP_Digest(nc->user_data, strlen(nc->user_data), md, &n, EVP_sha256(), NULL))
		return decode_fail(d, "spec.userData: SHA-256 failed");
	hex = arena_alloc_raw(d->arena, 2 * n + 1);
	if (!hex)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	nc->user_data_sha256 = hex;
	explicit_bzero(nc->user_data, strlen(nc->user_data));
	nc->user_data = NULL;
	return 0;
}

int decode_nodeclass(struct decoder *d, const json_t *obj, struct proto_nodeclass *nc)
{
	const char *api = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const json_t *spec = json_object_get(obj, "spec"), *status = json_object_get(obj, "status");
	const json_t *c;
	bool provisioner = streq_ptr(kind, "Provisioner");
	bool legacy = provisioner || streq_ptr(kind, "AWSNodeTemplate");
	struct decoded_meta m;
	size_t i;
	int r;

	*nc = (struct proto_nodeclass){ 0 };
	if ((r = decode_metadata(d, obj, kind ? kind : "EC2NodeClass", false, &m)) < 0)
		return r;
	nc->name = m.name;
	nc->uid = m.uid;
	nc->resource_version = m.resource_version;
	if (provisioner)
		spec = json_object_get(spec, "provider");
	if (!json_is_object(spec)) {
		r = decode_fail(d, provisioner ? "spec.provider is missing" : "spec is missing");
		goto fail;
	}
	nc->source_api = legacy ? PROTO_API_V1ALPHA5 :
			 streq_ptr(api, "karpenter.k8s.aws/v1beta1") ? PROTO_API_V1BETA1 : PROTO_API_V1;
	if ((r = nodeclass_common(d, spec, nc)) < 0 ||
	    (r = unsupported_fields(d, spec, provisioner ? "spec.provider" : "spec",
				    &nc->unsupported)) < 0)
		goto fail;
	if (legacy) {
		if ((r = map_selector(d, json_object_get(spec, "subnetSelector"), "spec.subnetSelector",
				      false, &nc->subnet_selector_terms, &nc->n_subnet_selector_terms)) < 0 ||
		    (r = map_selector(d, json_object_get(spec, "securityGroupSelector"),
				      "spec.securityGroupSelector", false, &nc->security_group_selector_terms,
				      &nc->n_security_group_selector_terms)) < 0 ||
		    (r = map_selector(d, json_object_get(spec, "amiSelector"), "spec.amiSelector", true,
				      &nc->ami_selector_terms, &nc->n_ami_selector_terms)) < 0)
			goto fail;
		/* 0.x defaulted to Amazon Linux 2. */
		if (!nc->ami_family && !(nc->ami_family = arena_strdup(d->arena, "AL2"))) {
			r = -ENOMEM;
			goto fail;
		}
	} else {
		if ((r = selector_terms(d, json_object_get(spec, "subnetSelectorTerms"),
					"spec.subnetSelectorTerms", &nc->subnet_selector_terms,
					&nc->n_subnet_selector_terms)) < 0 ||
		    (r = selector_terms(d, json_object_get(spec, "securityGroupSelectorTerms"),
					"spec.securityGroupSelectorTerms",
					&nc->security_group_selector_terms,
					&nc->n_security_group_selector_terms)) < 0 ||
		    (r = selector_terms(d, json_object_get(spec, "amiSelectorTerms"),
					"spec.amiSelectorTerms", &nc->ami_selector_terms,
					&nc->n_ami_selector_terms)) < 0)
			goto fail;
	}
	if (!nc->n_subnet_selector_terms || !nc->n_security_group_selector_terms) {
		r = decode_fail(d, "spec: subnet and security group selectors are required");
		goto fail;
	}
	if ((r = resolved_list(d, json_object_get(status, "subnets"), "status.subnets",
			       &nc->status_subnets, &nc->n_status_subnets)) < 0 ||
	    (r = resolved_list(d, json_object_get(status, "securityGroups"), "status.securityGroups",
			       &nc->status_security_groups, &nc->n_status_security_groups)) < 0 ||
	    (r = resolved_list(d, json_object_get(status, "amis"), "status.amis", &nc->status_amis,
			       &nc->n_status_amis)) < 0 ||
	    (r = decode_string(d, status, "instanceProfile", "status", &nc->status_instance_profile)) < 0)
		goto fail;
	nc->ready = PROTO_COND_UNKNOWN;
	json_array_foreach(json_object_get(status, "conditions"), i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), "Ready")) {
			nc->ready = (uint8_t)decode_condition_status(
				json_string_value(json_object_get(c, "status")));
			if ((r = decode_string(d, c, "message", "status.conditions", &nc->ready_reason)) < 0)
				goto fail;
		}
	if ((r = decode_nodeclass_hash(d, nc)) < 0 || (r = user_data_to_digest(d, nc)) < 0)
		goto fail;
	return 0;
fail:
	return decode_prefix(d, kind ? kind : "EC2NodeClass", NULL, m.name, r);
}
