/*
 * The instance-type catalog in its wire form (proto_instance_type inside a
 * PROTO_MSG_CATALOG). kanna-launcher builds its live catalog with the
 * solver's own loader and overhead model and converts it with
 * catalog_to_proto(); kanna-scheduler plans from what the launcher
 * published with catalog_load_proto(). One pair of functions, so that the
 * two sides cannot disagree on labels, capacity, allocatable or prices.
 */
#ifndef KANNA_SCHEDULER_CATALOG_PROTO_H
#define KANNA_SCHEDULER_CATALOG_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"
#include "model/catalog.h"

/*
 * The types of cat (only those with at least one offering when
 * offered_only), in catalog order, as proto structs allocated in a
 * (strings copied: cat may go away). capacity and allocatable list cpu,
 * memory, pods and ephemeral-storage always and other resources when
 * non-zero. Returns 0 or -ENOMEM.
 */
int catalog_to_proto(const struct catalog *cat, struct arena *a, bool offered_only,
		     struct proto_instance_type **ret, uint32_t *n_ret);

/*
 * Adds the message's types to cat (interned into cat->st, which must hold
 * the well-known ids; call catalog_finalize() afterwards). A type is bare
 * metal when its karpenter.k8s.aws/instance-size contains "metal" (true of
 * every EC2 type); reserved offerings are skipped (the solver plans spot
 * and on-demand only). Returns 0, or -EINVAL with err naming the type and
 * the fault (no types, duplicate name or label, no cpu or memory, negative
 * resource, bad price, unnamed zone), -E2BIG (more zones than
 * SCHED_MAX_ZONES or types than the catalog holds), -ENOMEM.
 */
int catalog_load_proto(struct catalog *cat, const struct proto_catalog *m, char *err,
		       size_t errlen);

/* Whether m would load: builds and finalizes a throwaway catalog. Same
 * returns as catalog_load_proto(). */
int catalog_proto_check(const struct proto_catalog *m, char *err, size_t errlen);

#endif
