/*
 * kanna-tap's message formatter (tools/tap-format.h): parses the tap header,
 * hands the payload to the proto decoder and builds the JSON line object.
 * Called by kanna-tap for every message and by tests and the fuzz target;
 * it reads outside bytes, so it checks every length, never trusts a NUL
 * and never fails on bad input (that becomes an "undecodable" line).
 * It also owns the redaction of EC2NodeClass user data (TAP_SHOW_USER_DATA).
 * Cleanup style: _cleanup_ attributes.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "proto/proto.h"
#include "proto/schema.h"
#include "tools/tap-format.h"

/* "18446744073709551615" is 20 digits. */
#define TAP_MAX_TIME_DIGITS 20

static bool is_name_char(char c)
{
	return c > ' ' && c < 0x7f;
}

int tap_header_parse(const void *data, size_t size, struct tap_header *ret,
		     const char **ret_error)
{
	const char *s = data, *end = s + size, *sp1, *sp2;
	uint64_t usec = 0;

	*ret_error = NULL;
	if (size < 6 || (memcmp(s, "send ", 5) != 0 && memcmp(s, "recv ", 5) != 0)) {
		*ret_error = "tap header does not start with \"send \" or \"recv \"";
		return -EBADMSG;
	}
	sp1 = s + 4;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
	if (!sp2) {
		*ret_error = "tap header has no time field";
		return -EBADMSG;
	}
	size_t name_len = (size_t)(sp2 - sp1 - 1);
	if (name_len == 0 || name_len > TAP_MAX_SOCKET_NAME) {
		*ret_error = "tap header socket name is empty or too long";
		return -EBADMSG;
	}
	for (const char *p = sp1 + 1; p < sp2; p++)
		if (!is_name_char(*p)) {
			*ret_error = "tap header socket name has a non-printable byte";
			return -EBADMSG;
		}
	size_t digits = (size_t)(end - sp2 - 1);
	if (digits == 0 || digits > TAP_MAX_TIME_DIGITS) {
		*ret_error = "tap header time is empty or too long";
		return -EBADMSG;
	}
	for (const char *p = sp2 + 1; p < end; p++) {
		if (*p < '0' || *p > '9') {
			*ret_error = "tap header time is not a decimal number";
			return -EBADMSG;
		}
		unsigned d = (unsigned)(*p - '0');
		if (usec > (UINT64_MAX - d) / 10) {
			*ret_error = "tap header time overflows 64 bits";
			return -EBADMSG;
		}
		usec = usec * 10 + d;
	}
	memcpy(ret->direction, s, 4);
	ret->direction[4] = '\0';
	memcpy(ret->socket, sp1 + 1, name_len);
	ret->socket[name_len] = '\0';
	ret->time_usec = usec;
	return 0;
}

int tap_format_time(uint64_t usec, char *buf, size_t size)
{
	time_t sec = (time_t)(usec / 1000000u);
	struct tm tm;
	char date[24];

	if (size < TAP_TIME_LEN || !gmtime_r(&sec, &tm) ||
	    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		return -EINVAL;
	int n = snprintf(buf, size, "%s.%06" PRIu64 "Z", date, usec % 1000000u);
	return n > 0 && (size_t)n < size ? 0 : -EINVAL;
}

static int set_string(json_t *obj, const char *key, const char *value)
{
	return json_object_set_new(obj, key, value ? json_string(value) : json_null()) < 0
		       ? -ENOMEM
		       : 0;
}

static int set_undecodable(json_t *obj, const char *error, const struct tap_frame *payload)
{
	static const char digits[] = "0123456789abcdef";
	char hex[2 * TAP_HEX_BYTES + 1];
	size_t n = payload ? MIN(payload->size, (size_t)TAP_HEX_BYTES) : 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t b = ((const uint8_t *)payload->data)[i];
		hex[2 * i] = digits[b >> 4];
		hex[2 * i + 1] = digits[b & 0xf];
	}
	hex[2 * n] = '\0';
	if (set_string(obj, "type", TAP_TYPE_UNDECODABLE) < 0 ||
	    set_string(obj, "error", error) < 0 ||
	    json_object_set_new(obj, "bytes",
				json_integer(payload ? (json_int_t)payload->size : 0)) < 0 ||
	    set_string(obj, "hex", hex) < 0)
		return -ENOMEM;
	return 0;
}

/* Sets key of parent to "<redacted: N bytes, sha256 XXXXXXXXXXXX>" for text:
 * its length and digest from the decoded bytes, not from the JSON string
 * (where bytes that are not UTF-8 became '?'). */
static int set_redacted(json_t *parent, const char *key, const char *text)
{
	static const char digits[] = "0123456789abcdef";
	char hex[TAP_USER_DATA_DIGEST_HEX + 1], line[96];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned md_len = 0;
	size_t len = strlen(text);

	if (EVP_Digest(text, len, md, &md_len, EVP_sha256(), NULL) != 1 ||
	    md_len * 2 < TAP_USER_DATA_DIGEST_HEX)
		return -EIO;
	for (size_t i = 0; i < TAP_USER_DATA_DIGEST_HEX; i++)
		hex[i] = digits[i % 2 ? md[i / 2] & 0xf : md[i / 2] >> 4];
	hex[TAP_USER_DATA_DIGEST_HEX] = '\0';
	snprintf(line, sizeof(line), "<redacted: %zu bytes, sha256 %s>", len, hex);
	return set_string(parent, key, line);
}

