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

#include <stdbool.h>
#include <stdint.h>

#include "proto/proto.h"

struct loop;
struct aws_client;
struct metrics_registry;

struct launcher_catalog_options {
	const char *region;
	const char *shipped_path;  /* NULL: the installed instance-types.tsv */
	uint64_t refresh_usec;     /* 0: 12 hours for types, 5 minutes for spot prices */
	/* Spot prices alone; 0: the smaller of refresh_usec (when set) and 5 minutes. */
	uint64_t spot_refresh_usec;
	double vm_memory_overhead_percent; /* VM_MEMORY_OVERHEAD_PERCENT, 0.075 */
	/* Called after each successful refresh (and once after the shipped
	 * table is loaded) so that the owner publishes launcher_catalog_msg(). */
	void (*changed)(void *userdata);
	void *userdata;
};

struct launcher_catalog;

/* Loads the shipped table synchronously (error: -errno, logged with the
 * path) and, when aws is not NULL, starts periodic refreshes (the
 * first at once). A failed refresh keeps the catalog as it was and is
 * retried with the next spot-price refresh. Free the catalog before the aws
 * client and without running the loop in between: a call in flight points
 * at it. metrics may be NULL. */
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

/* Starts a refresh now (types: instance types and offerings too, else spot
 * prices only); -EBUSY while one runs (it is then done next), -ENOTCONN
 * without an aws client. */
int launcher_catalog_refresh(struct launcher_catalog *c, bool types);

struct launcher_catalog_status {
	uint64_t generation;
	uint32_t n_types;
	bool refreshing;
	bool refreshed;          /* a refresh from EC2 succeeded at least once */
	int last_result;         /* of the last refresh: 0 or a negative errno */
	char last_error[512];    /* what failed ("DescribeSpotPriceHistory: …") */
	uint64_t last_types_usec; /* duration of the last successful types refresh */
	uint64_t last_spot_usec;  /* … and of the last spot-price refresh */
};
void launcher_catalog_status(const struct launcher_catalog *c, struct launcher_catalog_status *ret);

#endif
