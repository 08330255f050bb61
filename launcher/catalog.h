/*
 * The launcher's live instance-type catalog: starts from the shipped table
 * (data/instance-types.tsv, the same one kanna-scheduler loads) and is
 * refreshed from EC2 (DescribeInstanceTypes, DescribeInstanceTypeOfferings,
 * DescribeSpotPriceHistory; on-demand prices from the shipped table). Each
 * refresh bumps the generation and is published to the schedulers as a
 * PROTO_MSG_CATALOG message, which replaces their shipped table.
 */
#ifndef KANNA_LAUNCHER_CATALOG_H
#define KANNA_LAUNCHER_CATALOG_H

#include <stdint.h>

#include "proto/proto.h"

struct loop;
struct aws_client;
struct metrics_registry;

struct launcher_catalog_options {
	const char *region;
	const char *shipped_path;  /* NULL: the installed instance-types.tsv */
	uint64_t refresh_usec;     /* 0: 12 hours for types, 5 minutes for spot prices */
	double vm_memory_overhead_percent; /* VM_MEMORY_OVERHEAD_PERCENT, 0.075 */
	/* Called after each successful refresh (and once after the shipped
	 * table is loaded) so that the owner publishes launcher_catalog_msg(). */
	void (*changed)(void *userdata);
	void *userdata;
};

struct launcher_catalog;

/* Loads the shipped table synchronously (error: -errno, logged with the
 * path and line) and, when aws is not NULL, starts periodic refreshes. */
int launcher_catalog_new(struct loop *loop, struct aws_client *aws, struct metrics_registry *metrics,
			 const struct launcher_catalog_options *opts, struct launcher_catalog **ret);
void launcher_catalog_free(struct launcher_catalog *c);

/* The type by name (labels = its well-known labels: arch, os,
 * karpenter.k8s.aws/instance-*; capacity and allocatable after the
 * overhead model), or NULL. Valid until the next refresh. */
const struct proto_instance_type *launcher_catalog_find(const struct launcher_catalog *c,
							const char *name);
uint64_t launcher_catalog_generation(const struct launcher_catalog *c);

/* Fills m (proto_msg_init'ed by the caller as PROTO_MSG_CATALOG) with
 * pointers into the catalog; valid until the next refresh. */
void launcher_catalog_msg(const struct launcher_catalog *c, struct proto_msg *m);

#endif
