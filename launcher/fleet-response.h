/* SPDX-License-Identifier: MIT */
#pragma once
#include <stddef.h>

/* Sizes of EC2 identifiers and codes we keep from a CreateFleet response. */
#define FLEET_ID_MAX 64

/* The overrides of a reply echo the request's as sent: zone is "" when
 * the request named only the subnet (fleet_result_zones() fills it). */
typedef struct fleet_launched {
        char instance_id[FLEET_ID_MAX];
        char instance_type[FLEET_ID_MAX];
        char zone[FLEET_ID_MAX];
        char subnet_id[FLEET_ID_MAX];
        char capacity_type[16];  /* "spot" or "on-demand" */
} fleet_launched;

typedef struct fleet_error {
        char code[FLEET_ID_MAX];
        char instance_type[FLEET_ID_MAX];
        char zone[FLEET_ID_MAX];
        char subnet_id[FLEET_ID_MAX];
} fleet_error;

/* Instances one CreateFleet call may launch (a batch of NodeClaims). */
#define FLEET_MAX_INSTANCES 100

typedef struct fleet_result {
        int launched_ok;  /* 1 when at least one instance was launched */
        fleet_launched launched;  /* the first */
        fleet_launched all[FLEET_MAX_INSTANCES];  /* every instance, in response order */
        size_t n_launched;
        /* Every error of the answer: one per failed override and capacity
         * type, up to 600 for a request of 300 overrides. Each names an
         * offering to mark unavailable, so none may be dropped. */
        fleet_error *errors;
        size_t n_errors;
} fleet_result;

/* On success ret owns errors: release with fleet_result_done(). On failure
 * ret holds nothing to release. */
int fleet_response_parse(const char *body, size_t len, fleet_result *ret);
/* Fills the zone of every launched instance and error that has none from
 * its subnet, with zone_of(subnet_id) (NULL: unknown). -EBADMSG when a
 * launched instance is left without a zone (an error without one only
 * cannot mark an offering). */
int fleet_result_zones(fleet_result *r, const char *(*zone_of)(const char *subnet_id, void *userdata),
                       void *userdata);
void fleet_result_done(fleet_result *r);
