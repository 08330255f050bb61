/*
 * Fuzzes kanna-sim's Kubernetes API request handling: the input is
 * "METHOD PATH[?QUERY]\nCONTENT-TYPE\nBODY". It drives path routing,
 * query decoding (selectors, paging, watch and write options: dryRun,
 * fieldManager, pretty), body decoding and
 * every patch format against an in-memory store, and the patch functions
 * directly. No input may crash or leak.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/k8s-api.h"
#include "sim/k8s-patch.h"

/* Rebuild the store this often so that creates cannot grow it forever. */
#define FUZZ_STORE_RESET_RUNS 512
#define FUZZ_MAX_QUERY_ARGS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct query {
	char *keys[FUZZ_MAX_QUERY_ARGS];
	char *values[FUZZ_MAX_QUERY_ARGS];
	size_t n;
};

static const char *query_arg(void *cls, const char *name)
{
	struct query *q = cls;

	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->keys[i], name) == 0)
			return q->values[i];
	return NULL;
}

/* Every value of a repeated parameter (dryRun=All&dryRun=x), in order. */
static size_t query_values(void *cls, const char *name, const char **values, size_t max)
{
	struct query *q = cls;
	size_t n = 0;

	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->keys[i], name) == 0) {
			if (n < max)
				values[n] = q->values[i];
			n++;
		}
	return n;
}

static void query_parse(char *s, struct query *q)
{
	char *save = NULL;

	for (char *tok = strtok_r(s, "&", &save); tok && q->n < FUZZ_MAX_QUERY_ARGS;
	     tok = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(tok, '=');

		if (eq)
			*eq++ = '\0';
		q->keys[q->n] = tok;
		q->values[q->n++] = eq ? eq : (char *)"";
	}
}

static void fuzz_patches(const char *body, size_t len)
{
	static const char target[] =
		"{\"metadata\":{\"name\":\"a\",\"finalizers\":[\"x\"]},\"spec\":{\"containers\":"
		"[{\"name\":\"c\",\"env\":[{\"name\":\"E\"}]}]},\"status\":{\"conditions\":[]}}";
	json_t *t = json_loads(target, 0, NULL);
	json_t *p = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	char err[256];

	for (int type = K8S_PATCH_MERGE; p && type <= K8S_PATCH_STRATEGIC; type++) {
		json_t *out = NULL;

		if (k8s_patch_apply((enum k8s_patch_type)type, t, p, &out, err, sizeof(err)) == 0)
			json_decref(out);
	}
	json_decref(p);
	json_decref(t);
}

static void run_request(struct k8s_api *api, char *text, size_t size)
{
	char *line1 = text, *ct, *body, *path, *q;
	struct query query = {};
	struct k8s_request req = {};
	struct k8s_response resp;

	ct = memchr(text, '\n', size);
	if (!ct)
		return;
	*ct++ = '\0';
	body = strchr(ct, '\n');
	if (body)
		*body++ = '\0';
	else
		body = ct + strlen(ct);
	path = strchr(line1, ' ');
	if (!path)
		return;
	*path++ = '\0';
	q = strchr(path, '?');
	if (q) {
		*q++ = '\0';
		query_parse(q, &query);
	}
	req.method = line1;
	req.path = path;
	req.content_type = ct;
	req.accept = ct; /* one line drives both: "...;as=Table;g=meta.k8s.io" */
	req.body = body;
	req.body_len = size - (size_t)(body - text);
	req.arg = query_arg;
	req.arg_values = query_values;
	req.arg_cls = &query;
	if (k8s_api_handle(api, &req, &resp) == 0 && resp.body)
		json_decref(json_loadb(resp.body, resp.len, JSON_DECODE_ANY, NULL));
	/* Watch streams are created and dropped, never read: reading blocks. */
	k8s_response_clear(&resp);
	fuzz_patches(req.body, req.body_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct k8s_registry *reg;
	static struct k8s_store *store;
	static unsigned runs;
	struct k8s_api api;
	char *text;

	if (!store || ++runs % FUZZ_STORE_RESET_RUNS == 0) {
		store = k8s_store_free(store);
		reg = k8s_registry_free(reg);
		reg = k8s_registry_new();
		if (!reg || k8s_store_new(reg, 1024, &store) < 0 || k8s_store_seed(store) < 0)
			abort();
	}
	k8s_api_init(&api, reg, store);
	snprintf(api.server_address, sizeof(api.server_address), "127.0.0.1:6443");
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	run_request(&api, text, size);
	k8s_api_done(&api);
	free(text);
	return 0;
}
