/* SPDX-License-Identifier: MIT */
#pragma once
#include <stddef.h>

/* Sizes of EC2 identifiers and codes we keep from a CreateFleet response. */
#define FLEET_ID_MAX 64
#define FLEET_ERROR_MAX 64 /* errors kept per response (one per failed override); the rest are dropped */

typedef struct fleet_launched {
        char instance_id[FLEET_ID_MAX];
        char instance_type[FLEET_ID_MAX];
        char zone[FLEET_ID_MAX];
        char capacity_type[16];  /* "spot" or "on-demand" */
} fleet_launched;

typedef struct fleet_error {
        char code[FLEET_ID_MAX];
        char instance_type[FLEET_ID_MAX];
        char zone[FLEET_ID_MAX];
} fleet_error;

/* Instances one CreateFleet call may launch (a batch of NodeClaims). */
#define FLEET_MAX_INSTANCES 100

typedef struct fleet_result {
        int launched_ok;  /* 1 when at least one instance was launched */
        fleet_launched launched;  /* the first */
        fleet_launched all[FLEET_MAX_INSTANCES];  /* every instance, in response order */
        size_t n_launched;
        fleet_error errors[FLEET_ERROR_MAX];
        size_t n_errors;
} fleet_result;

int fleet_response_parse(const char *body, size_t len, fleet_result *ret);
