/* proto: seeded round trips of every message type, and the exact error for
 * every kind of bad frame (truncated, wrong type, oversized, wrong version,
 * trailing garbage, missing field, unknown field skipped). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <jansson.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "proto/random.h"
#include "proto/schema.h"

/* Iterations per message type; sizes cycle through breadth 0..7. */
#define ROUND_TRIPS_PER_TYPE 2000

static struct proto_decoder *dec;
static msgpack_sbuffer sbuf;
static struct arena arena;

static void setup(void)
{
	dec = proto_decoder_new();
	cr_assert_not_null(dec);
	msgpack_sbuffer_init(&sbuf);
}

static void teardown(void)
{
	proto_decoder_free(dec);
	msgpack_sbuffer_destroy(&sbuf);
	arena_done(&arena);
}

TestSuite(proto, .init = setup, .fini = teardown);

/* Decoding must fail with exactly this errno, code and text. */
static void expect_error(const void *buf, size_t len, int want_r, enum proto_error_code code,
			 const char *text)
{
	const struct proto_msg *m = (void *)1;
	struct proto_error err;
	int r = proto_decode(dec, buf, len, &m, &err);

	cr_assert_eq(r, want_r, "r=%d (%s)", r, err.text);
	cr_assert_null(m);
	cr_assert_eq(err.code, code, "code %s, want %s (%s)", proto_error_code_name(err.code),
		     proto_error_code_name(code), err.text);
	if (text)
		cr_assert_str_eq(err.text, text);
}

/* Raw frames for the rejection tests: [major, minor, {type, sender}, body...]. */
static void pack_head(msgpack_packer *pk, unsigned major, unsigned type)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, major);
	msgpack_pack_uint8(pk, 0);
	msgpack_pack_map(pk, 2);
	msgpack_pack_uint8(pk, 1);
	msgpack_pack_uint8(pk, type);
	msgpack_pack_uint8(pk, 3);
	msgpack_pack_uint8(pk, PROTO_PROCESS_WATCHER);
}

static void pack_cstr(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

/* pending_pods body with one pod {1: ns, 2: <name packed by caller>, 3: uid}. */
static void pack_pending_pod_head(msgpack_packer *pk)
{
	pack_head(pk, PROTO_VERSION_MAJOR, PROTO_MSG_PENDING_PODS);
	msgpack_pack_map(pk, 1);
	msgpack_pack_uint8(pk, 4);
	msgpack_pack_array(pk, 1);
	msgpack_pack_map(pk, 3);
	msgpack_pack_uint8(pk, 1);
	pack_cstr(pk, "default");
	msgpack_pack_uint8(pk, 3);
	pack_cstr(pk, "uid-1");
	msgpack_pack_uint8(pk, 2);
}

static void encode_ok(const struct proto_msg *m)
{
	struct proto_error err;
	int r;

	msgpack_sbuffer_clear(&sbuf);
	r = proto_encode(m, &sbuf, &err);
	cr_assert_eq(r, 0, "encode %s: %s", proto_type_name(m->env.type), err.text);
}

Test(proto, schema_ids_ascend_and_fit_the_duplicate_mask)
{
	/* The decoder takes fields in id order and marks each id in a 64-bit
	 * mask; retired ids leave gaps. */
	for (unsigned i = 0; i < proto_n_structs; i++) {
		const struct proto_struct_desc *sd = proto_all_structs[i];

		for (unsigned j = 0; j < sd->n_fields; j++) {
			cr_assert_gt(sd->fields[j].id, j ? sd->fields[j - 1].id : 0, "%s.%s", sd->name,
				     sd->fields[j].name);
			cr_assert_leq(sd->fields[j].id, 64, "%s.%s", sd->name, sd->fields[j].name);
		}
	}
	cr_assert_eq(proto_n_msg_types, proto_enum_desc_msg_type.n_values);
	cr_assert_str_eq(proto_type_name(PROTO_MSG_LAUNCH_PLAN), "launch_plan");
	cr_assert_null(proto_type_name(proto_n_msg_types));
}

Test(proto, random_messages_of_every_type_round_trip_unchanged)
{
	struct proto_rng rng = { .state = 20261122 };

	for (unsigned type = 0; type < proto_n_msg_types; type++) {
		for (unsigned i = 0; i < ROUND_TRIPS_PER_TYPE; i++) {
			struct proto_msg m, *copy;
			const struct proto_msg *out;
			struct proto_error err;

			arena_reset(&arena);
			cr_assert_eq(proto_random_msg(&rng, &arena, type, i % 8, &m), 0);
			encode_ok(&m);
			cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, &err), 0,
				     "%s #%u: %s", proto_type_name(type), i, err.text);
			cr_assert(proto_msg_equal(&m, out), "%s #%u differs after decode",
				  proto_type_name(type), i);
			cr_assert_eq(out->version_major, PROTO_VERSION_MAJOR);
			copy = proto_msg_dup(out);
			cr_assert_not_null(copy);
			cr_assert(proto_msg_equal(copy, &m));
			proto_msg_free(copy);
		}
	}
}

