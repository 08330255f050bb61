/*
 * The static-drift hashes of a NodePool and an EC2NodeClass, computed once
 * by the decoder (decode_nodepool(), decode_nodeclass()) over the converted
 * proto struct, so v1, v1beta1 and v1alpha5 objects hash by one scheme. The
 * launcher stamps them on each NodeClaim it creates (launcher/objects.c) and
 * the reaper compares (reaper/drift.c).
 *
 * Which fields, as Karpenter hashes them:
 *  - NodePool: spec.template — metadata labels and annotations, taints,
 *    startupTaints, nodeClassRef, terminationGracePeriod and expireAfter
 *    (v1: both are template fields) and, before v1, the template's kubelet;
 *    requirements are hash:"ignore" (RequirementsDrifted covers them), and
 *    nothing outside the template (disruption, limits, weight) counts
 *    (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go, Hash() and
 *    NodeClaimTemplateSpec's tags).
 *  - EC2NodeClass: the spec less its hash:"ignore" fields — subnet,
 *    security group and AMI selector terms (dynamic drift covers them)
 *    and amiFamily, replaced by the family it resolves to (alias, else
 *    Custom) so that spelling out what an alias implies drifts nothing
 *    (aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go, Hash()).
 *
 * The scheme (ours: Karpenter's values are hashstructure FNV outputs over
 * Go values, which we cannot reproduce): every hashed field contributes its
 * proto field name and its value; fields holding their default are left
 * out (hashstructure's IgnoreZeroValue, so a new field left unset changes
 * no hash); an array or map is hashed as a multiset — each element's hash
 * avalanched and summed, with the count — so the order it was written in
 * does not matter (SlicesAsSets; maps by key); nested structs recurse over
 * all their fields. FNV-1a 64 (common/hash.h) throughout; the result is the
 * decimal uint64, as Karpenter prints its own. Bump the *_HASH_VERSION of
 * decode/decode.h whenever a hashed field is added with a value already
 * set, removed, or changes its default: NodeClaims stamped with another
 * version are then left out of static drift (never replaced en masse).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/hash.h"
#include "decode/decode.h"
#include "proto/schema.h"

static uint64_t mix_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		h = (h ^ (v & 0xff)) * HASH_FNV1A64_PRIME;
	return h;
}

/* splitmix64's finalizer: a sum of these cannot be steered by element order
 * and rarely collides the way a sum of raw FNV values would. */
static uint64_t avalanche(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t hash_struct(const struct proto_struct_desc *sd, const void *s,
			    const char *const *only);

static uint64_t multiset(uint64_t sum, uint32_t n)
{
	return mix_u64(mix_u64(HASH_FNV1A64_OFFSET, sum), n);
}

static uint64_t hash_field(const struct proto_field_desc *f, const void *s)
{
	const void *p = proto_field_ptr(f, s);
	uint64_t sum = 0, h = HASH_FNV1A64_OFFSET;
	uint32_t n;

	switch (f->kind) {
	case PROTO_KIND_BOOL:
		return mix_u64(h, *(const bool *)p);
	case PROTO_KIND_U32:
		return mix_u64(h, *(const uint32_t *)p);
	case PROTO_KIND_U64:
		return mix_u64(h, *(const uint64_t *)p);
	case PROTO_KIND_I32:
		return mix_u64(h, (uint64_t)(int64_t) * (const int32_t *)p);
	case PROTO_KIND_I64:
		return mix_u64(h, (uint64_t) * (const int64_t *)p);
	case PROTO_KIND_F64: {
		uint64_t bits;
		memcpy(&bits, p, sizeof(bits));
		return mix_u64(h, bits);
	}
	case PROTO_KIND_ENUM:
		return hash_fnv1a64_add(h, proto_enum_name(f->enumd, *(const uint8_t *)p));
	case PROTO_KIND_STR:
		return hash_fnv1a64_add(h, *(char *const *)p);
	case PROTO_KIND_STRS: {
		char *const *v = *(char **const *)p;
		n = *proto_field_count(f, s);
		for (uint32_t i = 0; i < n; i++)
			sum += avalanche(hash_fnv1a64(v[i]));
		return multiset(sum, n);
	}
	case PROTO_KIND_KV: {
		const struct proto_kv *kv = *(struct proto_kv *const *)p;
		n = *proto_field_count(f, s);
		for (uint32_t i = 0; i < n; i++)
			sum += avalanche(hash_fnv1a64_add(hash_fnv1a64_field(HASH_FNV1A64_OFFSET,
									     kv[i].key),
							  kv[i].value));
		return multiset(sum, n);
	}
	case PROTO_KIND_RES: {
		const struct proto_resource *rs = *(struct proto_resource *const *)p;
		n = *proto_field_count(f, s);
		for (uint32_t i = 0; i < n; i++)
			sum += avalanche(mix_u64(hash_fnv1a64_field(HASH_FNV1A64_OFFSET, rs[i].name),
						 (uint64_t)rs[i].value));
		return multiset(sum, n);
	}
	case PROTO_KIND_OBJ:
		return hash_struct(f->sub, p, NULL);
	case PROTO_KIND_OBJS: {
		const char *elems = *(const char *const *)p;
		n = *proto_field_count(f, s);
		for (uint32_t i = 0; i < n; i++)
			sum += avalanche(hash_struct(f->sub, elems + (size_t)i * f->sub->size, NULL));
		return multiset(sum, n);
	}
	default: /* PROTO_KIND_OBJECT: no hashed struct holds one */
		return h;
	}
}

static bool listed(const char *const *names, const char *name)
{
	for (; *names; names++)
		if (streq(*names, name))
			return true;
	return false;
}

/* The fields of s named in only (NULL-terminated; NULL: all of them). */
static uint64_t hash_struct(const struct proto_struct_desc *sd, const void *s,
			    const char *const *only)
{
	uint64_t h = hash_fnv1a64_field(HASH_FNV1A64_OFFSET, sd->name);

	for (uint32_t i = 0; i < sd->n_fields; i++) {
		const struct proto_field_desc *f = &sd->fields[i];
		if ((only && !listed(only, f->name)) || proto_field_is_default(f, s))
			continue;
		h = mix_u64(hash_fnv1a64_field(h, f->name), hash_field(f, s));
	}
	return h;
}

static int format(struct decoder *d, uint64_t h, const char *version, char **hash,
		  char **hash_version)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, h);
	*hash = arena_strdup(d->arena, buf);
	*hash_version = arena_strdup(d->arena, version);
	return *hash && *hash_version ? 0 : -ENOMEM;
}

