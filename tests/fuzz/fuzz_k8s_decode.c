/*
 * Fuzz target: the watcher's Kubernetes decoders. The first byte picks the
 * kind; the rest is the object's JSON. Whatever decodes must also travel:
 * it is encoded as a state delta, decoded back by proto and must come out
 * equal, so an object the watcher would accept but could not publish (a
 * field past proto's limits) is a crash here, not a stuck replica later.
 */
#include <jansson.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "decode/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kinds[] = {
	"Pod", "Node", "NodePool", "Provisioner", "NodeClaim", "EC2NodeClass",
	"AWSNodeTemplate", "PodDisruptionBudget", "PersistentVolumeClaim",
	"PersistentVolume", "StorageClass", "DaemonSet", "Namespace",
};

static void round_trip(const char *kind, const struct proto_object *obj)
{
	struct proto_msg m = { .env = { .type = PROTO_MSG_STATE_DELTA, .seq = 1 } };
	struct proto_decoder *dec = proto_decoder_new();
	const struct proto_msg *back;
	struct proto_error err;
	msgpack_sbuffer sb;

	m.body.state_delta = (struct proto_state_delta){ .seq = 1, .op = PROTO_DELTA_UPDATE,
							 .object = *obj };
	msgpack_sbuffer_init(&sb);
	if (!dec)
		abort();
	if (proto_encode(&m, &sb, &err) < 0) {
		fprintf(stderr, "a decoded %s does not encode: %s\n", kind, err.text);
		abort();
	}
	if (proto_decode(dec, sb.data, sb.size, &back, &err) < 0) {
		fprintf(stderr, "a decoded %s does not decode back: %s\n", kind, err.text);
		abort();
	}
	m.version_major = back->version_major;
	m.version_minor = back->version_minor;
	m.env = back->env;
	if (!proto_msg_equal(&m, back)) {
		fprintf(stderr, "a decoded %s changes on the wire\n", kind);
		abort();
	}
	proto_decoder_free(dec);
	msgpack_sbuffer_destroy(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arena arena = { 0 };
	struct decoder d = { .arena = &arena };
	struct proto_object obj;
	const char *kind;
	json_t *j;

	if (size < 1)
		return 0;
	kind = kinds[data[0] % ARRAY_SIZE(kinds)];
	j = json_loadb((const char *)data + 1, size - 1, 0, NULL);
	if (j) {
		if (decode_object(&d, kind, j, &obj) == 0)
			round_trip(kind, &obj);
		json_decref(j);
	}
	arena_done(&arena);
	return 0;
}