Test(proto, every_message_type_renders_as_json_with_names)
{
	struct proto_rng rng = { .state = 7 };

	for (unsigned type = 0; type < proto_n_msg_types; type++) {
		struct proto_msg m;
		json_t *j;

		arena_reset(&arena);
		cr_assert_eq(proto_random_msg(&rng, &arena, type, 3, &m), 0);
		j = proto_to_json(&m);
		cr_assert_not_null(j);
		cr_assert_str_eq(json_string_value(json_object_get(j, "type")), proto_type_name(type));
		cr_assert(json_is_object(json_object_get(j, "body")));
		json_decref(j);
	}
}

Test(proto, hello_json_names_role_and_version)
{
	struct proto_msg m = { .env = { .type = PROTO_MSG_HELLO, .sender = PROTO_PROCESS_SCHEDULER } };
	const struct proto_msg *out;
	json_t *j;

	m.body.hello = (struct proto_hello){ .version_major = 1, .role = PROTO_PROCESS_SCHEDULER,
					     .shard = 2, .n_shards = 4 };
	encode_ok(&m);
	cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, NULL), 0);
	j = proto_to_json(out);
	{
		char want[16];
		snprintf(want, sizeof(want), "%d.%d", PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
		cr_assert_str_eq(json_string_value(json_object_get(j, "version")), want);
	}
	cr_assert_str_eq(json_string_value(json_object_get(j, "sender")), "scheduler");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "body"), "role")), "scheduler");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "body"), "n_shards")), 4);
	json_decref(j);
}

Test(proto, truncation_at_every_byte_offset_is_reported_as_truncated)
{
	struct proto_rng rng = { .state = 42 };

	for (unsigned type = 0; type < proto_n_msg_types; type++) {
		struct proto_msg m;
		char *full;
		size_t n;

		arena_reset(&arena);
		cr_assert_eq(proto_random_msg(&rng, &arena, type, 3, &m), 0);
		encode_ok(&m);
		n = sbuf.size;
		full = malloc(n);
		memcpy(full, sbuf.data, n);
		for (size_t len = 0; len < n; len++) {
			char text[PROTO_ERROR_TEXT_MAX];
			/* A copy of exactly len bytes, so ASan catches any over-read. */
			char *cut = malloc(len ? len : 1);

			memcpy(cut, full, len);
			snprintf(text, sizeof(text), "message truncated: %zu bytes end inside an object", len);
			expect_error(cut, len, -EBADMSG, PROTO_E_TRUNCATED, text);
			free(cut);
		}
		free(full);
	}
}

Test(proto, trailing_garbage_after_the_message_is_rejected)
{
	struct proto_msg m = { .env = { .type = PROTO_MSG_HEARTBEAT } };

	encode_ok(&m);
	msgpack_sbuffer_write(&sbuf, "\xc0\x01", 2);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_TRAILING,
		     "2 bytes of trailing garbage after the message");
}

Test(proto, unknown_major_version_is_refused)
{
	msgpack_packer pk;
	char want[96];

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_head(&pk, PROTO_VERSION_MAJOR + 1, PROTO_MSG_HEARTBEAT);

	msgpack_pack_map(&pk, 0);
	snprintf(want, sizeof(want), "version: protocol major %d not supported (this build speaks %d.%d)",
		 PROTO_VERSION_MAJOR + 1, PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
	expect_error(sbuf.data, sbuf.size, -EPROTONOSUPPORT, PROTO_E_VERSION, want);
}

Test(proto, a_retired_field_id_is_skipped_wherever_it_comes)
{
	msgpack_packer pk;
	const struct proto_msg *out;
	const struct proto_pod *pod;
	struct proto_error err;

	/* A pod as protocol 1 sent its labels (id 5) and node selector (id 8):
	 * both ids are retired, one before the known ids after it and one
	 * after them, with a known id (20) out of order at the end. */
	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_head(&pk, PROTO_VERSION_MAJOR, PROTO_MSG_PENDING_PODS);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_uint8(&pk, 4);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 7);
	msgpack_pack_uint8(&pk, 1);
	pack_cstr(&pk, "default");
	msgpack_pack_uint8(&pk, 2);
	pack_cstr(&pk, "web-1");
	msgpack_pack_uint8(&pk, 3);
	pack_cstr(&pk, "u1");
	msgpack_pack_uint8(&pk, 8);
	msgpack_pack_map(&pk, 1);
	pack_cstr(&pk, "intent");
	pack_cstr(&pk, "apps");
	msgpack_pack_uint8(&pk, 23);
	pack_cstr(&pk, "node-1");
	msgpack_pack_uint8(&pk, 5);
	msgpack_pack_map(&pk, 0);
	msgpack_pack_uint8(&pk, 20);
	msgpack_pack_uint8(&pk, PROTO_PHASE_RUNNING);
	cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, &err), 0, "%s", err.text);
	pod = &out->body.pending_pods.pods[0];
	cr_assert_str_eq(pod->node_name, "node-1");
	cr_assert_eq(pod->phase, PROTO_PHASE_RUNNING);
	cr_assert_eq(pod->n_template, 0);
}

