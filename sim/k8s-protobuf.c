/*
 * The protobuf wire-format decoder behind k8s-protobuf.h: the "k8s\0"
 * envelope, runtime.Unknown, then the object's message walked field by
 * field against the schema of k8s-protobuf-schema.c into jansson values.
 * Decodes outside bytes: every length is checked against what is left,
 * nesting is bounded, and no input makes it read past the body (see
 * tests/fuzz/fuzz_sim_protobuf.c). Called by k8s-api.c for POST/PUT
 * bodies sent as application/vnd.kubernetes.protobuf.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base64.h"
#include "common/util.h"
#include "sim/k8s-protobuf.h"

enum wire_type {
	WIRE_VARINT = 0,
	WIRE_I64 = 1,
	WIRE_LEN = 2,
	WIRE_I32 = 5,
};

struct reader {
	const uint8_t *p, *end;
};

struct decoder {
	const char *what; /* "Deployment in version \"apps/v1\"" for errors */
	const char *kind; /* the kind the endpoint takes */
	char path[256];   /* where in the object, for errors */
	char msg[384];
	int r; /* the first error: -EBADMSG or -EPROTONOSUPPORT */
};

static int fail(struct decoder *d, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(struct decoder *d, int r, const char *fmt, ...)
{
	va_list ap;

	if (d->r == 0) {
		va_start(ap, fmt);
		vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
		va_end(ap);
		d->r = r;
	}
	return d->r;
}

static int read_varint(struct reader *r, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (r->p >= r->end)
			return -EBADMSG;
		b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EBADMSG; /* more than 10 bytes */
}

/* A length-delimited value: its bytes, bounded by what is left. */
static int read_len(struct reader *r, struct reader *ret)
{
	uint64_t n;

	if (read_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p))
		return -EBADMSG;
	ret->p = r->p;
	ret->end = r->p + n;
	r->p += n;
	return 0;
}

static int read_key(struct reader *r, uint32_t *number, enum wire_type *wire)
{
	uint64_t key;

	if (read_varint(r, &key) < 0 || key >> 3 == 0 || key >> 3 > UINT32_MAX)
		return -EBADMSG;
	*number = (uint32_t)(key >> 3);
	*wire = (enum wire_type)(key & 7);
	return 0;
}

/* Skips a value of wire type wire; *zero tells whether it held only zeros. */
static int skip_value(struct reader *r, enum wire_type wire, int depth, bool *zero);

/* A length-delimited value that parses as a message of only zero values. */
static bool all_zero_message(struct reader m, int depth)
{
	if (depth >= K8S_PROTOBUF_MAX_DEPTH)
		return false;
	while (m.p < m.end) {
		uint32_t number;
		enum wire_type wire;
		bool zero;

		if (read_key(&m, &number, &wire) < 0 || skip_value(&m, wire, depth + 1, &zero) < 0 ||
		    !zero)
			return false;
	}
	return true;
}

static int skip_value(struct reader *r, enum wire_type wire, int depth, bool *zero)
{
	struct reader sub;
	uint64_t v;

	switch (wire) {
	case WIRE_VARINT:
		if (read_varint(r, &v) < 0)
			return -EBADMSG;
		*zero = v == 0;
		return 0;
	case WIRE_I64:
	case WIRE_I32: {
		size_t n = wire == WIRE_I64 ? 8 : 4;

		if ((size_t)(r->end - r->p) < n)
			return -EBADMSG;
		*zero = true;
		for (size_t i = 0; i < n; i++)
			*zero = *zero && r->p[i] == 0;
		r->p += n;
		return 0;
	}
	case WIRE_LEN:
		if (read_len(r, &sub) < 0)
			return -EBADMSG;
		*zero = all_zero_message(sub, depth);
		return 0;
	default:
		return -EBADMSG; /* groups (3, 4) and reserved types */
	}
}