uint64_t nodepool_hash(const struct proto_nodepool *np)
{
	static const char *const template_v1[] = {
		"labels", "annotations", "taints", "startup_taints", "nodeclass_ref", "kubelet",
		"expire_after_s", "termination_grace_period_s", NULL,
	};
	/* v1beta1 and v1alpha5 kept expiry and the grace period outside the
	 * template (spec.disruption, ttlSecondsUntilExpired): not hashed. */
	static const char *const template_before_v1[] = {
		"labels", "annotations", "taints", "startup_taints", "nodeclass_ref", "kubelet", NULL,
	};
	struct proto_nodepool c = *np;

	/* The nodeClassRef as the launcher reads it, so that writing out the
	 * defaults drifts nothing (Karpenter's issue #909 was this). */
	c.nodeclass_ref.group = np->nodeclass_ref.group ?: NODECLASS_REF_DEFAULT_GROUP;
	c.nodeclass_ref.kind = np->nodeclass_ref.kind ?: NODECLASS_REF_DEFAULT_KIND;
	return hash_struct(&proto_desc_nodepool, &c,
			   np->source_api == PROTO_API_V1 ? template_v1 : template_before_v1);
}

/* What EC2NodeClass.AMIFamily() resolves to: the field, else the family of
 * an alias term ("al2023@latest" → AL2023), else Custom. */
static const char *resolved_ami_family(const struct proto_nodeclass *nc)
{
	static const struct {
		const char *alias, *family;
	} families[] = {
		{ "al2", "AL2" }, { "al2023", "AL2023" }, { "bottlerocket", "Bottlerocket" },
		{ "windows2019", "Windows2019" }, { "windows2022", "Windows2022" },
	};

	if (nc->ami_family)
		return nc->ami_family;
	for (uint32_t i = 0; i < nc->n_ami_selector_terms; i++) {
		const char *alias = nc->ami_selector_terms[i].alias;
		size_t n = alias ? strcspn(alias, "@") : 0;
		for (size_t k = 0; n && k < ARRAY_SIZE(families); k++)
			if (strlen(families[k].alias) == n && !strncmp(alias, families[k].alias, n))
				return families[k].family;
	}
	return "Custom";
}

uint64_t nodeclass_hash(const struct proto_nodeclass *nc)
{
	static const char *const spec[] = {
		"role", "instance_profile", "tags", "user_data", "block_devices",
		"metadata_options", "kubelet", "detailed_monitoring", "associate_public_ip_address", NULL,
	};

	return mix_u64(hash_fnv1a64_field(hash_struct(&proto_desc_nodeclass, nc, spec), "ami_family"),
		       hash_fnv1a64(resolved_ami_family(nc)));
}

int decode_nodepool_hash(struct decoder *d, struct proto_nodepool *np)
{
	return format(d, nodepool_hash(np), NODEPOOL_HASH_VERSION, &np->nodepool_hash,
		      &np->nodepool_hash_version);
}

int decode_nodeclass_hash(struct decoder *d, struct proto_nodeclass *nc)
{
	return format(d, nodeclass_hash(nc), NODECLASS_HASH_VERSION, &nc->nodeclass_hash,
		      &nc->nodeclass_hash_version);
}