Test(proto, newer_minor_version_with_unknown_fields_is_accepted)
{
	msgpack_packer pk;
	const struct proto_msg *out;
	struct proto_error err;

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint8(&pk, PROTO_VERSION_MAJOR);
	msgpack_pack_uint8(&pk, PROTO_VERSION_MINOR + 3);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint8(&pk, PROTO_MSG_HELLO);
	msgpack_pack_uint8(&pk, 3);
	msgpack_pack_uint8(&pk, PROTO_PROCESS_LAUNCHER);
	msgpack_pack_uint8(&pk, 200); /* unknown envelope field: a nested map */
	msgpack_pack_map(&pk, 1);
	pack_cstr(&pk, "x");
	msgpack_pack_array(&pk, 2);
	msgpack_pack_nil(&pk);
	msgpack_pack_double(&pk, 1.5);
	msgpack_pack_map(&pk, 4);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint8(&pk, 99); /* unknown body field */
	pack_cstr(&pk, "from the future");
	msgpack_pack_uint8(&pk, 2);
	msgpack_pack_uint8(&pk, 7);
	msgpack_pack_uint8(&pk, 3);
	msgpack_pack_uint8(&pk, PROTO_PROCESS_LAUNCHER);
	cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, &err), 0, "%s", err.text);
	cr_assert_eq(out->version_minor, PROTO_VERSION_MINOR + 3);
	cr_assert_eq(out->env.type, PROTO_MSG_HELLO);
	cr_assert_eq(out->body.hello.version_minor, 7);
	cr_assert_eq(out->body.hello.role, PROTO_PROCESS_LAUNCHER);
}

/* A peer may send a struct's fields in any order: the decoder's fast path
 * takes them in id order and must restart, not miss one, otherwise. */
Test(proto, fields_in_any_order_decode_alike)
{
	static const unsigned orders[][7] = {
		{ 7, 6, 5, 4, 3, 2, 1 }, { 2, 1, 4, 3, 6, 5, 7 }, { 7, 1, 6, 2, 5, 3, 4 },
	};
	msgpack_packer pk;
	const struct proto_msg *out;
	struct proto_error err;

	for (unsigned k = 0; k < ARRAY_SIZE(orders); k++) {
		msgpack_sbuffer_clear(&sbuf);
		msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
		msgpack_pack_array(&pk, 4);
		msgpack_pack_uint8(&pk, PROTO_VERSION_MAJOR);
		msgpack_pack_uint8(&pk, PROTO_VERSION_MINOR);
		msgpack_pack_map(&pk, 3); /* envelope: sender, unknown 9, type */
		msgpack_pack_uint8(&pk, 3);
		msgpack_pack_uint8(&pk, PROTO_PROCESS_LAUNCHER);
		msgpack_pack_uint8(&pk, 9);
		msgpack_pack_nil(&pk);
		msgpack_pack_uint8(&pk, 1);
		msgpack_pack_uint8(&pk, PROTO_MSG_HELLO);
		msgpack_pack_map(&pk, 7);
		for (unsigned i = 0; i < 7; i++) {
			unsigned id = orders[k][i];

			msgpack_pack_uint8(&pk, id);
			if (id == 3)
				msgpack_pack_uint8(&pk, PROTO_PROCESS_LAUNCHER);
			else if (id == 6)
				pack_cstr(&pk, "kanna-launcher-0");
			else
				msgpack_pack_uint32(&pk, 10 + id);
		}
		cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, &err), 0, "order %u: %s", k,
			     err.text);
		cr_assert_eq(out->env.type, PROTO_MSG_HELLO);
		cr_assert_eq(out->env.sender, PROTO_PROCESS_LAUNCHER);
		cr_assert_eq(out->body.hello.version_major, 11);
		cr_assert_eq(out->body.hello.version_minor, 12);
		cr_assert_eq(out->body.hello.role, PROTO_PROCESS_LAUNCHER);
		cr_assert_eq(out->body.hello.shard, 14);
		cr_assert_eq(out->body.hello.n_shards, 15);
		cr_assert_str_eq(out->body.hello.instance, "kanna-launcher-0");
		cr_assert_eq(out->body.hello.pid, 17);
	}
}

