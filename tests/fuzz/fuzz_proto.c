/*
 * libFuzzer target for the proto decoder: any bytes either decode or are
 * rejected with an error; whatever decodes must re-encode, decode again to
 * an equal message, copy and render as JSON. Aborts on any inconsistency.
 */
#include "config.h"

#include <jansson.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct proto_msg *m)
{
	struct proto_decoder *d2 = proto_decoder_new();
	const struct proto_msg *again;
	struct proto_msg *copy;
	struct proto_error err;
	msgpack_sbuffer sbuf;
	json_t *j;

	if (!d2)
		abort();
	msgpack_sbuffer_init(&sbuf);
	if (proto_encode(m, &sbuf, &err) < 0) {
		/* Only growth (float32 re-encoded as float64) may push a frame
		 * near the limit over it. */
		if (err.code != PROTO_E_FRAME_SIZE) {
			fprintf(stderr, "re-encode failed: %s\n", err.text);
			abort();
		}
		goto out;
	}
	if (proto_decode(d2, sbuf.data, sbuf.size, &again, &err) < 0) {
		fprintf(stderr, "re-decode failed: %s\n", err.text);
		abort();
	}
	if (!proto_msg_equal(m, again))
		abort();
	copy = proto_msg_dup(m);
	if (copy && !proto_msg_equal(copy, m))
		abort();
	proto_msg_free(copy);
	j = proto_to_json(m);
	json_decref(j);
out:
	msgpack_sbuffer_destroy(&sbuf);
	proto_decoder_free(d2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_decoder *d = proto_decoder_new();
	const struct proto_msg *m;
	struct proto_error err;

	if (!d)
		abort();
	if (proto_decode(d, data, size, &m, &err) == 0)
		check(m);
	else if (err.code == PROTO_OK || err.text[0] == '\0')
		abort(); /* every rejection carries a code and a message */
	proto_decoder_free(d);
	return 0;
}
