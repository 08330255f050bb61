/* SPDX-License-Identifier: MIT */
/* libFuzzer target for reaper/interruption-message.c: any SQS message body
 * must parse or be rejected as malformed, never crash, leak or read out of
 * bounds; what parses names at most the bounded number of instances. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "reaper/interruption-message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct interruption_message m;
        char why[INTERRUPTION_WHY_MAX];
        int k = interruption_message_parse((const char *) data, size, &m, why, sizeof(why));

        if (k == 0) {
                assert(m.n_instance_ids <= INTERRUPTION_MESSAGE_MAX_INSTANCES);
                assert(m.kind < INTERRUPTION_KIND_MAX);
                (void) interruption_kind_name(m.kind);
                (void) interruption_notice_for(m.kind);
                interruption_message_done(&m);
        } else {
                assert(k == -EBADMSG || k == -ENOMEM);
                assert(m.n_instance_ids == 0 && !m.instance_ids);
        }
        return 0;
}
