/*
 * EC2NodeClass resolution: subnets and security groups by selector terms
 * (tags, ids, names), the AMI by alias / amiFamily (SSM public parameters)
 * or amiSelectorTerms, role → instance profile, and one launch template per
 * distinct resolved configuration (named by its hash, cached, deleted when
 * unused). Results go into the EC2NodeClass status (subnets, securityGroups,
 * amis, instanceProfile, conditions Ready / SubnetsReady / …) and are what
 * a CreateFleet call needs.
 */
#ifndef KANNA_LAUNCHER_NODECLASS_H
#define KANNA_LAUNCHER_NODECLASS_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/fleet-request.h"
#include "proto/proto.h"

struct loop;
struct aws_client;
struct kube_client;
struct kube_events;
struct metrics_registry;

struct nodeclass_resolver_options {
	const char *cluster_name;     /* for discovery defaults and tags */
	const char *cluster_endpoint; /* API server URL written into user data */
	const char *cluster_ca;       /* base64 CA bundle for user data; may be NULL */
	const char *cluster_dns;      /* may be NULL: the family's default */
	uint64_t refresh_usec;        /* re-resolution period; 0 = 5 minutes */
	const char *service_cidr;     /* AL2023's nodeadm wants it; NULL: 10.100.0.0/16 */
	const char *kubernetes_version; /* "1.32" for AMI aliases; NULL: the API server's /version */
	const char *default_instance_profile; /* v1alpha5 classes naming none; may be NULL */
};

/* What one CreateFleet LaunchTemplateConfig needs for one architecture. */
struct launch_config {
	char *launch_template_name;   /* "kanna-<hash>" */
	char *image_id;               /* resolved AMI */
	struct fleet_subnet *subnets; /* resolved subnets: id + zone */
	size_t n_subnets;
	char **security_group_ids;
	size_t n_security_groups;
};

/* Inputs of one request. nodepool supplies labels, taints, startupTaints
 * and kubelet settings for the user data; arch is "amd64" or "arm64";
 * variant the AMI variant the instance types need ("nvidia", "neuron";
 * NULL or "standard": neither a GPU nor an accelerator). */
struct launch_config_request {
	const struct proto_nodeclass *nodeclass;
	const struct proto_nodepool *nodepool;
	const char *arch;
	const char *variant;
};

/* error 0: cfg valid during the callback only. Otherwise a negative errno
 * and why ("no subnets match subnetSelectorTerms [{tags: …}]"). */
typedef void (*launch_config_done_fn)(int error, const char *why, const struct launch_config *cfg,
				      void *userdata);

struct nodeclass_resolver;

int nodeclass_resolver_new(struct loop *loop, struct aws_client *aws, struct kube_client *kube,
			   struct kube_events *events, struct metrics_registry *metrics,
			   const struct nodeclass_resolver_options *opts,
			   struct nodeclass_resolver **ret);
/* At teardown, just before its clients are freed: their calls still in
 * flight are cancelled then and call nothing back, so their records are
 * freed here. */
void nodeclass_resolver_free(struct nodeclass_resolver *r);

/* Every EC2NodeClass add/update from the replica (resolves it and writes
 * its status when the spec or the resolution changed) and delete. */
void nodeclass_resolver_observe(struct nodeclass_resolver *r, const struct proto_nodeclass *nc);
void nodeclass_resolver_forget(struct nodeclass_resolver *r, const char *name);

/* Resolves (from cache when fresh) and ensures the launch template exists.
 * done() runs exactly once, possibly before this returns. */
int nodeclass_launch_config(struct nodeclass_resolver *r, const struct launch_config_request *req,
			    launch_config_done_fn done, void *userdata);

/* CreateFleet said the template is gone (InvalidLaunchTemplateName.
 * NotFoundException): forget it, so that the next launch re-creates it. */
void nodeclass_launch_template_forget(struct nodeclass_resolver *r, const char *name);

#endif
