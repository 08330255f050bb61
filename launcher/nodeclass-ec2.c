/*
 * EC2NodeClass selector terms as EC2 Describe* requests and the readers of
 * their answers (subnets with zone and zone id, security groups with name,
 * images with architecture and creation date), AMI aliases as the EKS
 * public SSM parameter names Karpenter reads, and the instance profile
 * name. Pure; nodeclass.c runs the requests. Terms are ORed (one request
 * per term), fields of one term ANDed (filters of one request).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/aws.h"
#include "common/util.h"
#include "launcher/nodeclass-ec2.h"

/* tags → Filter tag:K=V, or tag-key=K for the "*" wildcard (Karpenter). */
static int add_tag_filters(struct aws_query *q, const struct proto_selector_term *t, unsigned *idx)
{
	int r = 0;

	for (uint32_t i = 0; r >= 0 && i < t->n_tags; i++) {
		const char *v = t->tags[i].value ?: "";
		char name[PROTO_MAX_KEY_LEN + 8];

		if (streq(v, "*") || !*v) {
			const char *key = t->tags[i].key;

			r = aws_query_add_filter(q, ++*idx, "tag-key", &key, 1);
		} else {
			snprintf(name, sizeof(name), "tag:%s", t->tags[i].key);
			r = aws_query_add_filter(q, ++*idx, name, &v, 1);
		}
	}
	return r;
}

static int term_query(const char *action, const struct proto_selector_term *t,
		      const char *id_filter, const char *name_filter, bool owner_selects,
		      struct aws_query **ret)
{
	_cleanup_(aws_query_freep) struct aws_query *q = NULL;
	unsigned idx = 0;
	int r;

	r = aws_query_new(action, EC2_API_VERSION, &q);
	if (r >= 0 && t->id && id_filter)
		r = aws_query_add_filter(q, ++idx, id_filter, (const char *const *)&t->id, 1);
	if (r >= 0 && t->name && name_filter)
		r = aws_query_add_filter(q, ++idx, name_filter, (const char *const *)&t->name, 1);
	if (r >= 0)
		r = add_tag_filters(q, t, &idx);
	/* a term that selects nothing would select everything; an AMI
	 * owner alone (v1alpha1 aws::owners) selects that owner's images */
	if (r >= 0 && idx == 0 && !(owner_selects && t->owner))
		r = -EINVAL;
	if (r < 0)
		return r;
	*ret = TAKE_PTR(q);
	return 0;
}

int nc_subnet_query(const struct proto_selector_term *t, struct aws_query **ret)
{
	return term_query("DescribeSubnets", t, "subnet-id", NULL, false, ret);
}

int nc_security_group_query(const struct proto_selector_term *t, struct aws_query **ret)
{
	return term_query("DescribeSecurityGroups", t, "group-id", "group-name", false, ret);
}

int nc_image_query(const struct proto_selector_term *t, struct aws_query **ret)
{
	_cleanup_(aws_query_freep) struct aws_query *q = NULL;
	int r;

	r = term_query("DescribeImages", t, "image-id", "name", true, &q);
	if (r < 0)
		return r;
	/* Karpenter: without an id, images of this account and of Amazon. */
	if (t->owner)
		r = aws_query_add(q, t->owner, "Owner.1");
	else if (!t->id)
		r = aws_query_add_list(q, "Owner", (const char *const[]){ "self", "amazon" }, 2);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(q);
	return 0;
}

int nc_image_ids_query(const char *const *ids, size_t n, struct aws_query **ret)
{
	_cleanup_(aws_query_freep) struct aws_query *q = NULL;
	int r;

	r = aws_query_new("DescribeImages", EC2_API_VERSION, &q);
	if (r >= 0)
		r = aws_query_add_filter(q, 1, "image-id", ids, n);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(q);
	return 0;
}

void nc_terms_describe(const struct proto_selector_term *t, size_t n, char *buf, size_t size)
{
	FILE *f = fmemopen(buf, size, "w");

	if (!f) {
		snprintf(buf, size, "(%zu terms)", n);
		return;
	}
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		const char *sep = "";

		fprintf(f, "%s{", i ? ", " : "");
		if (t[i].n_tags) {
			fputs("tags: {", f);
			for (uint32_t k = 0; k < t[i].n_tags; k++)
				fprintf(f, "%s%s: %s", k ? ", " : "", t[i].tags[k].key, t[i].tags[k].value ?: "");
			fputc('}', f);
			sep = ", ";
		}
#define FIELD(f_, name)                                                     \
		if (t[i].f_) {                                              \
			fprintf(f, "%s" name ": %s", sep, t[i].f_);        \
			sep = ", ";                                         \
		}
		FIELD(id, "id") FIELD(name, "name") FIELD(alias, "alias") FIELD(owner, "owner")
		FIELD(ssm_parameter, "ssmParameter")
#undef FIELD
		fputc('}', f);
	}
	fputc(']', f);
	fclose(f);
	/* fmemopen writes no NUL when the text filled the buffer */
	buf[size - 1] = '\0';
}

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ?: "");
}