Test(proto, wrong_msgpack_type_names_the_field)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_pending_pod_head(&pk);
	msgpack_pack_uint32(&pk, 123);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_TYPE,
		     "pending_pods.pods[0].name: expected str, got uint");
}

Test(proto, oversized_string_names_the_field_and_limit)
{
	char name[PROTO_MAX_NAME_LEN + 1];
	msgpack_packer pk;

	memset(name, 'a', sizeof(name));
	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_pending_pod_head(&pk);
	msgpack_pack_str(&pk, sizeof(name));
	msgpack_pack_str_body(&pk, name, sizeof(name));
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_TOO_LONG,
		     "pending_pods.pods[0].name: string of 254 bytes exceeds limit 253");
}

Test(proto, string_with_nul_byte_is_rejected)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_pending_pod_head(&pk);
	msgpack_pack_str(&pk, 3);
	msgpack_pack_str_body(&pk, "a\0b", 3);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_RANGE,
		     "pending_pods.pods[0].name: string contains a NUL byte");
}

/* launch_plan whose nodeclaims[3] lists n candidate types. */
static void build_plan(struct proto_msg *m, uint32_t n)
{
	static struct proto_planned_nodeclaim ncs[4];
	static struct proto_candidate types[PROTO_MAX_CANDIDATES + 1];

	for (uint32_t i = 0; i < ARRAY_SIZE(types); i++)
		types[i] = (struct proto_candidate){ .name = "m5.large" };
	for (uint32_t i = 0; i < ARRAY_SIZE(ncs); i++)
		ncs[i] = (struct proto_planned_nodeclaim){ .id = "nc", .nodepool = "default",
							   .instance_types = types, .n_instance_types = 1 };
	ncs[3].n_instance_types = n;
	*m = (struct proto_msg){ .env = { .type = PROTO_MSG_LAUNCH_PLAN, .sender = PROTO_PROCESS_SCHEDULER } };
	m->body.launch_plan = (struct proto_launch_plan){ .plan_id = "p1", .nodeclaims = ncs, .n_nodeclaims = 4 };
}

Test(proto, oversized_array_names_the_path_and_limit_on_both_sides)
{
	static const char *const text =
		"launch_plan.nodeclaims[3].instance_types: array of 61 exceeds limit 60";
	struct proto_msg m;
	struct proto_error err;
	msgpack_sbuffer raw;
	char *patched;

	/* The encoder refuses to produce it... */
	build_plan(&m, PROTO_MAX_CANDIDATES + 1);
	cr_assert_eq(proto_encode(&m, &sbuf, &err), -EBADMSG);
	cr_assert_eq(err.code, PROTO_E_TOO_MANY);
	cr_assert_str_eq(err.text, text);
	cr_assert_eq(sbuf.size, 0, "a refused message leaves the buffer untouched");

	/* ...and the decoder rejects it: encode 60, then patch the array
	 * header (0xdc 00 3c) to 61 and append one more candidate. */
	build_plan(&m, PROTO_MAX_CANDIDATES);
	encode_ok(&m);
	msgpack_sbuffer_init(&raw);
	msgpack_sbuffer_write(&raw, sbuf.data, sbuf.size);
	patched = memmem(raw.data, raw.size, "\xdc\x00\x3c", 3);
	cr_assert_not_null(patched);
	patched[2] = 0x3d;
	{
		/* One candidate is {1: "m5.large"}; insert it after the array header. */
		static const char one[] = "\x81\x01\xa8m5.large";
		size_t at = (size_t)(patched - raw.data) + 3;
		char *buf = malloc(raw.size + sizeof(one) - 1);

		memcpy(buf, raw.data, at);
		memcpy(buf + at, one, sizeof(one) - 1);
		memcpy(buf + at + sizeof(one) - 1, raw.data + at, raw.size - at);
		expect_error(buf, raw.size + sizeof(one) - 1, -EBADMSG, PROTO_E_TOO_MANY, text);
		free(buf);
	}
	msgpack_sbuffer_destroy(&raw);
}

Test(proto, missing_required_field_is_named)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_head(&pk, PROTO_VERSION_MAJOR, PROTO_MSG_HELLO);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint8(&pk, 2);
	msgpack_pack_uint8(&pk, 0);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_MISSING,
		     "hello.role: required field missing");
}

