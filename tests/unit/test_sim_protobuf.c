/* kanna-sim's protobuf request bodies: what kubectl's create generators
 * send decodes into the JSON they would send, created through the API;
 * truncated and malformed bodies are bad requests with upstream's wording;
 * fields and kinds kanna-sim does not decode are refused (415) unless
 * they only hold zeros. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "sim/k8s-api.h"
#include "sim/k8s-protobuf.h"
#include "tests/unit/sim-protobuf-fixtures.h"

#define PB "application/vnd.kubernetes.protobuf"

static struct k8s_registry *reg;
static struct k8s_store *store;
static struct k8s_api api;

static void setup(void)
{
	json_t *crd = json_loads(
		"{\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":\"nodepools.karpenter.sh\"},"
		"\"spec\":{\"group\":\"karpenter.sh\",\"scope\":\"Cluster\",\"names\":{\"kind\":\"NodePool\","
		"\"plural\":\"nodepools\",\"singular\":\"nodepool\"},\"versions\":[{\"name\":\"v1\","
		"\"served\":true,\"storage\":true}]}}", 0, NULL);

	reg = k8s_registry_new();
	cr_assert_eq(k8s_registry_add_crd(reg, crd), 0);
	json_decref(crd);
	cr_assert_eq(k8s_store_new(reg, 0, &store), 0);
	cr_assert_eq(k8s_store_seed(store), 0);
	k8s_api_init(&api, reg, store);
}

static void teardown(void)
{
	k8s_api_done(&api);
	k8s_store_free(store);
	k8s_registry_free(reg);
}

TestSuite(sim_protobuf, .init = setup, .fini = teardown);

static const struct k8s_resource *resource(const char *group, const char *plural)
{
	const struct k8s_resource *res = k8s_registry_find(reg, group, "v1", plural);

	cr_assert_not_null(res, "%s/%s", group, plural);
	return res;
}

/* decode, expecting r; the error (or "") in msg. */
static json_t *decode(const void *body, size_t len, const char *group, const char *plural,
		      int want, int want_code, char *msg, size_t msglen)
{
	struct k8s_error err = {};
	json_t *out = NULL;
	int r = k8s_protobuf_decode(body, len, resource(group, plural), &out, &err);

	cr_assert_eq(r, want, "decode gave %d (%s), want %d", r, err.message, want);
	cr_assert_eq(err.code, want_code, "code %d (%s)", err.code, err.message);
	if (msg)
		snprintf(msg, msglen, "%.*s", (int)MIN(msglen, sizeof(err.message)), err.message);
	cr_assert_eq(r == 0, out != NULL);
	k8s_error_clear(&err);
	return out;
}

Test(sim_protobuf, decodes_what_kubectl_create_sends_into_the_json_it_would_send)
{
	for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
		const struct fixture *f = &fixtures[i];
		json_t *want = json_loads(f->json, 0, NULL);
		json_t *got = decode(f->pb, f->len, f->group, f->plural, 0, 0, NULL, 0);
		char *a = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
		char *b = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);

		cr_expect(json_equal(got, want), "%s:\n got  %s\n want %s", f->name, a, b);
		free(a);
		free(b);
		json_decref(got);
		json_decref(want);
	}
}

Test(sim_protobuf, every_truncation_inside_the_object_is_a_bad_request)
{
	const struct fixture *f = &fixtures[1]; /* the Deployment */
	/* The envelope ends with empty contentEncoding and contentType (4 bytes). */
	size_t raw_end = f->len - 4;

	for (size_t n = 0; n < raw_end; n++) {
		struct k8s_error err = {};
		json_t *out = NULL;
		int r = k8s_protobuf_decode(f->pb, n, resource(f->group, f->plural), &out, &err);

		cr_assert_eq(r, -EBADMSG, "%zu of %zu bytes decoded: %d", n, f->len, r);
		cr_assert_eq(err.code, 400);
		cr_assert_str_eq(err.reason, "BadRequest");
		cr_assert_null(out);
		k8s_error_clear(&err);
	}
	json_decref(decode(f->pb, raw_end, f->group, f->plural, 0, 0, NULL, 0));
}