int nc_subnets_read(const struct aws_xml_node *root, struct nc_resolved *res)
{
	const struct aws_xml_node *set = aws_xml_child(root, "subnetSet");

	if (!set)
		return -EBADMSG;
	for (const struct aws_xml_node *it = aws_xml_first(set, "item"); it; it = aws_xml_next(it)) {
		const char *id = aws_xml_text(it, "subnetId");
		bool dup = false;

		if (!id || !*id)
			return -EBADMSG;
		for (size_t i = 0; i < res->n_subnets; i++)
			dup |= streq(res->subnets[i].id, id);
		if (dup)
			continue;
		if (res->n_subnets == NC_MAX_SUBNETS)
			return -E2BIG;
		struct nc_subnet *s = &res->subnets[res->n_subnets++];
		copy(s->id, sizeof(s->id), id);
		copy(s->zone, sizeof(s->zone), aws_xml_text(it, "availabilityZone"));
		copy(s->zone_id, sizeof(s->zone_id), aws_xml_text(it, "availabilityZoneId"));
	}
	return 0;
}

int nc_security_groups_read(const struct aws_xml_node *root, struct nc_resolved *res)
{
	const struct aws_xml_node *set = aws_xml_child(root, "securityGroupInfo");

	if (!set)
		return -EBADMSG;
	for (const struct aws_xml_node *it = aws_xml_first(set, "item"); it; it = aws_xml_next(it)) {
		const char *id = aws_xml_text(it, "groupId");
		bool dup = false;

		if (!id || !*id)
			return -EBADMSG;
		for (size_t i = 0; i < res->n_groups; i++)
			dup |= streq(res->groups[i].id, id);
		if (dup)
			continue;
		if (res->n_groups == NC_MAX_SECURITY_GROUPS)
			return -E2BIG;
		struct nc_group *g = &res->groups[res->n_groups++];
		copy(g->id, sizeof(g->id), id);
		copy(g->name, sizeof(g->name), aws_xml_text(it, "groupName"));
	}
	return 0;
}

int nc_images_read(const struct aws_xml_node *root, struct nc_image *out, size_t max, size_t *n)
{
	const struct aws_xml_node *set = aws_xml_child(root, "imagesSet");

	if (!set)
		return -EBADMSG;
	for (const struct aws_xml_node *it = aws_xml_first(set, "item"); it; it = aws_xml_next(it)) {
		const char *id = aws_xml_text(it, "imageId");
		const char *arch = aws_xml_text(it, "architecture");
		const char *state = aws_xml_text(it, "imageState");
		bool dup = false;

		if (!id || !*id)
			return -EBADMSG;
		/* i386 and pending or deprecated-away images never launch a node. */
		if (!arch || (!streq(arch, "x86_64") && !streq(arch, "arm64")) ||
		    (state && !streq(state, "available")))
			continue;
		for (size_t i = 0; i < *n; i++)
			dup |= streq(out[i].id, id);
		if (dup)
			continue;
		if (*n == max)
			return -E2BIG;
		struct nc_image *im = &out[(*n)++];
		copy(im->id, sizeof(im->id), id);
		copy(im->name, sizeof(im->name), aws_xml_text(it, "name"));
		copy(im->arch, sizeof(im->arch), streq(arch, "x86_64") ? "amd64" : "arm64");
		copy(im->created, sizeof(im->created), aws_xml_text(it, "creationDate"));
	}
	return 0;
}

size_t nc_images_newest_per_arch(struct nc_image *v, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < out && !(streq(v[k].arch, v[i].arch) && v[k].variants == v[i].variants); k++)
			;
		if (k == out)
			v[out++] = v[i];
		/* newest wins; on a tie the name decides, so the choice is stable */
		else if (strcmp(v[i].created, v[k].created) > 0 ||
			 (streq(v[i].created, v[k].created) && strcmp(v[i].name, v[k].name) > 0))
			v[k] = v[i];
	}
	return out;
}