/*
 * Redacts the user data of every EC2NodeClass in json, the rendering of s
 * (a struct described by sd) that proto_to_json() made. The walk follows
 * the schema, not a list of messages, so a nodeclass is found wherever a
 * message carries one: today the object of state_delta and snapshot_item.
 */
static int redact_struct(const struct proto_struct_desc *sd, const void *s, json_t *json)
{
	if (!json_is_object(json))
		return 0;
	for (uint32_t i = 0; i < sd->n_fields; i++) {
		const struct proto_field_desc *f = &sd->fields[i];
		const void *p = proto_field_ptr(f, s);
		json_t *child = json_object_get(json, f->name);
		int r = 0;

		if (!child) /* a default, left out */
			continue;
		if (f->kind == PROTO_KIND_STR && sd == &proto_desc_nodeclass &&
		    f->offset == offsetof(struct proto_nodeclass, user_data) && *(char *const *)p)
			r = set_redacted(json, f->name, *(char *const *)p);
		else if (f->kind == PROTO_KIND_OBJ)
			r = redact_struct(f->sub, p, child);
		else if (f->kind == PROTO_KIND_OBJS) {
			const char *v = *(char *const *)p;
			uint32_t n = *proto_field_count(f, s);
			for (uint32_t k = 0; r >= 0 && k < n; k++)
				r = redact_struct(f->sub, v + (size_t)k * f->sub->size, json_array_get(child, k));
		} else if (f->kind == PROTO_KIND_OBJECT) {
			const struct proto_object *o = p;
			if (o->ptr && o->kind < proto_n_object_kinds)
				r = redact_struct(proto_object_descs[o->kind], o->ptr,
						  json_object_get(child, "object"));
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Decodes the payload with the proto codec into "type" and "fields". */
static int set_decoded(json_t *obj, struct proto_decoder *decoder,
		       const struct tap_frame *payload, unsigned flags)
{
	struct proto_error err = { 0 };
	const struct proto_msg *msg;

	int r = proto_decode(decoder, payload->data, payload->size, &msg, &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		/* The decoder's own message; its code name when it gave none. */
		const char *code = proto_error_code_name(err.code);
		const char *error = err.text[0] ? err.text : code ? code : strerror(-r);
		return set_undecodable(obj, error, payload);
	}
	if (flags & TAP_TYPE_ONLY) /* proto_decode() vouched for env.type */
		return set_string(obj, "type", proto_type_name(msg->env.type));
	json_t *fields = proto_to_json(msg);
	if (!fields)
		return -ENOMEM;
	/* proto_to_json() vouched for env.type. */
	r = flags & TAP_SHOW_USER_DATA ? 0 : redact_struct(proto_msg_descs[msg->env.type], &msg->body,
							   json_object_get(fields, "body"));
	if (r < 0 || set_string(obj, "type", proto_type_name(msg->env.type)) < 0) {
		json_decref(fields);
		return r < 0 ? r : -ENOMEM;
	}
	/* json_object_set_new() takes the reference even when it fails. */
	return json_object_set_new(obj, "fields", fields) < 0 ? -ENOMEM : 0;
}

int tap_message_to_json(struct proto_decoder *decoder, const char *process,
			const struct tap_frame *frames, size_t n_frames, uint64_t now_usec,
			unsigned flags, json_t **ret)
{
	json_auto_t *obj = json_object();
	struct tap_header header;
	const char *error = NULL;
	char time[TAP_TIME_LEN];
	bool header_ok = false;
	int r;

	if (!obj)
		return -ENOMEM;
	if (n_frames < 2)
		error = "tap message has fewer than 2 frames";
	else
		header_ok = tap_header_parse(frames[0].data, frames[0].size, &header, &error) >= 0;

	r = tap_format_time(header_ok ? header.time_usec : now_usec, time, sizeof(time));
	if (r < 0) /* a year beyond 9999: print the epoch rather than nothing */
		r = tap_format_time(0, time, sizeof(time));
	if (r < 0)
		return r;
	if (set_string(obj, "time", time) < 0 || set_string(obj, "process", process) < 0 ||
	    set_string(obj, "direction", header_ok ? header.direction : NULL) < 0 ||
	    set_string(obj, "socket", header_ok ? header.socket : NULL) < 0)
		return -ENOMEM;

	/* The payload is the last frame; routing frames (ROUTER/DEALER) precede it. */
	const struct tap_frame *payload = n_frames >= 2 ? &frames[n_frames - 1] : NULL;
	r = header_ok ? set_decoded(obj, decoder, payload, flags) : set_undecodable(obj, error, payload);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(obj);
	return 0;
}