static const struct pb_field *find_field(const struct pb_message *m, uint32_t number)
{
	for (size_t i = 0; i < m->n_fields; i++)
		if (m->fields[i].number == number)
			return &m->fields[i];
	return NULL;
}

/*
 * The fields 1..SMALL_FIELDS of a small fixed message (Time, Quantity,
 * IntOrString, map entries, the envelope): varints into v, length-
 * delimited values into s (p NULL when absent); other fields are skipped.
 */
#define SMALL_FIELDS 4
static int read_small(struct reader m, uint64_t v[SMALL_FIELDS + 1],
		      struct reader s[SMALL_FIELDS + 1])
{
	while (m.p < m.end) {
		uint32_t number;
		enum wire_type wire;
		bool zero;
		int r;

		if (read_key(&m, &number, &wire) < 0)
			return -EBADMSG;
		if (number <= SMALL_FIELDS && wire == WIRE_VARINT)
			r = read_varint(&m, &v[number]);
		else if (number <= SMALL_FIELDS && wire == WIRE_LEN)
			r = read_len(&m, &s[number]);
		else
			r = skip_value(&m, wire, 0, &zero);
		if (r < 0)
			return -EBADMSG;
	}
	return 0;
}

static json_t *string_of(struct reader v)
{
	return json_stringn((const char *)v.p, (size_t)(v.end - v.p));
}

static json_t *base64_of(struct reader v)
{
	char *buf = base64_encode(v.p, (size_t)(v.end - v.p));
	json_t *out;

	if (!buf)
		return NULL;
	out = json_string(buf);
	free(buf);
	return out;
}

/* One message of known fields into a JSON object (fields by number). */
static int decode_message(struct decoder *d, const struct pb_message *m, struct reader r,
			  json_t *obj, int depth);

