/*
 * The pure half of EC2NodeClass resolution (nodeclass-ec2.c,
 * nodeclass-template.c, nodeclass-status.c): selector terms → EC2 Describe*
 * queries, the readers of their answers, AMI aliases → SSM parameter names,
 * the instance profile name, the launch template (name = hash of what it
 * holds, CreateLaunchTemplate request) and the EC2NodeClass status object.
 * No I/O: nodeclass.c runs the calls on the event loop.
 */
#ifndef KANNA_LAUNCHER_NODECLASS_EC2_H
#define KANNA_LAUNCHER_NODECLASS_EC2_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "launcher/userdata.h"
#include "proto/proto.h"

struct aws_query;
struct aws_xml_node;

#define EC2_API_VERSION "2016-11-15"
#define IAM_API_VERSION "2010-05-08"
/* EC2 ids are ≤ 32 characters; names of groups and images ≤ 255. */
#define NC_ID_MAX 64
#define NC_NAME_MAX 256
/* A NodeClass resolving to more than this is refused: EC2 Fleet takes at
 * most 300 overrides and a launch template 5 security groups… per ENI. */
#define NC_MAX_SUBNETS 64
#define NC_MAX_SECURITY_GROUPS 16
#define NC_MAX_IMAGES 64
/* Architectures kanna launches (Kubernetes names). */
#define NC_ARCHES 2
/* "kanna-" + 32 hex digits. */
#define NC_LAUNCH_TEMPLATE_NAME_MAX 48
/* IAM: instance profile names are at most 128 characters. */
#define NC_PROFILE_NAME_MAX 128
/* Tag every template and profile kanna creates carries (GC finds them). */
#define NC_MANAGED_BY_TAG "kanna.dev/managed-by"

struct nc_subnet {
	char id[NC_ID_MAX], zone[NC_ID_MAX], zone_id[NC_ID_MAX];
};

struct nc_group {
	char id[NC_ID_MAX], name[NC_NAME_MAX];
};

/* Variants of the EKS optimized AMIs and the instance types each serves
 * (aws/karpenter-provider-aws pkg/providers/amifamily/types.go
 * Variant.Requirements): standard — no GPU and no accelerator; nvidia —
 * karpenter.k8s.aws/instance-gpu-count exists; neuron —
 * karpenter.k8s.aws/instance-accelerator-count exists. */
enum nc_variant {
	NC_VARIANT_STANDARD = 1u << 0,
	NC_VARIANT_NVIDIA = 1u << 1,
	NC_VARIANT_NEURON = 1u << 2,
};
/* An image whose variant nobody named (amiSelectorTerms by id, name or
 * tags; Windows and Ubuntu parameters): it serves every type of its arch. */
#define NC_VARIANTS_ANY 0u

struct nc_image {
	char id[NC_ID_MAX], name[NC_NAME_MAX];
	char arch[16];    /* amd64 | arm64 */
	char created[40]; /* ISO 8601, compares as text */
	unsigned variants; /* enum nc_variant bits; NC_VARIANTS_ANY */
};

/* What one EC2NodeClass resolved to. */
struct nc_resolved {
	struct nc_subnet subnets[NC_MAX_SUBNETS];
	size_t n_subnets;
	struct nc_group groups[NC_MAX_SECURITY_GROUPS];
	size_t n_groups;
	struct nc_image images[NC_MAX_IMAGES]; /* newest per arch and variants, once chosen */
	size_t n_images;
	char windows_build[16]; /* a Windows family's build (its AMIs' os requirement), or "" */
	char instance_profile[NC_PROFILE_NAME_MAX + 1];
};

/* ---- selector terms → queries (terms are ORed: one query per term) ---- */

/* Filters of one term: tags (value "*" → tag-key), id, name; fields ANDed. */
int nc_subnet_query(const struct proto_selector_term *t, struct aws_query **ret);
int nc_security_group_query(const struct proto_selector_term *t, struct aws_query **ret);
/* amiSelectorTerms without alias/ssmParameter: id, name, tags, owner
 * (default owners: self and amazon, as Karpenter). */
int nc_image_query(const struct proto_selector_term *t, struct aws_query **ret);
/* DescribeImages of known ids (aliases and SSM parameters resolved). */
int nc_image_ids_query(const char *const *ids, size_t n, struct aws_query **ret);
/* "[{tags: {k: v}}, {id: subnet-1}]": how a user wrote the terms, for messages. */
void nc_terms_describe(const struct proto_selector_term *t, size_t n, char *buf, size_t size);

/* ---- readers (append, dedup by id; the arrays' bounds hold) ---- */
int nc_subnets_read(const struct aws_xml_node *root, struct nc_resolved *res);
int nc_security_groups_read(const struct aws_xml_node *root, struct nc_resolved *res);
/* Available images of amd64/arm64 (x86_64 → amd64) into out. */
int nc_images_read(const struct aws_xml_node *root, struct nc_image *out, size_t max, size_t *n);
/* Keeps the newest (CreationDate) image per architecture and variants. */
size_t nc_images_newest_per_arch(struct nc_image *v, size_t n);
/* The image an instance type of arch and variant (one enum nc_variant bit)
 * launches with: the newest that serves it, as Karpenter maps each type to
 * the first compatible AMI newest first; NULL when none does. */
