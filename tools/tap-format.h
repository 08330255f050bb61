/*
 * Turns one tap message (the wire format of common/sock.h: frame 0 =
 * "<send|recv> <socket-name> <unix-time-usec>", last frame = the kanna proto
 * payload) into the JSON object kanna-tap prints as one line:
 *   {"time": "2026-11-22T22:29:39.123456Z", "process": "watcher",
 *    "direction": "send", "socket": "pending.0", "type": "pending_pods",
 *    "fields": {...}}
 * A payload the proto decoder rejects (or a malformed header) prints as
 *   {..., "type": "undecodable", "error": "<why>", "bytes": N,
 *    "hex": "<first TAP_HEX_BYTES bytes>"}
 * Separate from kanna-tap.c so that unit tests and the fuzz target drive it
 * without sockets.
 */
#ifndef KANNA_TOOLS_TAP_FORMAT_H
#define KANNA_TOOLS_TAP_FORMAT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

/* Longest socket name accepted in a tap header (names are short words
 * like "state.pub" or "pending.12"; anything longer is garbage). */
#define TAP_MAX_SOCKET_NAME 128
/* Payload bytes shown as hex for an undecodable message: enough to
 * recognise a msgpack envelope or a stray text frame. */
#define TAP_HEX_BYTES 64
/* "2026-11-22T22:29:39.123456Z" plus NUL. */
#define TAP_TIME_LEN 28
/* The type name kanna-tap gives messages it cannot decode; --type accepts it. */
#define TAP_TYPE_UNDECODABLE "undecodable"
/* Hex digits of SHA-256 shown for redacted user data: enough to tell two
 * versions apart and to match `sha256sum` of the EC2NodeClass's userData. */
#define TAP_USER_DATA_DIGEST_HEX 12

/* What tap_message_to_json() shows in clear; 0 is the safe default. */
enum tap_format_flags {
	/*
	 * EC2NodeClass (and converted AWSNodeTemplate) spec.userData, which
	 * often holds bootstrap secrets: without this flag it is printed as
	 * "<redacted: N bytes, sha256 XXXXXXXXXXXX>" (its length in bytes and
	 * the first TAP_USER_DATA_DIGEST_HEX hex digits of its SHA-256).
	 */
	TAP_SHOW_USER_DATA = 1u << 0,
	/*
	 * Decode, but leave "fields" out: what kanna-tap --summary needs when
	 * no field filter looks at them (a catalog is megabytes of JSON).
	 */
	TAP_TYPE_ONLY = 1u << 1,
};

struct tap_frame {
	const void *data;
	size_t size;
};

struct tap_header {
	char direction[5]; /* "send" or "recv" */
	char socket[TAP_MAX_SOCKET_NAME + 1];
	uint64_t time_usec; /* CLOCK_REALTIME, microseconds since the epoch */
};

/*
 * Parses frame 0. Returns 0, or -EBADMSG with *ret_error set to a static
 * description of what is wrong.
 */
int tap_header_parse(const void *data, size_t size, struct tap_header *ret,
		     const char **ret_error);

/* RFC 3339 UTC with microseconds into buf (at least TAP_TIME_LEN bytes). */
int tap_format_time(uint64_t usec, char *buf, size_t size);

/*
 * Builds the JSON object for one tap message received from `process`,
 * decoding the payload with `decoder` (its previous message is released).
 * "fields" is proto_to_json() of the message: envelope and body, with user
 * data redacted unless flags (enum tap_format_flags) say otherwise. now_usec
 * stands in for the time when the header is malformed. Returns 0, -ENOMEM or
 * -EIO (no digest for redaction: nothing to print rather than the secret);
 * every malformed input still yields an object (undecodable).
 */
int tap_message_to_json(struct proto_decoder *decoder, const char *process,
			const struct tap_frame *frames, size_t n_frames, uint64_t now_usec,
			unsigned flags, json_t **ret);

#endif
