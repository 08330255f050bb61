/* SPDX-License-Identifier: MIT */
/* Unit tests for launcher/fleet-request.c: ClientToken derivation and the
 * CreateFleet overrides list. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/fleet-request.h"

#define UID "3f2b8c1e-9a4d-4e6f-8b2a-1c0d5e7f9a3b"

Test(launcher_fleet, client_token_is_stable_for_same_uid_and_attempt) {
        char a[FLEET_CLIENT_TOKEN_MAX + 1], b[FLEET_CLIENT_TOKEN_MAX + 1];

        cr_assert_eq(fleet_client_token(UID, 0, a, sizeof(a)), 0);
        cr_assert_eq(fleet_client_token(UID, 0, b, sizeof(b)), 0);
        cr_assert_str_eq(a, b);
        cr_assert_str_eq(a, "kanna-" UID "-0");
}

Test(launcher_fleet, client_token_changes_with_attempt_and_fits_ec2_limit) {
        char a[FLEET_CLIENT_TOKEN_MAX + 1], b[FLEET_CLIENT_TOKEN_MAX + 1];

        cr_assert_eq(fleet_client_token(UID, 0, a, sizeof(a)), 0);
        cr_assert_eq(fleet_client_token(UID, 4294967295u, b, sizeof(b)), 0);
        cr_assert_str_neq(a, b);
        cr_assert_leq(strlen(b), FLEET_CLIENT_TOKEN_MAX);
}

Test(launcher_fleet, client_token_rejects_malformed_uid) {
        char buf[FLEET_CLIENT_TOKEN_MAX + 1];

        cr_assert_eq(fleet_client_token("", 0, buf, sizeof(buf)), -EINVAL);
        cr_assert_eq(fleet_client_token(NULL, 0, buf, sizeof(buf)), -EINVAL);
        cr_assert_eq(fleet_client_token("3f2b8c1e-9a4d-4e6f-8b2a-1c0d5e7f9a3z", 0, buf, sizeof(buf)), -EINVAL);
        cr_assert_eq(fleet_client_token(UID, 0, buf, 10), -ENOBUFS);
}

Test(launcher_fleet, overrides_are_types_times_subnets_in_allowed_zones) {
        const char *types[] = { "m5.large", "m5.xlarge" };
        const fleet_subnet subnets[] = {
                { "subnet-a", "us-west-2a" }, { "subnet-b", "us-west-2b" }, { "subnet-c", "us-west-2c" },
        };
        const char *zones[] = { "us-west-2a", "us-west-2c" };
        fleet_override *o = NULL;
        size_t n = 0;

        cr_assert_eq(fleet_overrides_build(types, 2, subnets, 3, zones, 2, &o, &n), 0);
        cr_assert_eq(n, 4);
        cr_assert_str_eq(o[0].instance_type, "m5.large");
        cr_assert_str_eq(o[0].subnet_id, "subnet-a");
        cr_assert_str_eq(o[1].subnet_id, "subnet-c");
        cr_assert_str_eq(o[3].instance_type, "m5.xlarge");
        cr_assert_str_eq(o[3].zone, "us-west-2c");
        free(o);
}

Test(launcher_fleet, overrides_without_zone_requirement_use_every_subnet) {
        const char *types[] = { "c5.2xlarge" };
        const fleet_subnet subnets[] = { { "subnet-a", "us-west-2a" }, { "subnet-b", "us-west-2b" } };
        fleet_override *o = NULL;
        size_t n = 0;

        cr_assert_eq(fleet_overrides_build(types, 1, subnets, 2, NULL, 0, &o, &n), 0);
        cr_assert_eq(n, 2);
        free(o);
}

Test(launcher_fleet, overrides_fail_when_no_subnet_is_in_an_allowed_zone) {
        const char *types[] = { "m5.large" };
        const fleet_subnet subnets[] = { { "subnet-b", "us-west-2b" } };
        const char *zones[] = { "us-west-2a" };
        fleet_override *o = NULL;
        size_t n = 0;

        cr_assert_eq(fleet_overrides_build(types, 1, subnets, 1, zones, 1, &o, &n), -ENOENT);
        cr_assert_null(o);
        cr_assert_eq(fleet_overrides_build(types, 0, subnets, 1, zones, 1, &o, &n), -ENOENT);
}
