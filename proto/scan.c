/*
 * The frame check that runs before msgpack-c sees untrusted bytes. msgpack-c's
 * C unpacker sizes every array and map from its header (an array32 header
 * of 5 bytes asks it for ~100 GB) and has no limits API, so this pass walks
 * the msgpack headers first and rejects a frame that is truncated, nested
 * too deep, uses the reserved byte 0xc1, holds more than PROTO_MAX_FRAME_OBJECTS objects
 * or carries trailing bytes. After
 * it, every container holds at most as many entries as bytes remain, so
 * msgpack_unpack() allocates at most ~24 bytes per input byte.
 * Called only by proto/decode.c; reads nothing outside [buf, buf+len).
 */
#include "config.h"

#include "proto/scan.h"

struct scan {
	const uint8_t *p;
	size_t len;
	size_t off;
	uint64_t objects;
	struct proto_error *err;
};

static int truncated(struct scan *s)
{
	return proto_fail(s->err, NULL, PROTO_E_TRUNCATED,
			  "message truncated: %zu bytes end inside an object", s->len);
}

static int take_be(struct scan *s, unsigned n, uint64_t *ret)
{
	uint64_t v = 0;

	if (s->len - s->off < n)
		return truncated(s);
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | s->p[s->off + i];
	s->off += n;
	*ret = v;
	return 0;
}

/* How many bytes follow the type byte b and how many nested objects. */
static int header(struct scan *s, uint8_t b, uint64_t *skip, uint64_t *children)
{
	/* Sizes of the fixed-length forms 0xc0..0xdf, -1 = variable. */
	static const int8_t fixed[32] = {
		[0x00] = 0, [0x01] = -2, [0x02] = 0, [0x03] = 0,  /* nil, (c1), false, true */
		[0x04] = -1, [0x05] = -1, [0x06] = -1,            /* bin8/16/32 */
		[0x07] = -1, [0x08] = -1, [0x09] = -1,            /* ext8/16/32 */
		[0x0a] = 4, [0x0b] = 8,                           /* float32/64 */
		[0x0c] = 1, [0x0d] = 2, [0x0e] = 4, [0x0f] = 8,   /* uint8..64 */
		[0x10] = 1, [0x11] = 2, [0x12] = 4, [0x13] = 8,   /* int8..64 */
		[0x14] = 2, [0x15] = 3, [0x16] = 5, [0x17] = 9,   /* fixext1..8 */
		[0x18] = 17,                                      /* fixext16 */
		[0x19] = -1, [0x1a] = -1, [0x1b] = -1,            /* str8/16/32 */
		[0x1c] = -1, [0x1d] = -1, [0x1e] = -1, [0x1f] = -1, /* array16/32, map16/32 */
	};
	static const uint8_t len_bytes[32] = {
		[0x04] = 1, [0x05] = 2, [0x06] = 4, [0x07] = 1, [0x08] = 2, [0x09] = 4,
		[0x19] = 1, [0x1a] = 2, [0x1b] = 4, [0x1c] = 2, [0x1d] = 4, [0x1e] = 2, [0x1f] = 4,
	};
	uint64_t n = 0;
	int r;

	*skip = *children = 0;
	if (b <= 0x7f || b >= 0xe0)
		return 0;
	if (b <= 0x8f) {
		*children = 2u * (b & 0x0f);
		return 0;
	}
	if (b <= 0x9f) {
		*children = b & 0x0f;
		return 0;
	}
	if (b <= 0xbf) {
		*skip = b & 0x1f;
		return 0;
	}
	b -= 0xc0;
	if (fixed[b] == -2)
		return proto_fail(s->err, NULL, PROTO_E_MALFORMED,
				  "reserved byte 0xc1 at offset %zu", s->off - 1);
	if (fixed[b] >= 0) {
		*skip = (uint64_t)fixed[b];
		return 0;
	}
	r = take_be(s, len_bytes[b], &n);
	if (r < 0)
		return r;
	if (b >= 0x1c)
		*children = b >= 0x1e ? 2 * n : n;
	else
		*skip = n + (b >= 0x07 && b <= 0x09); /* ext: + type byte */
	return 0;
}

/* Walks one object and everything nested in it, without recursion: left[d]
 * counts the objects still to read at depth d. */
static int scan_object(struct scan *s)
{
	uint64_t left[PROTO_MAX_DEPTH + 1];
	unsigned depth = 0;

	left[0] = 1;
	for (;;) {
		uint64_t skip, children;
		int r;

		while (left[depth] == 0) {
			if (depth == 0)
				return 0;
			depth--;
		}
		left[depth]--;
		if (++s->objects > PROTO_MAX_FRAME_OBJECTS)
			return proto_fail(s->err, NULL, PROTO_E_TOO_MANY,
					  "message of more than %u msgpack objects", PROTO_MAX_FRAME_OBJECTS);
		if (s->off >= s->len)
			return truncated(s);
		r = header(s, s->p[s->off++], &skip, &children);
		if (r < 0)
			return r;
		if (skip > s->len - s->off)
			return truncated(s);
		s->off += skip;
		if (children == 0)
			continue;
		/* Every object takes at least one byte. */
		if (children > s->len - s->off)
			return truncated(s);
		if (depth == PROTO_MAX_DEPTH)
			return proto_fail(s->err, NULL, PROTO_E_MALFORMED,
					  "nesting deeper than %d levels at offset %zu",
					  PROTO_MAX_DEPTH, s->off);
		left[++depth] = children;
	}
}

int proto_scan_frame(const void *buf, size_t len, struct proto_error *err)
{
	struct scan s = { .p = buf, .len = len, .err = err };
	int r;

	if (len > PROTO_MAX_FRAME_BYTES)
		return proto_fail(err, NULL, PROTO_E_FRAME_SIZE, "frame of %zu bytes exceeds limit %u",
				  len, PROTO_MAX_FRAME_BYTES);
	r = scan_object(&s);
	if (r < 0)
		return r;
	if (s.off != len)
		return proto_fail(err, NULL, PROTO_E_TRAILING,
				  "%zu bytes of trailing garbage after the message", len - s.off);
	return 0;
}