Test(proto, encoder_refuses_a_missing_required_string)
{
	struct proto_msg m = { .env = { .type = PROTO_MSG_OFFERING_UNAVAILABLE } };
	struct proto_error err;

	m.body.offering_unavailable.instance_type = "m5.large";
	cr_assert_eq(proto_encode(&m, &sbuf, &err), -EBADMSG);
	cr_assert_eq(err.code, PROTO_E_MISSING);
	cr_assert_str_eq(err.text, "offering_unavailable.zone: required field missing");
}

Test(proto, unknown_message_type_is_rejected)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_head(&pk, PROTO_VERSION_MAJOR, 99);
	msgpack_pack_map(&pk, 0);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_UNKNOWN_TYPE,
		     "envelope.type: unknown value 99 for enum msg_type");
}

Test(proto, unknown_enum_value_is_out_of_range)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_head(&pk, PROTO_VERSION_MAJOR, PROTO_MSG_HELLO);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint8(&pk, 2);
	msgpack_pack_uint8(&pk, 0);
	msgpack_pack_uint8(&pk, 3);
	msgpack_pack_uint8(&pk, 77);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_RANGE,
		     "hello.role: unknown value 77 for enum process");
}

Test(proto, integer_out_of_field_range_is_rejected)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_head(&pk, PROTO_VERSION_MAJOR, PROTO_MSG_HELLO);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint64(&pk, UINT64_C(1) << 32);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_RANGE,
		     "hello.version_major: 4294967296 exceeds maximum 4294967295");
}

Test(proto, duplicate_field_id_is_rejected)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_head(&pk, PROTO_VERSION_MAJOR, PROTO_MSG_SNAPSHOT_REQUEST);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint8(&pk, 5);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint8(&pk, 6);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_DUPLICATE,
		     "snapshot_request.since_seq: field id 1 given twice");
}

Test(proto, huge_container_header_in_a_tiny_frame_allocates_nothing)
{
	/* array32 of 4 billion entries, then map32 of 4 billion pairs. */
	expect_error("\xdd\xff\xff\xff\xff", 5, -EBADMSG, PROTO_E_TRUNCATED,
		     "message truncated: 5 bytes end inside an object");
	expect_error("\x94\x01\x00\xdf\xff\xff\xff\xff", 8, -EBADMSG, PROTO_E_TRUNCATED, NULL);
}

Test(proto, ext_of_4_gib_is_truncated_not_wrapped_to_empty)
{
	/* [-14, ext32 of 0xffffffff bytes, 0, 0]: msgpack-c adds the type
	 * byte to the length in 32 bits and would read an empty ext. */
	expect_error("\x94\xf2\xc9\xff\xff\xff\xff\x00\x00\x00", 10, -EBADMSG, PROTO_E_TRUNCATED,
		     "message truncated: 10 bytes end inside an object");
}

Test(proto, nesting_beyond_the_depth_limit_is_malformed)
{
	char buf[PROTO_MAX_DEPTH + 8];

	memset(buf, 0x91, sizeof(buf)); /* [[[[...]]]] */
	buf[sizeof(buf) - 1] = 0x01;
	expect_error(buf, sizeof(buf), -EBADMSG, PROTO_E_MALFORMED, NULL);
	expect_error("\xc1", 1, -EBADMSG, PROTO_E_MALFORMED, "reserved byte 0xc1 at offset 0");
}

Test(proto, frame_that_is_not_the_four_element_array_is_rejected)
{
	expect_error("\x93\x01\x00\x80", 4, -EBADMSG, PROTO_E_TYPE,
		     "message: expected array of 4 [major, minor, envelope, body], got array");
}

Test(proto, state_delta_carries_a_typed_object)
{
	struct proto_kv labels[] = { { "app", "web" } };
	struct proto_resource req[] = { { "cpu", 250 }, { "memory", 512LL << 20 } };
	struct proto_pod_template t = { .labels = labels, .n_labels = 1, .requests = req,
					.n_requests = 2 };
	struct proto_pod pod = { .ns = "default", .name = "web-1", .uid = "u1", .template = &t,
				 .n_template = 1 };
	struct proto_msg m = { .env = { .type = PROTO_MSG_STATE_DELTA, .seq = 9 } };
	const struct proto_msg *out;

	m.body.state_delta = (struct proto_state_delta){
		.seq = 9, .op = PROTO_DELTA_UPDATE,
		.object = { .kind = PROTO_OBJECT_POD, .pod = &pod },
	};
	encode_ok(&m);
	cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, NULL), 0);
	cr_assert_eq(out->body.state_delta.object.kind, PROTO_OBJECT_POD);
	cr_assert_str_eq(out->body.state_delta.object.pod->name, "web-1");
	cr_assert_eq(proto_pod_template_of(out->body.state_delta.object.pod)->requests[1].value,
		     512LL << 20);
	{
		struct proto_object keep;
		cr_assert_eq(proto_object_dup(&out->body.state_delta.object, &keep), 0);
		cr_assert(proto_struct_equal(&proto_desc_pod, keep.pod, &pod));
		proto_object_free(&keep);
	}
}

