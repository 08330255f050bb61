/* SPDX-License-Identifier: MIT */
/* libFuzzer target for launcher/fleet-response.c: any CreateFleet response
 * body must parse or be rejected, never crash or read out of bounds. */
#include <stddef.h>
#include <stdint.h>

#include "launcher/fleet-response.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Subnets named "subnet-a…" are in us-west-2a; the others are unknown. */
static const char *zone_of(const char *subnet_id, void *userdata) {
        (void) userdata;
        return subnet_id[0] == 's' && subnet_id[1] == 'u' ? "us-west-2a" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fleet_result r;

        if (fleet_response_parse((const char *) data, size, &r) == 0) {
                (void) fleet_result_zones(&r, zone_of, NULL);
                fleet_result_done(&r);
        }
        return 0;
}