const struct nc_image *nc_image_for(const struct nc_image *v, size_t n, const char *arch,
				    unsigned variant);
/* "standard", "nvidia", "neuron" ↔ the bit; 0 / NULL for anything else. */
const char *nc_variant_name(unsigned variant);
unsigned nc_variant_from_name(const char *name);

/* ---- AMI aliases ---- */
struct nc_alias {
	enum ami_family family;
	char version[64]; /* "latest" or a pin ("v20240807") */
};
/* "al2023@latest" → family + version; -EINVAL for families without an
 * alias (Custom, Ubuntu) and Windows pins (only "latest" exists). */
int nc_alias_parse(const char *alias, struct nc_alias *ret);

/* One public SSM parameter of an alias and the variants its image serves. */
struct nc_alias_param {
	char name[NC_NAME_MAX];
	unsigned variants;
};
/* Karpenter's per family: AL2 and AL2023 by arch and variant, Bottlerocket
 * with its -nvidia flavour, Windows Server Core EKS_Optimized, Ubuntu
 * (v1beta1) from Canonical's parameters. Kubernetes version "1.32".
 * The count written to out (≤ NC_ALIAS_PARAMS_MAX), or -ENAMETOOLONG. */
#define NC_ALIAS_PARAMS_MAX 6
int nc_alias_ssm_params(const struct nc_alias *a, const char *k8s_version,
			struct nc_alias_param out[NC_ALIAS_PARAMS_MAX]);

/* ---- instance profile ---- */
/* Karpenter's "<cluster>_<hash of region and NodeClass name>". */
void nc_instance_profile_name(const char *cluster, const char *region, const char *nodeclass,
			      char out[NC_PROFILE_NAME_MAX + 1]);
/* The role of a GetInstanceProfile answer ("" when none); -EBADMSG if not one. */
int nc_instance_profile_role(const struct aws_xml_node *root, char *role, size_t size);

/* ---- launch template ---- */
struct nc_template {
	const char *cluster_name, *nodeclass;
	const char *image_id;
	const char *user_data;       /* plain text; base64-encoded in the request */
	const struct nc_group *groups;
	size_t n_groups;
	const char *instance_profile;
	const struct proto_block_device *block_devices; /* none: the family's defaults */
	size_t n_block_devices;
	enum ami_family family;
	const struct proto_metadata_options *metadata; /* NULL/empty fields: IMDSv2 defaults */
	bool detailed_monitoring;
	uint8_t associate_public_ip; /* PROTO_COND_*: Unknown = not set, the subnet decides */
	const struct proto_kv *tags;
	size_t n_tags;
};
/* "kanna-<32 hex>" from everything the template holds; stable across runs. */
int nc_template_name(const struct nc_template *t, char out[NC_LAUNCH_TEMPLATE_NAME_MAX]);
int nc_template_create_query(const struct nc_template *t, const char *name, struct aws_query **ret);
/* Names and create times (Unix s) of a DescribeLaunchTemplates answer. */
struct nc_template_seen {
	char name[NC_NAME_MAX];
	int64_t created;
};
int nc_templates_read(const struct aws_xml_node *root, struct nc_template_seen *out, size_t max,
		      size_t *n);

/* ---- status ---- */
enum nc_condition {
	NC_COND_SUBNETS,
	NC_COND_SECURITY_GROUPS,
	NC_COND_AMIS,
	NC_COND_INSTANCE_PROFILE,
	NC_COND_VALIDATION,
	_NC_COND_MAX,
};

struct nc_condition_state {
	bool ok;
	char message[512]; /* why not, when !ok */
	char reason[48];   /* when !ok: "" → the condition's usual reason */
	int64_t since;     /* Unix ms of the last transition */
};

/* The status subresource body of a merge patch: {"status": {subnets,
 * securityGroups, amis, instanceProfile, conditions}}. ready_since: Unix ms
 * the Ready condition last changed. */
json_t *nc_status_json(const struct nc_resolved *res, const struct nc_condition_state *conds,
		       int64_t ready_since);
/* The same in the shape of the class's own version: v1 and v1beta1 as
 * above; a v1alpha1 AWSNodeTemplate's status schema has subnets {id, zone},
 * securityGroups and amis only. */
json_t *nc_status_json_for(enum proto_api_version api, const struct nc_resolved *res,
			   const struct nc_condition_state *conds, int64_t ready_since);
/* The status subresource of a class of that version and name. */
int nc_status_path(enum proto_api_version api, const char *name, char **ret);
/* Karpenter's condition type and its reason when false. */
const char *nc_condition_type(enum nc_condition c);
const char *nc_condition_false_reason(enum nc_condition c);

#endif