/* A tiny protobuf writer for hand-made bodies. */
struct pbw {
	uint8_t buf[512];
	size_t n;
};

static void put_varint(struct pbw *w, uint64_t v)
{
	do {
		cr_assert(w->n < sizeof(w->buf));
		w->buf[w->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void put_len(struct pbw *w, uint32_t field, const void *data, size_t len)
{
	put_varint(w, (uint64_t)field << 3 | 2);
	put_varint(w, len);
	cr_assert(w->n + len <= sizeof(w->buf));
	memcpy(w->buf + w->n, data, len);
	w->n += len;
}

static void put_str(struct pbw *w, uint32_t field, const char *s)
{
	put_len(w, field, s, strlen(s));
}

static void put_msg(struct pbw *w, uint32_t field, const struct pbw *m)
{
	put_len(w, field, m->buf, m->n);
}

static void put_uint(struct pbw *w, uint32_t field, uint64_t v)
{
	put_varint(w, (uint64_t)field << 3);
	put_varint(w, v);
}

/* "k8s\0" + Unknown{typeMeta{apiVersion, kind}, raw}. */
static void envelope(struct pbw *out, const char *api_version, const char *kind, const struct pbw *raw)
{
	struct pbw tm = {};

	memcpy(out->buf, "k8s", 4);
	out->n = 4;
	put_str(&tm, 1, api_version);
	put_str(&tm, 2, kind);
	put_msg(out, 1, &tm);
	put_msg(out, 2, raw);
}

static struct pbw named(const char *name)
{
	struct pbw meta = {}, obj = {};

	put_str(&meta, 1, name);
	put_msg(&obj, 1, &meta);
	return obj;
}

Test(sim_protobuf, an_unknown_field_is_skipped_when_zero_and_refused_with_data)
{
	struct pbw obj = named("x"), body = {}, zero_msg = {}, vol = {}, spec = {}, tmpl = {},
		   dspec = {}, dep = named("web");
	char msg[512];
	json_t *out;

	/* Unset fields of a newer client: a zero varint, an empty string, a message of zeros. */
	put_uint(&obj, 99, 0);
	put_str(&obj, 98, "");
	put_uint(&zero_msg, 1, 0);
	put_msg(&obj, 97, &zero_msg);
	envelope(&body, "v1", "Namespace", &obj);
	out = decode(body.buf, body.n, "", "namespaces", 0, 0, NULL, 0);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(out, "metadata"), "name")), "x");
	cr_assert_eq(json_object_size(out), 3, "kind, apiVersion, metadata");
	json_decref(out);
	/* A volume in a Deployment's pod template would be lost: refused. */
	put_str(&vol, 1, "data");
	put_msg(&spec, 1, &vol);
	put_msg(&tmpl, 2, &spec);
	put_msg(&dspec, 3, &tmpl);
	put_msg(&dep, 2, &dspec);
	envelope(&body, "apps/v1", "Deployment", &dep);
	decode(body.buf, body.n, "apps", "deployments", -EPROTONOSUPPORT, 415, msg, sizeof(msg));
	cr_assert(strstr(msg, "does not decode field 1 of PodSpec (Deployment.spec.template.spec)"), "%s", msg);
	cr_assert(strstr(msg, "accepted media types include: application/json, application/yaml"), "%s", msg);
}

Test(sim_protobuf, kinds_it_does_not_decode_are_refused_and_custom_resources_as_upstream)
{
	struct pbw obj = named("s"), body = {};
	char msg[512];

	envelope(&body, "v1", "Endpoints", &obj);
	decode(body.buf, body.n, "", "configmaps", -EPROTONOSUPPORT, 415, msg, sizeof(msg));
	cr_assert(strstr(msg, "not Endpoints in version \"v1\""), "%s", msg);
	envelope(&body, "karpenter.sh/v1", "NodePool", &obj);
	decode(body.buf, body.n, "karpenter.sh", "nodepools", -EPROTONOSUPPORT, 415, msg, sizeof(msg));
	cr_assert_str_eq(msg, "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml");
}