const struct nc_image *nc_image_for(const struct nc_image *v, size_t n, const char *arch,
				    unsigned variant)
{
	const struct nc_image *best = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!streq(v[i].arch, arch) || (v[i].variants != NC_VARIANTS_ANY && !(v[i].variants & variant)))
			continue;
		if (!best || strcmp(v[i].created, best->created) > 0 ||
		    (streq(v[i].created, best->created) && strcmp(v[i].name, best->name) > 0))
			best = &v[i];
	}
	return best;
}

static const struct {
	const char *name;
	unsigned bit;
} variant_names[] = {
	{ "standard", NC_VARIANT_STANDARD },
	{ "nvidia", NC_VARIANT_NVIDIA },
	{ "neuron", NC_VARIANT_NEURON },
};

const char *nc_variant_name(unsigned variant)
{
	for (size_t i = 0; i < ARRAY_SIZE(variant_names); i++)
		if (variant_names[i].bit == variant)
			return variant_names[i].name;
	return NULL;
}

unsigned nc_variant_from_name(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(variant_names); i++)
		if (streq(variant_names[i].name, name))
			return variant_names[i].bit;
	return 0;
}

int nc_alias_parse(const char *alias, struct nc_alias *ret)
{
	static const struct {
		const char *name;
		enum ami_family family;
	} families[] = {
		{ "al2", AMI_FAMILY_AL2 },
		{ "al2023", AMI_FAMILY_AL2023 },
		{ "bottlerocket", AMI_FAMILY_BOTTLEROCKET },
		{ "windows2019", AMI_FAMILY_WINDOWS2019 },
		{ "windows2022", AMI_FAMILY_WINDOWS2022 },
		{ "windows2025", AMI_FAMILY_WINDOWS2025 },
	};
	const char *at = alias ? strchr(alias, '@') : NULL;
	size_t n = at ? (size_t)(at - alias) : 0;

	if (!at || !at[1] || strlen(at + 1) >= sizeof(ret->version) || strchr(at + 1, '/'))
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(families); i++)
		if (strlen(families[i].name) == n && strncmp(alias, families[i].name, n) == 0) {
			/* "windows families may only specify version 'latest'" (the CRD) */
			if (ami_family_is_windows(families[i].family) && !streq(at + 1, "latest"))
				return -EINVAL;
			ret->family = families[i].family;
			snprintf(ret->version, sizeof(ret->version), "%s", at + 1);
			return 0;
		}
	return -EINVAL;
}

