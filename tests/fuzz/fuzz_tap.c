/*
 * Fuzz target: any bytes as a tap message through kanna-tap's formatter
 * (header parser, proto decoder, JSON builder), its readable line and its
 * field filters (tools/tap-text.c, tools/tap-filter.c). The input up to the first
 * '\n' is frame 0 (the header) and the rest the payload; the same bytes
 * also go in as a one-frame message and with an empty routing frame.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tap-filter.h"
#include "tools/tap-format.h"
#include "tools/tap-text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void format(struct proto_decoder *decoder, const struct tap_frame *frames, size_t n)
{
	json_t *obj = NULL;
	if (tap_message_to_json(decoder, "fuzz", frames, n, 0, 0, &obj) == 0) {
		char *s = json_dumps(obj, JSON_COMPACT), *text = NULL;
		if (!s || !json_object_get(obj, "type"))
			abort(); /* every message, however broken, gets a line with a type */
		if (tap_format_text(obj, &text) < 0 || !text)
			abort(); /* and a readable one */
		struct tap_filter f = { 0 };
		if (tap_patterns_add(&f.pods, "*/*") == 0 && tap_patterns_add(&f.nodeclaims, "*") == 0 &&
		    tap_patterns_add(&f.nodepools, "d*") == 0)
			(void)tap_filter_match(&f, "fuzz", obj);
		tap_filter_done(&f);
		free(text);
		free(s);
		json_decref(obj);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t head = nl ? (size_t)(nl - data) : size;
	size_t rest = nl ? size - head - 1 : 0;
	struct tap_frame two[] = { { data, head }, { nl ? nl + 1 : data + size, rest } };
	struct tap_frame three[] = { two[0], { data, 0 }, two[1] };
	struct tap_frame one[] = { { data, size } };

	struct proto_decoder *decoder = proto_decoder_new();

	if (!decoder)
		return 0;
	format(decoder, two, 2);
	format(decoder, three, 3);
	format(decoder, one, 1);
	proto_decoder_free(decoder);
	return 0;
}
