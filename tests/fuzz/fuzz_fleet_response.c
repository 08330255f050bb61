/* SPDX-License-Identifier: MIT */
/* libFuzzer target for launcher/fleet-response.c: any CreateFleet response
 * body must parse or be rejected, never crash or read out of bounds. */
#include <stddef.h>
#include <stdint.h>

#include "launcher/fleet-response.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fleet_result r;

        if (fleet_response_parse((const char *) data, size, &r) == 0)
                fleet_result_done(&r);
        return 0;
}