/* Appends one parameter; false when the name did not fit. */
static bool param(struct nc_alias_param *out, size_t *n, unsigned variants, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static bool param(struct nc_alias_param *out, size_t *n, unsigned variants, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(out[*n].name, sizeof(out[*n].name), fmt, ap);
	va_end(ap);
	out[*n].variants = variants;
	(*n)++;
	return k >= 0 && (size_t)k < sizeof(out[0].name);
}

/* AL2023's names, aws/karpenter-provider-aws pkg/providers/amifamily/al2023.go
 * and https://docs.aws.amazon.com/eks/latest/userguide/retrieve-ami-id.html */
static bool al2023_param(struct nc_alias_param *out, size_t *n, const struct nc_alias *a,
			 const char *k8s, const char *arch, unsigned variant)
{
	const char *v = nc_variant_name(variant);
	char pin[160];

	snprintf(pin, sizeof(pin), "amazon-eks-node-al2023-%s-%s-%s-%s", arch, v, k8s, a->version);
	return param(out, n, variant, "/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id",
		     k8s, arch, v, streq(a->version, "latest") ? "recommended" : pin);
}

int nc_alias_ssm_params(const struct nc_alias *a, const char *k8s, struct nc_alias_param out[NC_ALIAS_PARAMS_MAX])
{
	bool latest = streq(a->version, "latest"), ok = true;
	const char *br = a->version + (a->version[0] == 'v');
	size_t n = 0;
	char p[3][160];

	switch (a->family) {
	case AMI_FAMILY_AL2:
		/* the GPU image (amazon-linux-2-gpu) carries both the NVIDIA and Neuron drivers */
		snprintf(p[0], sizeof(p[0]), "amazon-eks-node-%s-%s", k8s, a->version);
		snprintf(p[1], sizeof(p[1]), "amazon-eks-arm64-node-%s-%s", k8s, a->version);
		snprintf(p[2], sizeof(p[2]), "amazon-eks-gpu-node-%s-%s", k8s, a->version);
		ok = param(out, &n, NC_VARIANT_STANDARD, "/aws/service/eks/optimized-ami/%s/amazon-linux-2/%s/image_id",
			   k8s, latest ? "recommended" : p[0]) &&
		     param(out, &n, NC_VARIANT_STANDARD, "/aws/service/eks/optimized-ami/%s/amazon-linux-2-arm64/%s/image_id",
			   k8s, latest ? "recommended" : p[1]) &&
		     param(out, &n, NC_VARIANT_NVIDIA | NC_VARIANT_NEURON,
			   "/aws/service/eks/optimized-ami/%s/amazon-linux-2-gpu/%s/image_id", k8s,
			   latest ? "recommended" : p[2]);
		break;
	case AMI_FAMILY_AL2023:
		ok = al2023_param(out, &n, a, k8s, "x86_64", NC_VARIANT_STANDARD) &&
		     al2023_param(out, &n, a, k8s, "x86_64", NC_VARIANT_NVIDIA) &&
		     al2023_param(out, &n, a, k8s, "x86_64", NC_VARIANT_NEURON) &&
		     al2023_param(out, &n, a, k8s, "arm64", NC_VARIANT_STANDARD) &&
		     al2023_param(out, &n, a, k8s, "arm64", NC_VARIANT_NVIDIA);
		break;
	case AMI_FAMILY_BOTTLEROCKET:
		/* versions are "v1.20.4" on GitHub and "1.20.4" in SSM: accept both;
		 * the x86_64 image has the Neuron driver, -nvidia the NVIDIA one */
		ok = param(out, &n, NC_VARIANT_STANDARD | NC_VARIANT_NEURON,
			   "/aws/service/bottlerocket/aws-k8s-%s/x86_64/%s/image_id", k8s, latest ? "latest" : br) &&
		     param(out, &n, NC_VARIANT_STANDARD, "/aws/service/bottlerocket/aws-k8s-%s/arm64/%s/image_id", k8s,
			   latest ? "latest" : br) &&
		     param(out, &n, NC_VARIANT_NVIDIA, "/aws/service/bottlerocket/aws-k8s-%s-nvidia/x86_64/%s/image_id",
			   k8s, latest ? "latest" : br) &&
		     param(out, &n, NC_VARIANT_NVIDIA, "/aws/service/bottlerocket/aws-k8s-%s-nvidia/arm64/%s/image_id",
			   k8s, latest ? "latest" : br);
		break;
	case AMI_FAMILY_WINDOWS2019:
	case AMI_FAMILY_WINDOWS2022:
	case AMI_FAMILY_WINDOWS2025:
		/* only Server Core, only latest (pkg/providers/amifamily/windows.go;
		 * https://docs.aws.amazon.com/eks/latest/userguide/retrieve-windows-ami-id.html) */
		ok = param(out, &n, NC_VARIANTS_ANY,
			   "/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id",
			   ami_family_name(a->family) + strlen("Windows"), k8s);
		break;
	case AMI_FAMILY_UBUNTU:
		/* v1beta1's Ubuntu default AMIs (Canonical's parameters, 20.04) */
		ok = param(out, &n, NC_VARIANTS_ANY,
			   "/aws/service/canonical/ubuntu/eks/20.04/%s/stable/current/amd64/hvm/ebs-gp2/ami-id", k8s) &&
		     param(out, &n, NC_VARIANTS_ANY,
			   "/aws/service/canonical/ubuntu/eks/20.04/%s/stable/current/arm64/hvm/ebs-gp2/ami-id", k8s);
		break;
	default:
		return 0;
	}
	return ok ? (int)n : -ENAMETOOLONG;
}

void nc_instance_profile_name(const char *cluster, const char *region, const char *nodeclass,
			      char out[NC_PROFILE_NAME_MAX + 1])
{
	uint64_t h = hash_fnv1a64_add(hash_fnv1a64(region), nodeclass);
	char suffix[24];

	snprintf(suffix, sizeof(suffix), "_%" PRIu64, h);
	/* keep the hash whole when a long cluster name must be cut */
	snprintf(out, NC_PROFILE_NAME_MAX + 1, "%.*s%s",
		 (int)(NC_PROFILE_NAME_MAX - strlen(suffix)), cluster, suffix);
}

int nc_instance_profile_role(const struct aws_xml_node *root, char *role, size_t size)
{
	const struct aws_xml_node *p = aws_xml_find(root, "GetInstanceProfileResult/InstanceProfile");
	const char *name;

	if (!p || !aws_xml_text(p, "InstanceProfileName"))
		return -EBADMSG;
	name = aws_xml_text(p, "Roles/member/RoleName");
	snprintf(role, size, "%s", name ?: "");
	return 0;
}