Test(proto, object_check_refuses_what_no_delta_could_carry_naming_the_field)
{
	static char big[5001], value[PROTO_MAX_VALUE_LEN + 1];
	static char *values[PROTO_MAX_REQUIREMENT_VALUES];
	static struct proto_requirement reqs[PROTO_MAX_REQUIREMENTS];
	struct proto_kv ann[] = { { "example.com/ok", "small" }, { "example.com/blob", big } };
	struct proto_nodepool np = { .name = "big", .uid = "u1", .annotations = ann, .n_annotations = 1 };
	struct proto_object o = { .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np };
	struct proto_error err;

	memset(big, 'x', sizeof(big) - 1);
	cr_assert_eq(proto_object_check(&o, &err), 0, "%s", err.text);
	np.n_annotations = 2;
	cr_assert_eq(proto_object_check(&o, &err), -EBADMSG);
	cr_assert_eq(err.code, PROTO_E_TOO_LONG);
	cr_assert_str_eq(err.text, "annotations[1]: string of 5000 bytes exceeds limit 4096");
	/* Every field within its limit, but more than a frame holds. */
	np.n_annotations = 0;
	memset(value, 'v', sizeof(value) - 1);
	for (size_t i = 0; i < ARRAY_SIZE(values); i++)
		values[i] = value;
	for (size_t i = 0; i < ARRAY_SIZE(reqs); i++)
		reqs[i] = (struct proto_requirement){ .key = "k", .values = values,
						      .n_values = ARRAY_SIZE(values) };
	np.requirements = reqs;
	np.n_requirements = ARRAY_SIZE(reqs);
	cr_assert_eq(proto_object_check(&o, &err), -EMSGSIZE);
	cr_assert_eq(err.code, PROTO_E_FRAME_SIZE);
	cr_assert(strstr(err.text, "exceeds limit 16777216"), "%s", err.text);
}

Test(proto, readme_field_tables_match_the_schema)
{
	static const char begin[] = "<!-- BEGIN GENERATED FIELDS -->\n";
	static const char end[] = "<!-- END GENERATED FIELDS -->";
	const char *srcdir = getenv("KANNA_SRCDIR");
	char path[4096], *readme = NULL, *want = NULL, *from, *to;
	size_t readme_len = 0, want_len = 0;
	FILE *f, *mem;

	snprintf(path, sizeof(path), "%s/proto/README.md", srcdir ? srcdir : KANNA_SRCDIR);
	f = fopen(path, "r");
	cr_assert_not_null(f, "Failed to open %s", path);
	mem = open_memstream(&readme, &readme_len);
	for (int c; (c = fgetc(f)) != EOF;)
		fputc(c, mem);
	fclose(f);
	fclose(mem);
	mem = open_memstream(&want, &want_len);
	proto_schema_markdown(mem);
	fclose(mem);

	from = strstr(readme, begin);
	cr_assert_not_null(from, "README.md lacks the generated section");
	from += strlen(begin);
	to = strstr(from, end);
	cr_assert_not_null(to);
	cr_assert(want_len == (size_t)(to - from) && memcmp(from, want, want_len) == 0,
		  "proto/README.md is stale: regenerate its field tables with proto/proto-gen doc");
	free(readme);
	free(want);
}

Test(proto, hello_from_the_expected_peer_is_accepted_after_a_round_trip)
{
	struct proto_msg m;
	const struct proto_msg *out;
	struct proto_error err;

	proto_hello_init(&m, PROTO_PROCESS_SCHEDULER, 1, 3, "kanna-scheduler@1", 4242);
	cr_assert_gt(m.env.send_time_ns, 0);
	encode_ok(&m);
	cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, NULL), 0);
	cr_assert_eq(proto_hello_verify(out, PROTO_PROCESS_SCHEDULER, 3, &err), 0, "%s", err.text);
	cr_assert_str_eq(out->body.hello.instance, "kanna-scheduler@1");
}

