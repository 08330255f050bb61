/* SPDX-License-Identifier: MIT */
/* Pure parts of a CreateFleet request: the idempotency ClientToken derived
 * from the NodeClaim UID and the overrides list (candidate instance types ×
 * subnets in the allowed zones). Called by the launcher's fleet code; must
 * never do I/O, and must derive the same token for the same NodeClaim UID and
 * attempt so that a retry after a crash never launches twice. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/fleet-request.h"

static bool uid_is_valid(const char *uid) {
        if (!uid || strlen(uid) != NODECLAIM_UID_LEN)
                return false;
        for (const char *p = uid; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
                      (*p >= 'A' && *p <= 'F') || *p == '-'))
                        return false;
        return true;
}

/* "kanna-<uid>-<attempt>": the attempt changes only when the candidate list
 * changes (after insufficient capacity), because EC2 rejects a reused token
 * with different parameters (IdempotentParameterMismatch). */
int fleet_client_token(const char *nodeclaim_uid, unsigned attempt, char *buf, size_t size) {
        int n;

        if (!uid_is_valid(nodeclaim_uid) || !buf)
                return -EINVAL;
        n = snprintf(buf, size, "kanna-%s-%u", nodeclaim_uid, attempt);
        if (n < 0 || (size_t) n >= size || n > FLEET_CLIENT_TOKEN_MAX)
                return -ENOBUFS;
        return 0;
}

static bool zone_is_allowed(const char *zone, const char *const *zones, size_t n_zones) {
        if (n_zones == 0)
                return true; /* no zone requirement: every zone is allowed */
        for (size_t i = 0; i < n_zones; i++)
                if (strcmp(zone, zones[i]) == 0)
                        return true;
        return false;
}

int fleet_overrides_build(const char *const *instance_types, size_t n_types,
                          const fleet_subnet *subnets, size_t n_subnets,
                          const char *const *allowed_zones, size_t n_zones,
                          fleet_override **ret, size_t *ret_n) {
        fleet_override *o;
        size_t n = 0;

        if (!ret || !ret_n || (n_types && !instance_types) || (n_subnets && !subnets))
                return -EINVAL;
        if (n_types == 0 || n_subnets == 0)
                return -ENOENT;
        o = calloc(n_types * n_subnets, sizeof(*o));
        if (!o)
                return -ENOMEM;
        for (size_t t = 0; t < n_types; t++)
                for (size_t s = 0; s < n_subnets; s++) {
                        if (!zone_is_allowed(subnets[s].zone, allowed_zones, n_zones))
                                continue;
                        o[n++] = (fleet_override) { instance_types[t], subnets[s].id, subnets[s].zone };
                }
        if (n == 0) {
                free(o);
                return -ENOENT; /* no subnet in an allowed zone */
        }
        *ret = o;
        *ret_n = n;
        return 0;
}