Test(sim_protobuf, malformed_bodies_are_bad_requests_in_upstreams_words)
{
	static const uint8_t too_long_varint[] = { 'k', '8', 's', 0, 0x0a, 0xff, 0xff, 0xff, 0xff,
						   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const uint8_t group[] = { 'k', '8', 's', 0, 0x0b, 0x0c };
	struct pbw obj = {}, body = {}, meta = {};
	char msg[512];

	decode("{\"kind\":\"Namespace\"}", 20, "", "namespaces", -EBADMSG, 400, msg, sizeof(msg));
	cr_assert_str_eq(msg, "the object provided is unrecognized (must be of type Namespace): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]");
	decode(too_long_varint, sizeof(too_long_varint), "", "namespaces", -EBADMSG, 400, NULL, 0);
	decode(group, sizeof(group), "", "namespaces", -EBADMSG, 400, NULL, 0);
	/* metadata.name as a varint: the wrong wire type. */
	put_uint(&meta, 1, 7);
	put_msg(&obj, 1, &meta);
	envelope(&body, "v1", "Namespace", &obj);
	decode(body.buf, body.n, "", "namespaces", -EBADMSG, 400, msg, sizeof(msg));
	cr_assert(strstr(msg, "Namespace in version \"v1\" cannot be handled as a Namespace: Namespace.metadata.name:") == msg,
		  "%s", msg);
	/* A string that is not UTF-8. */
	obj = named("\xff\xfe");
	envelope(&body, "v1", "Namespace", &obj);
	decode(body.buf, body.n, "", "namespaces", -EBADMSG, 400, NULL, 0);
}

Test(sim_protobuf, a_message_seen_twice_merges_and_the_last_scalar_wins)
{
	struct pbw obj = named("first"), body = {}, meta = {};
	json_t *out, *m;

	put_str(&meta, 1, "second");
	put_len(&meta, 11, "\x0a\x03" "app\x12\x03" "web", 10); /* labels {app: web} */
	put_msg(&obj, 1, &meta);
	envelope(&body, "v1", "Namespace", &obj);
	out = decode(body.buf, body.n, "", "namespaces", 0, 0, NULL, 0);
	m = json_object_get(out, "metadata");
	cr_assert_str_eq(json_string_value(json_object_get(m, "name")), "second");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "labels"), "app")), "web");
	json_decref(out);
}

static int post(const char *path, const struct fixture *f, json_t **body)
{
	struct k8s_request req = {
		.method = "POST", .path = path, .content_type = PB, .accept = PB ",application/json",
		.body = (const char *)f->pb, .body_len = f->len,
	};
	struct k8s_response resp;
	int status;

	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	status = resp.status;
	*body = json_loadb(resp.body, resp.len, 0, NULL);
	k8s_response_clear(&resp);
	return status;
}

Test(sim_protobuf, kubectl_create_bodies_create_objects_through_the_api)
{
	json_t *out = NULL;

	cr_assert_eq(post("/api/v1/namespaces", &fixtures[0], &out), 201);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(out, "metadata"), "name")), "team-b");
	cr_assert_not_null(json_object_get(json_object_get(out, "metadata"), "uid"));
	json_decref(out);
	cr_assert_eq(post("/apis/apps/v1/namespaces/default/deployments", &fixtures[1], &out), 201);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(out, "spec"), "replicas")), 3);
	json_decref(out);
	/* The same body again is a conflict, as with JSON. */
	cr_assert_eq(post("/apis/apps/v1/namespaces/default/deployments", &fixtures[1], &out), 409);
	json_decref(out);
	/* A Deployment body posted where namespaces are created is not a Namespace. */
	cr_assert_eq(post("/api/v1/namespaces", &fixtures[1], &out), 400);
	json_decref(out);
}