Test(proto, hello_mismatch_is_refused_with_what_differs)
{
	struct proto_msg m;
	struct proto_error err;

	proto_hello_init(&m, PROTO_PROCESS_SCHEDULER, 1, 3, NULL, 1);
	cr_assert_eq(proto_hello_verify(&m, PROTO_PROCESS_SCHEDULER, 2, &err), -EBADMSG);
	cr_assert_str_eq(err.text, "hello: peer runs 3 scheduler shard(s), this process expects 2");
	cr_assert_eq(proto_hello_verify(&m, PROTO_PROCESS_LAUNCHER, 0, &err), -EBADMSG);
	cr_assert_str_eq(err.text, "hello: peer is scheduler, expected launcher");
	m.body.hello.version_major = 1;
	m.body.hello.version_minor = 0;
	cr_assert_eq(proto_hello_verify(&m, PROTO_PROCESS_SCHEDULER, 3, &err), -EPROTONOSUPPORT);
	{
		char want[80];
		snprintf(want, sizeof(want), "hello: peer speaks protocol 1.0, this build %d.%d",
			 PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
		cr_assert_str_eq(err.text, want);
	}
	m.body.hello.version_major = PROTO_VERSION_MAJOR;
	m.body.hello.shard = 3;
	cr_assert_eq(proto_hello_verify(&m, PROTO_PROCESS_SCHEDULER, 3, &err), -EBADMSG);
	cr_assert_str_eq(err.text, "hello: peer claims shard 3 of 3");
	proto_msg_init(&m, PROTO_MSG_HEARTBEAT, PROTO_PROCESS_SCHEDULER, 0, 1);
	cr_assert_eq(proto_hello_verify(&m, PROTO_PROCESS_SCHEDULER, 0, &err), -EBADMSG);
	cr_assert_str_eq(err.text, "hello: connection opened with heartbeat instead of hello");
}

Test(proto, a_hello_of_another_major_is_read_to_name_its_sender_and_nothing_else_is)
{
	struct proto_msg m;
	const struct proto_msg *out;
	struct proto_error err;

	proto_hello_init(&m, PROTO_PROCESS_SCHEDULER, 1, 3, "kanna-scheduler@1", 4242);
	m.body.hello.version_major = PROTO_VERSION_MAJOR + 1;
	encode_ok(&m);
	sbuf.data[1] = PROTO_VERSION_MAJOR + 1; /* [major, ...]: a positive fixint */
	cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, &err), -EPROTONOSUPPORT);
	cr_assert_eq(proto_decode_hello(dec, sbuf.data, sbuf.size, &out, &err), 0, "%s", err.text);
	cr_assert_eq(out->version_major, PROTO_VERSION_MAJOR + 1);
	cr_assert_eq(out->body.hello.role, PROTO_PROCESS_SCHEDULER);
	cr_assert_eq(out->body.hello.pid, 4242);
	cr_assert_eq(proto_hello_verify(out, PROTO_PROCESS_SCHEDULER, 3, &err), -EPROTONOSUPPORT);
	/* Any other message of another major stays refused whole. */
	proto_msg_init(&m, PROTO_MSG_HEARTBEAT, PROTO_PROCESS_SCHEDULER, 0, 1);
	encode_ok(&m);
	sbuf.data[1] = PROTO_VERSION_MAJOR + 1;
	cr_assert_eq(proto_decode_hello(dec, sbuf.data, sbuf.size, &out, &err), -EPROTONOSUPPORT);
	cr_assert_eq(err.code, PROTO_E_VERSION);
	/* And of this major, only a hello is one. */
	proto_msg_init(&m, PROTO_MSG_HEARTBEAT, PROTO_PROCESS_SCHEDULER, 0, 1);
	encode_ok(&m);
	cr_assert_eq(proto_decode_hello(dec, sbuf.data, sbuf.size, &out, &err), -EBADMSG);
	cr_assert(strstr(err.text, "expected a hello, got heartbeat"), "%s", err.text);
}

Test(proto, decoded_size_budget_is_enforced_with_a_named_error)
{
	struct proto_rng rng = { .state = 11 };
	const struct proto_msg *out;
	struct proto_error err;
	struct proto_msg m;

	cr_assert_eq(proto_random_msg(&rng, &arena, PROTO_MSG_CATALOG, 6, &m), 0);
	encode_ok(&m);
	cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, &err), 0, "%s", err.text);
	proto_decoder_set_max_decoded(dec, 512);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_TOO_MANY, NULL);
	cr_assert_eq(proto_decode(dec, sbuf.data, sbuf.size, &out, &err), -EBADMSG);
	cr_assert(strstr(err.text, "message decodes to more than 512 bytes"), "%s", err.text);
}