/* metav1.Time {seconds = 1, nanos = 2}: RFC 3339 to the second, as Go marshals it. */
static json_t *time_of(struct reader m)
{
	uint64_t v[SMALL_FIELDS + 1] = {};
	struct reader s[SMALL_FIELDS + 1] = {};
	char buf[64];
	struct tm tm;
	time_t t;

	if (read_small(m, v, s) < 0)
		return NULL;
	if (v[1] == 0)
		return json_null();
	t = (time_t)(int64_t)v[1];
	if (!gmtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return NULL;
	return json_string(buf);
}

/* intstr.IntOrString {type = 1 (0 int, 1 string), intVal = 2, strVal = 3}. */
static json_t *int_or_string_of(struct reader m)
{
	uint64_t v[SMALL_FIELDS + 1] = {};
	struct reader s[SMALL_FIELDS + 1] = {};

	if (read_small(m, v, s) < 0)
		return NULL;
	if (v[1] == 1)
		return s[3].p ? string_of(s[3]) : json_string("");
	return json_integer((int32_t)(uint32_t)v[2]);
}

/* resource.Quantity {string = 1}: the string, as Go marshals a Quantity. */
static json_t *quantity_of(struct reader m)
{
	uint64_t v[SMALL_FIELDS + 1] = {};
	struct reader s[SMALL_FIELDS + 1] = {};

	if (read_small(m, v, s) < 0)
		return NULL;
	return s[1].p ? string_of(s[1]) : json_string("0");
}

/* A map<string, X> entry into obj[name] (the object made on the first entry). */
static int decode_map_entry(struct decoder *d, const struct pb_field *f, struct reader v,
			    json_t *obj)
{
	static const uint8_t none[1];
	uint64_t x[SMALL_FIELDS + 1] = {};
	struct reader s[SMALL_FIELDS + 1] = {}, key = { none, none }, value = { none, none };
	json_t *map = json_object_get(obj, f->name), *k, *val = NULL;

	/* A map entry {key = 1, value = 2}: either may be absent (empty). */
	if (read_small(v, x, s) < 0)
		return fail(d, -EBADMSG, "%s.%s: malformed map entry", d->path, f->name);
	key = s[1].p ? s[1] : key;
	value = s[2].p ? s[2] : value;
	k = string_of(key); /* NULL: not UTF-8 or holds a NUL */
	if (f->type == PB_MAP_STRING)
		val = string_of(value);
	else if (f->type == PB_MAP_BYTES)
		val = base64_of(value);
	else if (f->type == PB_MAP_QUANTITY)
		val = quantity_of(value);
	else
		val = time_of(value);
	if (!k || !val || memchr(key.p, '\0', (size_t)(key.end - key.p))) {
		json_decref(k);
		json_decref(val);
		return fail(d, -EBADMSG, "%s.%s: malformed map entry (not UTF-8?)", d->path, f->name);
	}
	if (!map && json_object_set_new(obj, f->name, map = json_object()) < 0) {
		json_decref(k);
		json_decref(val);
		return -ENOMEM;
	}
	if (json_object_set_new(map, json_string_value(k), val) < 0) {
		json_decref(k);
		return -ENOMEM;
	}
	json_decref(k);
	return 0;
}

static bool is_map(enum pb_type t)
{
	return t == PB_MAP_STRING || t == PB_MAP_BYTES || t == PB_MAP_QUANTITY || t == PB_MAP_TIME;
}

static bool is_varint(enum pb_type t)
{
	return t == PB_INT32 || t == PB_INT64 || t == PB_BOOL;
}

static json_t *scalar_of(enum pb_type t, uint64_t v)
{
	if (t == PB_BOOL)
		return json_boolean(v != 0);
	if (t == PB_INT32)
		return json_integer((int32_t)(uint32_t)v);
	return json_integer((json_int_t)(int64_t)v);
}

/* Zero scalars of omitempty fields are left out, as Go's encoding/json does. */
static bool omitted(const struct pb_field *f, const json_t *v)
{
	if ((f->flags & (PB_KEEP_ZERO | PB_REPEATED)) || !v)
		return false;
	return (json_is_string(v) && json_string_length(v) == 0) ||
	       (json_is_integer(v) && json_integer_value(v) == 0) || json_is_false(v);
}

/* obj[f->name] = v, or appended to the array there for repeated fields. */
static int put(const struct pb_field *f, json_t *obj, json_t *v)
{
	json_t *arr;

	if (!v)
		return -ENOMEM;
	if (!(f->flags & PB_REPEATED)) {
		if (omitted(f, v)) {
			json_decref(v);
			json_object_del(obj, f->name); /* a later zero wins, as protobuf's last value */
			return 0;
		}
		return json_object_set_new(obj, f->name, v) < 0 ? -ENOMEM : 0;
	}
	arr = json_object_get(obj, f->name);
	if (!arr && json_object_set_new(obj, f->name, arr = json_array()) < 0) {
		json_decref(v);
		return -ENOMEM;
	}
	return json_array_append_new(arr, v) < 0 ? -ENOMEM : 0;
}

/* Packed repeated varints (proto3 style, legal for proto2 readers too). */
static int decode_packed(struct decoder *d, const struct pb_field *f, struct reader v, json_t *obj)
{
	while (v.p < v.end) {
		uint64_t x;
		int r;

		if (read_varint(&v, &x) < 0)
			return fail(d, -EBADMSG, "%s.%s: truncated packed value", d->path, f->name);
		r = put(f, obj, scalar_of(f->type, x));
		if (r < 0)
			return r;
	}
	return 0;
}

/* A length-delimited value of field f. */
static int decode_len(struct decoder *d, const struct pb_field *f, struct reader v, json_t *obj,
		      int depth)
{
	size_t mark = strlen(d->path);
	json_t *sub;
	int r;

	if (is_map(f->type))
		return decode_map_entry(d, f, v, obj);
	if (is_varint(f->type) && (f->flags & PB_REPEATED))
		return decode_packed(d, f, v, obj);
	switch (f->type) {
	case PB_STRING:
		sub = string_of(v);
		if (!sub)
			return fail(d, -EBADMSG, "%s.%s: not a UTF-8 string", d->path, f->name);
		return put(f, obj, sub);
	case PB_BYTES:
		return put(f, obj, base64_of(v));
	case PB_QUANTITY:
		sub = quantity_of(v);
		break;
	case PB_INT_OR_STRING:
		sub = int_or_string_of(v);
		break;
	case PB_TIME:
		sub = time_of(v);
		break;
	case PB_MESSAGE:
		/* A message seen twice merges into one, as protobuf's parsers do. */
		sub = (f->flags & PB_REPEATED) ? NULL : json_incref(json_object_get(obj, f->name));
		if (!sub)
			sub = json_object();
		if (!sub)
			return -ENOMEM;
		snprintf(d->path + mark, sizeof(d->path) - mark, ".%s", f->name);
		r = decode_message(d, f->message, v, sub, depth + 1);
		d->path[mark] = '\0';
		if (r < 0) {
			json_decref(sub);
			return r;
		}
		return put(f, obj, sub);
	default:
		return fail(d, -EBADMSG, "%s.%s: wrong wire type", d->path, f->name);
	}
	if (!sub)
		return fail(d, -EBADMSG, "%s.%s: malformed %s", d->path, f->name,
			    f->type == PB_TIME ? "Time" : f->type == PB_QUANTITY ? "Quantity" : "IntOrString");
	return put(f, obj, sub);
}

static int decode_message(struct decoder *d, const struct pb_message *m, struct reader r,
			  json_t *obj, int depth)
{
	if (depth >= K8S_PROTOBUF_MAX_DEPTH)
		return fail(d, -EBADMSG, "%s: nested too deep", d->path);
	while (r.p < r.end) {
		const struct pb_field *f;
		struct reader v;
		uint32_t number;
		enum wire_type wire;
		uint64_t x;
		bool zero;
		int ret;

		if (read_key(&r, &number, &wire) < 0)
			return fail(d, -EBADMSG, "%s: malformed field key", d->path);
		f = find_field(m, number);
		if (!f) {
			/* A newer client's unset field is harmless; data would be lost. */
			if (skip_value(&r, wire, depth, &zero) < 0)
				return fail(d, -EBADMSG, "%s: truncated field %" PRIu32, d->path, number);
			if (!zero)
				return fail(d, -EPROTONOSUPPORT,
					    "kanna-sim does not decode field %" PRIu32 " of %s (%s) in protobuf",
					    number, m->name, d->path);
			continue;
		}
		if (wire == WIRE_VARINT && is_varint(f->type)) {
			if (read_varint(&r, &x) < 0)
				return fail(d, -EBADMSG, "%s.%s: truncated varint", d->path, f->name);
			ret = put(f, obj, scalar_of(f->type, x));
		} else if (wire == WIRE_LEN) {
			if (read_len(&r, &v) < 0)
				return fail(d, -EBADMSG, "%s.%s: length beyond the body", d->path, f->name);
			ret = decode_len(d, f, v, obj, depth);
		} else
			return fail(d, -EBADMSG, "%s.%s: wire type %d is not its type", d->path, f->name,
				    (int)wire);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* runtime.Unknown {typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2,
 * contentEncoding = 3, contentType = 4}. */
struct unknown {
	struct reader api_version, kind, raw, encoding;
};

static int read_unknown(struct reader r, struct unknown *u)
{
	uint64_t v[SMALL_FIELDS + 1] = {};
	struct reader s[SMALL_FIELDS + 1] = {}, tm[SMALL_FIELDS + 1] = {};

	if (read_small(r, v, s) < 0 || (s[1].p && read_small(s[1], v, tm) < 0))
		return -EBADMSG;
	u->api_version = tm[1];
	u->kind = tm[2];
	u->raw = s[2];
	u->encoding = s[3];
	return 0;
}

static int set_error(struct k8s_error *err, const struct k8s_resource *res, struct decoder *d)
{
	if (d->r == -EPROTONOSUPPORT)
		k8s_error_set(err, 415, "UnsupportedMediaType",
			      "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (%s; send it as JSON, e.g. with kubectl create -f)",
			      d->msg);
	else if (d->what)
		k8s_error_set(err, 400, "BadRequest", "%s cannot be handled as a %s: %s", d->what,
			      res->kind, d->msg);
	else
		k8s_error_set(err, 400, "BadRequest", "the object provided is unrecognized (must be of type %s): %s",
			      res->kind, d->msg);
	return d->r;
}

int k8s_protobuf_decode(const void *body, size_t len, const struct k8s_resource *res,
			json_t **ret, struct k8s_error *err)
{
	struct reader r = { (const uint8_t *)body, (const uint8_t *)body + len };
	struct unknown u = {};
	struct decoder d = {};
	const struct pb_message *m;
	json_t *api_version, *kind, *obj = NULL;
	char what[256];
	int rr;

	*ret = NULL;
	if (res->custom) {
		/* kube-apiserver decodes no protobuf for custom resources either. */
		k8s_error_set(err, 415, "UnsupportedMediaType",
			      "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml");
		return -EPROTONOSUPPORT;
	}
	if (len < K8S_PROTOBUF_MAGIC_LEN || memcmp(body, K8S_PROTOBUF_MAGIC, K8S_PROTOBUF_MAGIC_LEN) != 0) {
		fail(&d, -EBADMSG, "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]");
		return set_error(err, res, &d);
	}
	r.p += K8S_PROTOBUF_MAGIC_LEN;
	if (read_unknown(r, &u) < 0) {
		fail(&d, -EBADMSG, "malformed runtime.Unknown envelope");
		return set_error(err, res, &d);
	}
	api_version = u.api_version.p ? string_of(u.api_version) : json_string("");
	kind = u.kind.p ? string_of(u.kind) : json_string("");
	if (!api_version || !kind) {
		json_decref(api_version);
		json_decref(kind);
		fail(&d, -EBADMSG, "the envelope's apiVersion or kind is not a string");
		return set_error(err, res, &d);
	}
	/* Upstream names the version alone: Deployment in version "v1". */
	snprintf(what, sizeof(what), "%s in version \"%s\"", json_string_value(kind),
		 strrchr(json_string_value(api_version), '/') ?
			 strrchr(json_string_value(api_version), '/') + 1 :
			 json_string_value(api_version));
	d.what = what;
	m = k8s_protobuf_message(json_string_value(api_version), json_string_value(kind));
	if (!u.raw.p || json_string_length(kind) == 0)
		fail(&d, -EBADMSG, "the envelope carries no object or names no kind");
	else if (u.encoding.p && u.encoding.end > u.encoding.p)
		fail(&d, -EPROTONOSUPPORT, "kanna-sim does not decode a content-encoded protobuf body");
	else if (!m)
		fail(&d, -EPROTONOSUPPORT, "kanna-sim decodes protobuf only for the kinds kubectl create generates, not %s",
		     what);
	if (d.r == 0) {
		obj = json_pack("{s:o, s:o}", "kind", json_incref(kind), "apiVersion",
				json_incref(api_version));
		snprintf(d.path, sizeof(d.path), "%s", m->name);
		rr = obj ? decode_message(&d, m, u.raw, obj, 0) : -ENOMEM;
		if (rr == -ENOMEM && d.r == 0) {
			json_decref(obj);
			json_decref(api_version);
			json_decref(kind);
			return -ENOMEM;
		}
	}
	json_decref(api_version);
	json_decref(kind);
	if (d.r < 0) {
		json_decref(obj);
		return set_error(err, res, &d);
	}
	*ret = obj;
	return 0;
}
