/*
 * EC2 user data of a launched node: the AMI family's bootstrap merged with
 * the EC2NodeClass's own userData, as Karpenter renders it —
 *   AL2           MIME multipart: the user's parts, then a shell part
 *                 running /etc/eks/bootstrap.sh with the cluster, CA,
 *                 kubelet flags (--node-labels, --register-with-taints,
 *                 --max-pods …);
 *   AL2023        MIME multipart: a nodeadm NodeConfig (cluster name,
 *                 endpoint, CA, service CIDR, kubelet config and flags),
 *                 then the user's parts (a NodeConfig or a shell script);
 *   Bottlerocket  TOML: the user's settings with [settings.kubernetes]
 *                 cluster-name, api-server, cluster-certificate, max-pods,
 *                 node-labels (merged, ours win) and node-taints (ours);
 *   Ubuntu        as AL2 (v1beta1's Ubuntu family ran the EKS bootstrap.sh);
 *   Windows*      a <powershell> block: the user's script, then
 *                 Start-EKSBootstrap.ps1 with the cluster, CA, the same
 *                 kubelet flags as AL2 (-KubeletExtraArgs) and -DNSClusterIP;
 *   Custom        the user's userData unchanged.
 * Pure functions (no I/O); the resolver (nodeclass.c) base64-encodes the
 * result into the launch template. The user's userData is outside input:
 * malformed documents are refused with a precise reason, never guessed at.
 */
#ifndef KANNA_LAUNCHER_USERDATA_H
#define KANNA_LAUNCHER_USERDATA_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/proto.h"

/* EC2 accepts at most 16 KiB of user data (before base64). */
#define USERDATA_MAX_BYTES (16 * 1024)
/* Parts of a user's MIME multipart document we accept. */
#define USERDATA_MAX_PARTS 32
/* Karpenter's MIME boundary for the documents it writes. */
#define USERDATA_BOUNDARY "//"
/* nodeadm refuses a NodeConfig without the cluster's service CIDR; EKS
 * picks 10.100.0.0/16 unless the VPC overlaps it. */
#define USERDATA_DEFAULT_SERVICE_CIDR "10.100.0.0/16"
#define USERDATA_WHY_MAX 256

enum ami_family {
	AMI_FAMILY_AL2,
	AMI_FAMILY_AL2023,
	AMI_FAMILY_BOTTLEROCKET,
	AMI_FAMILY_CUSTOM,
	AMI_FAMILY_UBUNTU, /* v1beta1 and older only: karpenter.k8s.aws/v1 dropped it */
	AMI_FAMILY_WINDOWS2019,
	AMI_FAMILY_WINDOWS2022,
	AMI_FAMILY_WINDOWS2025,
};

/* Karpenter's spelling: "AL2", "AL2023", "Bottlerocket", "Custom", "Ubuntu",
 * "Windows2019", "Windows2022", "Windows2025"; -EINVAL for anything else. */
int ami_family_from_name(const char *name, enum ami_family *ret);
const char *ami_family_name(enum ami_family f);
bool ami_family_is_windows(enum ami_family f);
/* node.kubernetes.io/windows-build of a Windows family's nodes
 * (aws/karpenter-provider-aws pkg/apis/v1/labels.go), NULL for the others. */
const char *ami_family_windows_build(enum ami_family f);

struct userdata_options {
	enum ami_family family;
	const char *cluster_name;
	const char *cluster_endpoint;
	const char *cluster_ca;    /* base64 PEM bundle; NULL: none */
	const char *cluster_dns;   /* NULL: the AMI's default */
	const char *service_cidr;  /* NULL: USERDATA_DEFAULT_SERVICE_CIDR */
	/* Node labels and taints (NodePool labels + karpenter.sh/nodepool;
	 * taints + startupTaints). Labels kubelet may not set itself are left out. */
	const struct proto_kv *labels;
	size_t n_labels;
	const struct proto_taint *taints;
	size_t n_taints;
	const struct proto_kubelet *kubelet; /* NULL: defaults */
	const char *custom;                  /* the EC2NodeClass's userData, or NULL */
};

/*
 * Renders the user data (plain text, not base64) into *ret (malloc'd).
 * -EINVAL with why filled when the custom user data is malformed for the
 * family, -E2BIG past USERDATA_MAX_BYTES, -ENOMEM.
 */
int userdata_render(const struct userdata_options *o, char **ret, char why[USERDATA_WHY_MAX]);

/* True when kubelet may register the label itself (--node-labels refuses
 * kubernetes.io / k8s.io keys other than its own well-known ones). */
bool userdata_kubelet_may_set_label(const char *key);

/* ---- pieces shared by the renderers (userdata-mime.c, userdata-toml.c) ---- */

struct mime_part {
	char *headers; /* header lines, each ending in "\n"; never NULL */
	char *content;
};

struct mime_parts {
	struct mime_part v[USERDATA_MAX_PARTS];
	size_t n;
};

/* True when text is a MIME document (starts with a MIME-Version: or
 * Content-Type: header once leading blanks are skipped). */
bool mime_is_document(const char *text);
/* Splits a multipart document ("\r\n" or "\n" line ends) into its parts,
 * appended to ret; on failure ret is as it was. */
int mime_parse(const char *text, struct mime_parts *ret, char why[USERDATA_WHY_MAX]);
void mime_parts_clear(struct mime_parts *p);
/* Frees the parts from index n on. */
void mime_parts_truncate(struct mime_parts *p, size_t n);
/* Appends one part; headers are copied, a missing final "\n" is added. */
int mime_parts_add(struct mime_parts *p, const char *headers, const char *content);
/* Writes the multipart document with boundary USERDATA_BOUNDARY. */
int mime_write(const struct mime_parts *p, char **ret);

/* --node-labels="a=b,c=d" (sorted, kubelet-settable only), or "" if none. */
int userdata_node_labels_flag(const struct userdata_options *o, char **ret);
/* The kubelet flags of AL2's --kubelet-extra-args and Windows'
 * -KubeletExtraArgs: labels, taints, max-pods, reserved, eviction; "" if none. */
int userdata_kubelet_args(const struct userdata_options *o, const char *labels, char **ret);
/* Windows: the user's script and Start-EKSBootstrap.ps1 in <powershell>. */
int windows_render(const struct userdata_options *o, char **ret);

/* Bottlerocket: merges kanna's [settings.kubernetes] into the user's TOML. */
int bottlerocket_merge(const struct userdata_options *o, const char *user_toml, char **ret,
		       char why[USERDATA_WHY_MAX]);

#endif