Test(proto, frame_with_too_many_objects_is_rejected_before_unpacking)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
	pack_head(&pk, PROTO_VERSION_MAJOR, PROTO_MSG_HEARTBEAT);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_uint8(&pk, 99); /* an unknown field holding 2M nils */
	msgpack_pack_array(&pk, PROTO_MAX_FRAME_OBJECTS);
	for (unsigned i = 0; i < PROTO_MAX_FRAME_OBJECTS; i++)
		msgpack_pack_nil(&pk);
	expect_error(sbuf.data, sbuf.size, -EBADMSG, PROTO_E_TOO_MANY,
		     "message of more than 2000000 msgpack objects");
}

Test(proto, arena_allocations_are_aligned_zeroed_and_survive_resets)
{
	for (int round = 0; round < 3; round++) {
		for (size_t size = 1; size < 300000; size = size * 3 + 1) {
			unsigned char *p = arena_alloc(&arena, size);

			cr_assert_not_null(p);
			cr_assert_eq((uintptr_t)p % _Alignof(max_align_t), 0);
			cr_assert_eq(p[0], 0);
			cr_assert_eq(p[size - 1], 0);
			memset(p, 0xa5, size);
		}
		arena_reset(&arena);
	}
}

static bool objects_equal(const struct proto_object *a, const struct proto_object *b)
{
	struct proto_msg ma = { .env.type = PROTO_MSG_SNAPSHOT_ITEM }, mb = ma;

	ma.body.snapshot_item.object = *a;
	mb.body.snapshot_item.object = *b;
	return proto_msg_equal(&ma, &mb);
}

Test(proto, pods_of_one_workload_share_one_template_in_a_store)
{
	struct proto_kv labels[] = { { "app", "web" } };
	struct proto_resource req[] = { { "cpu", 250 } };
	struct proto_pod_template t1 = { .labels = labels, .n_labels = 1, .requests = req,
					 .n_requests = 1 }, t2 = t1;
	struct proto_pod a = { .ns = "default", .name = "web-1", .uid = "u1", .template = &t1,
			       .n_template = 1 },
			 b = { .ns = "default", .name = "web-2", .uid = "u2", .template = &t2,
			       .n_template = 1 };
	struct proto_object oa = { .kind = PROTO_OBJECT_POD, .pod = &a }, ob = oa, ca, cb;
	struct proto_share *sh;
	void *ba, *bb;

	ob.pod = &b;
	cr_assert_eq(proto_share_new(&sh), 0);
	cr_assert_eq(proto_object_dup_shared(sh, &oa, 0, &ba, &ca), 0);
	cr_assert_eq(proto_object_dup_shared(sh, &ob, 0, &bb, &cb), 0);
	cr_assert_eq(ca.pod->template, cb.pod->template, "one copy of an equal template");
	cr_assert_str_eq(cb.pod->name, "web-2");
	t2.requests[0].value = 500; /* (req is t1's too: both sources change) */
	cr_assert_eq(proto_pod_template_of(ca.pod)->requests[0].value, 250, "the copy is the store's own");
	proto_object_free_shared(sh, ba, &ca);
	proto_object_free_shared(sh, bb, &cb);
	cr_assert_eq(proto_share_count(sh), 0);
	proto_share_unref(sh);
}

Test(proto, shared_copies_equal_their_source_share_repeated_values_and_release_them)
{
	struct proto_rng rng = { .state = 20261124 };
	struct proto_share *sh;
	struct proto_object copies[64][2];
	void *blocks[64][2];
	size_t held;

	cr_assert_eq(proto_share_new(&sh), 0);
	for (unsigned i = 0; i < 64; i++) {
		struct proto_msg m;

		arena_reset(&arena);
		cr_assert_eq(proto_random_msg(&rng, &arena, PROTO_MSG_STATE_DELTA, i % 8, &m), 0);
		/* Two copies of each object: the second shares every value. */
		for (int k = 0; k < 2; k++) {
			cr_assert_eq(proto_object_dup_shared(sh, &m.body.state_delta.object, 16,
							     &blocks[i][k], &copies[i][k]), 0);
			cr_assert(objects_equal(&copies[i][k], &m.body.state_delta.object),
				  "object %u differs from its source", i);
		}
		held = proto_share_count(sh);
		proto_object_free_shared(sh, blocks[i][1], &copies[i][1]);
		cr_assert_eq(proto_share_count(sh), held, "the first copy still holds every value");
	}
	for (unsigned i = 0; i < 64; i++) {
		struct proto_object again;
		proto_object_dup(&copies[i][0], &again); /* an ordinary copy reads it as any */
		cr_assert(objects_equal(&again, &copies[i][0]));
		proto_object_free(&again);
		proto_object_free_shared(sh, blocks[i][0], &copies[i][0]);
	}
	cr_assert_eq(proto_share_count(sh), 0, "every shared value is released");
	proto_share_unref(sh);
}
