/*
 * kanna-tap --output=text: one readable line per message, from the JSON
 * object tools/tap-format.h builds:
 *   22:29:39.123456 scheduler -> plans launch_plan plan-0-3 2 nodeclaim(s):
 *     default-abc (nodepool default, 12 pods, cheapest m5.large), ...
 * (on one line): the time of day (UTC), the process, "->" for a message
 * it sent or "<-" for one it received, the socket, the type and a short
 * summary of what matters for that type. Lists are cut after
 * TAP_TEXT_MAX_ITEMS with "+N more". Pure: builds a string, no I/O.
 */
#ifndef KANNA_TOOLS_TAP_TEXT_H
#define KANNA_TOOLS_TAP_TEXT_H

#include <jansson.h>

/* Items of a list (pods, NodeClaims, candidates) named in one line: enough
 * to recognise a batch, short enough for a terminal. */
#define TAP_TEXT_MAX_ITEMS 3

/* Builds the line (no trailing newline) into *ret (free() it). Returns 0 or -ENOMEM. */
int tap_format_text(json_t *line, char **ret);

#endif
