/* SPDX-License-Identifier: MIT */
#pragma once
#include <stddef.h>

/* CreateFleet's ClientToken is at most 64 ASCII characters (EC2 API). */
#define FLEET_CLIENT_TOKEN_MAX 64
/* A NodeClaim UID is an RFC 4122 UUID: 36 characters. */
#define NODECLAIM_UID_LEN 36

typedef struct fleet_subnet {
        const char *id;
        const char *zone;
} fleet_subnet;

typedef struct fleet_override {
        const char *instance_type;
        const char *subnet_id;
        const char *zone;
} fleet_override;

int fleet_client_token(const char *nodeclaim_uid, unsigned attempt, char *buf, size_t size);
int fleet_overrides_build(const char *const *instance_types, size_t n_types,
                          const fleet_subnet *subnets, size_t n_subnets,
                          const char *const *allowed_zones, size_t n_zones,
                          fleet_override **ret, size_t *ret_n);
