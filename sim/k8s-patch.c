/*
 * PATCH application for kanna-sim: RFC 7386 merge patch, RFC 6902 JSON patch
 * and Kubernetes strategic merge patch (lists merged by the keys kubectl's
 * built-in types declare: containers/env/volumes by name, conditions by
 * type, ports by containerPort, volumeMounts by mountPath, ...; every other
 * list is replaced as in a merge patch). Called by the request handlers;
 * never sees the store. Targets are copied, never modified in place.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-patch.h"

int k8s_patch_type_from_content_type(const char *ct, enum k8s_patch_type *ret)
{
	size_t n;

	if (!ct)
		return -EINVAL;
	n = strcspn(ct, "; ");
	if (n == strlen("application/merge-patch+json") &&
	    strncmp(ct, "application/merge-patch+json", n) == 0)
		*ret = K8S_PATCH_MERGE;
	else if (n == strlen("application/json-patch+json") &&
		 strncmp(ct, "application/json-patch+json", n) == 0)
		*ret = K8S_PATCH_JSON;
	else if (n == strlen("application/strategic-merge-patch+json") &&
		 strncmp(ct, "application/strategic-merge-patch+json", n) == 0)
		*ret = K8S_PATCH_STRATEGIC;
	else if (n == strlen("application/apply-patch+yaml") &&
		 strncmp(ct, "application/apply-patch+yaml", n) == 0)
		*ret = K8S_PATCH_APPLY;
	else
		return -EINVAL;
	return 0;
}

/* ---- RFC 7386 ---------------------------------------------------------- */

static json_t *merge(const json_t *target, const json_t *patch, int depth)
{
	json_t *out;
	const char *key;
	json_t *v;

	if (depth > K8S_PATCH_MAX_DEPTH)
		return NULL;
	if (!json_is_object(patch))
		return json_deep_copy(patch);
	out = json_is_object(target) ? json_deep_copy(target) : json_object();
	if (!out)
		return NULL;
	json_object_foreach((json_t *)patch, key, v) {
		json_t *merged;

		if (json_is_null(v)) {
			json_object_del(out, key);
			continue;
		}
		merged = merge(json_object_get(out, key), v, depth + 1);
		if (!merged || json_object_set_new(out, key, merged) < 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

int k8s_merge_patch(const json_t *target, const json_t *patch, json_t **ret,
		    char *err, size_t errlen)
{
	json_t *out;

	if (!json_is_object(patch)) {
		snprintf(err, errlen, "merge patch must be a JSON object");
		return -EINVAL;
	}
	out = merge(target, patch, 0);
	if (!out) {
		snprintf(err, errlen, "merge patch nested too deeply");
		return -EINVAL;
	}
	*ret = out;
	return 0;
}

/* ---- RFC 6902 ---------------------------------------------------------- */

/* Decodes one reference token ("a~1b" → "a/b") into buf. */
static int pointer_token(const char **pp, char *buf, size_t buflen)
{
	const char *p = *pp;
	size_t n = 0;

	if (*p != '/')
		return -EINVAL;
	p++;
	while (*p && *p != '/') {
		char c = *p++;

		if (c == '~') {
			if (*p == '0')
				c = '~';
			else if (*p == '1')
				c = '/';
			else
				return -EINVAL;
			p++;
		}
		if (n + 1 >= buflen)
			return -EINVAL;
		buf[n++] = c;
	}
	buf[n] = '\0';
	*pp = p;
	return 0;
}

static int array_index(const char *tok, size_t size, bool allow_end,
		       size_t *ret)
{
	char *end;
	unsigned long v;

	if (allow_end && streq(tok, "-")) {
		*ret = size;
		return 0;
	}
	if (!*tok || (tok[0] == '0' && tok[1]) || tok[0] < '0' || tok[0] > '9')
		return -EPROTO;
	errno = 0;
	v = strtoul(tok, &end, 10);
	if (errno || *end || v > size || (!allow_end && v == size))
		return -EPROTO;
	*ret = v;
	return 0;
}

/*
 * Resolves all but the last token of `path` inside doc; returns the parent
 * container and copies the last token into last. The root ("") is reported
 * with *parent = NULL.
 */
static int pointer_parent(json_t *doc, const char *path, json_t **parent,
			  char *last, size_t lastlen)
{
	const char *p = path;
	json_t *cur = doc;
	char tok[512];
	int r;

	if (!*p) {
		*parent = NULL;
		return 0;
	}
	r = pointer_token(&p, tok, sizeof(tok));
	if (r < 0)
		return r;
	while (*p) {
		size_t idx;

		if (json_is_object(cur))
			cur = json_object_get(cur, tok);
		else if (json_is_array(cur) &&
			 array_index(tok, json_array_size(cur), false, &idx) == 0)
			cur = json_array_get(cur, idx);
		else
			cur = NULL;
		if (!cur)
			return -EPROTO;
		r = pointer_token(&p, tok, sizeof(tok));
		if (r < 0)
			return r;
	}
	if (strlen(tok) >= lastlen)
		return -EINVAL;
	strcpy(last, tok);
	*parent = cur;
	return 0;
}

static json_t *pointer_get(json_t *doc, const char *path)
{
	json_t *parent;
	char last[512];
	size_t idx;

	if (pointer_parent(doc, path, &parent, last, sizeof(last)) < 0)
		return NULL;
	if (!parent)
		return doc;
	if (json_is_object(parent))
		return json_object_get(parent, last);
	if (json_is_array(parent) &&
	    array_index(last, json_array_size(parent), false, &idx) == 0)
		return json_array_get(parent, idx);
	return NULL;
}

/* add/replace: value is stolen. *doc may be replaced when path is "". */
static int pointer_put(json_t **doc, const char *path, json_t *value,
		       bool replace)
{
	json_t *parent;
	char last[512];
	size_t idx;
	int r;

	r = pointer_parent(*doc, path, &parent, last, sizeof(last));
	if (r < 0)
		goto fail;
	if (!parent) {
		json_decref(*doc);
		*doc = value;
		return 0;
	}
	if (json_is_object(parent)) {
		if (replace && !json_object_get(parent, last)) {
			r = -EPROTO;
			goto fail;
		}
		return json_object_set_new(parent, last, value) < 0 ? -ENOMEM : 0;
	}
	if (json_is_array(parent)) {
		r = array_index(last, json_array_size(parent), !replace, &idx);
		if (r < 0)
			goto fail;
		if (replace)
			return json_array_set_new(parent, idx, value) < 0 ? -ENOMEM : 0;
		return json_array_insert_new(parent, idx, value) < 0 ? -ENOMEM : 0;
	}
	r = -EPROTO;
fail:
	json_decref(value);
	return r;
}

static int pointer_remove(json_t *doc, const char *path)
{
	json_t *parent;
	char last[512];
	size_t idx;
	int r;

	r = pointer_parent(doc, path, &parent, last, sizeof(last));
	if (r < 0)
		return r;
	if (!parent)
		return -EPROTO;
	if (json_is_object(parent))
		return json_object_del(parent, last) < 0 ? -EPROTO : 0;
	if (json_is_array(parent) &&
	    array_index(last, json_array_size(parent), false, &idx) == 0)
		return json_array_remove(parent, idx) < 0 ? -EPROTO : 0;
	return -EPROTO;
}

static int json_patch_op(json_t **doc, const json_t *op, char *err,
			 size_t errlen)
{
	const char *name = json_string_value(json_object_get(op, "op"));
	const char *path = json_string_value(json_object_get(op, "path"));
	const char *from = json_string_value(json_object_get(op, "from"));
	json_t *value = json_object_get(op, "value");
	json_t *src;
	int r;

	if (!name || !path) {
		snprintf(err, errlen, "json patch operation needs \"op\" and \"path\"");
		return -EINVAL;
	}
	if ((streq(name, "add") || streq(name, "replace") || streq(name, "test")) &&
	    !value) {
		snprintf(err, errlen, "json patch %s operation needs \"value\"", name);
		return -EINVAL;
	}
	if ((streq(name, "move") || streq(name, "copy")) && !from) {
		snprintf(err, errlen, "json patch %s operation needs \"from\"", name);
		return -EINVAL;
	}
	if (streq(name, "add"))
		r = pointer_put(doc, path, json_deep_copy(value), false);
	else if (streq(name, "replace"))
		r = pointer_put(doc, path, json_deep_copy(value), true);
	else if (streq(name, "remove"))
		r = pointer_remove(*doc, path);
	else if (streq(name, "test")) {
		src = pointer_get(*doc, path);
		r = src && json_equal(src, value) ? 0 : -EPROTO;
		if (r < 0) {
			snprintf(err, errlen, "testing value %s failed", path);
			return r;
		}
	} else if (streq(name, "copy") || streq(name, "move")) {
		src = pointer_get(*doc, from);
		if (!src) {
			snprintf(err, errlen, "json patch %s: from %s not found", name, from);
			return -EPROTO;
		}
		if (streq(name, "move") && strncmp(path, from, strlen(from)) == 0 &&
		    path[strlen(from)] == '/') {
			snprintf(err, errlen, "json patch move into its own child");
			return -EPROTO;
		}
		src = json_deep_copy(src);
		if (!src)
			return -ENOMEM;
		r = streq(name, "move") ? pointer_remove(*doc, from) : 0;
		if (r < 0) {
			json_decref(src);
		} else
			r = pointer_put(doc, path, src, false);
	} else {
		snprintf(err, errlen, "unknown json patch operation \"%s\"", name);
		return -EINVAL;
	}
	if (r == -EINVAL)
		snprintf(err, errlen, "invalid json pointer \"%s\"", path);
	else if (r < 0)
		snprintf(err, errlen, "json patch %s: path %s cannot be applied", name, path);
	return r;
}

int k8s_json_patch(const json_t *target, const json_t *patch, json_t **ret,
		   char *err, size_t errlen)
{
	json_t *doc, *op;
	size_t i;
	int r;

	if (!json_is_array(patch) || json_array_size(patch) > K8S_PATCH_MAX_OPS) {
		snprintf(err, errlen, "json patch must be an array of at most %d operations",
			 K8S_PATCH_MAX_OPS);
		return -EINVAL;
	}
	doc = json_deep_copy(target);
	if (!doc)
		return -ENOMEM;
	json_array_foreach(patch, i, op) {
		if (!json_is_object(op)) {
			snprintf(err, errlen, "json patch operation %zu is not an object", i);
			json_decref(doc);
			return -EINVAL;
		}
		r = json_patch_op(&doc, op, err, errlen);
		if (r < 0) {
			json_decref(doc);
			return r;
		}
	}
	*ret = doc;
	return 0;
}

/* ---- strategic merge patch -------------------------------------------- */

/* List fields whose elements merge by a key (patchMergeKey in k8s.io/api). */
static const struct {
	const char *field;
	const char *key;
} smp_merge_keys[] = {
	{ "containers", "name" },     { "initContainers", "name" },
	{ "ephemeralContainers", "name" }, { "env", "name" },
	{ "volumes", "name" },        { "volumeMounts", "mountPath" },
	{ "volumeDevices", "devicePath" }, { "conditions", "type" },
	{ "imagePullSecrets", "name" }, { "ownerReferences", "uid" },
	{ "hostAliases", "ip" },      { "ports", "containerPort" },
	{ "topologySpreadConstraints", "topologyKey" },
};

/* Primitive lists merged as sets (patchStrategy=merge). */
static bool smp_is_set_list(const char *field)
{
	return streq(field, "finalizers");
}

static const char *smp_merge_key(const char *field, const json_t *list)
{
	for (size_t i = 0; i < ARRAY_SIZE(smp_merge_keys); i++) {
		if (!streq(field, smp_merge_keys[i].field))
			continue;
		/* Service ports merge by "port", container ports by containerPort. */
		if (streq(field, "ports")) {
			const json_t *first = json_array_get(list, 0);

			if (first && !json_object_get(first, "containerPort"))
				return "port";
		}
		return smp_merge_keys[i].key;
	}
	return NULL;
}

static json_t *smp_merge(const json_t *target, const json_t *patch, int depth);

static ssize_t smp_find(const json_t *list, const char *key, const json_t *value)
{
	const json_t *e;
	size_t i;

	json_array_foreach(list, i, e)
		if (json_equal(json_object_get(e, key), (json_t *)value))
			return (ssize_t)i;
	return -1;
}

static json_t *smp_merge_list(const json_t *target, const json_t *patch,
			      const char *field, int depth)
{
	const char *key = smp_merge_key(field, patch);
	json_t *out, *e;
	size_t i;

	if (json_array_size(patch) > 0 &&
	    streq_ptr(json_string_value(json_object_get(json_array_get(patch, 0), "$patch")),
		      "replace")) {
		out = json_array();
		json_array_foreach(patch, i, e)
			if (i > 0)
				json_array_append(out, e);
		return out;
	}
	if (!json_is_array(target))
		target = NULL;
	if (smp_is_set_list(field)) {
		out = target ? json_deep_copy(target) : json_array();
		json_array_foreach(patch, i, e) {
			size_t j;
			json_t *t;
			bool found = false;

			json_array_foreach(out, j, t)
				found = found || json_equal(t, e);
			if (!found)
				json_array_append(out, e);
		}
		return out;
	}
	if (!key)
		return json_deep_copy(patch);
	out = target ? json_deep_copy(target) : json_array();
	json_array_foreach(patch, i, e) {
		const json_t *kv = json_object_get(e, key);
		const char *directive = json_string_value(json_object_get(e, "$patch"));
		ssize_t at = kv ? smp_find(out, key, kv) : -1;

		if (directive && streq(directive, "delete")) {
			if (at >= 0)
				json_array_remove(out, (size_t)at);
			continue;
		}
		if (at >= 0) {
			json_t *m = smp_merge(json_array_get(out, (size_t)at), e, depth + 1);

			if (!m) {
				json_decref(out);
				return NULL;
			}
			json_array_set_new(out, (size_t)at, m);
		} else {
			json_t *m = smp_merge(NULL, e, depth + 1);

			if (!m) {
				json_decref(out);
				return NULL;
			}
			json_array_append_new(out, m);
		}
	}
	return out;
}

static void smp_delete_from_primitive_list(json_t *out, const char *field,
					   const json_t *values)
{
	json_t *list = json_object_get(out, field);
	const json_t *v;
	size_t i;

	json_array_foreach(values, i, v) {
		size_t j;
		json_t *e;

		json_array_foreach(list, j, e)
			if (json_equal(e, (json_t *)v)) {
				json_array_remove(list, j);
				break;
			}
	}
}

static json_t *smp_merge(const json_t *target, const json_t *patch, int depth)
{
	const char *directive, *key;
	json_t *out, *v;

	if (depth > K8S_PATCH_MAX_DEPTH)
		return NULL;
	if (!json_is_object(patch))
		return json_deep_copy(patch);
	directive = json_string_value(json_object_get(patch, "$patch"));
	if (directive && streq(directive, "replace")) {
		out = json_deep_copy(patch);
		if (out)
			json_object_del(out, "$patch");
		return out;
	}
	if (directive && streq(directive, "delete"))
		return json_null();
	out = json_is_object(target) ? json_deep_copy(target) : json_object();
	json_object_foreach((json_t *)patch, key, v) {
		json_t *m;

		if (key[0] == '$') {
			if (strncmp(key, "$deleteFromPrimitiveList/", 25) == 0)
				smp_delete_from_primitive_list(out, key + 25, v);
			/* $setElementOrder and $retainKeys only order or prune. */
			continue;
		}
		if (json_is_null(v)) {
			json_object_del(out, key);
			continue;
		}
		if (json_is_array(v))
			m = smp_merge_list(json_object_get(out, key), v, key, depth + 1);
		else
			m = smp_merge(json_object_get(out, key), v, depth + 1);
		if (!m) {
			json_decref(out);
			return NULL;
		}
		if (json_is_null(m) && json_is_object(v)) {
			json_decref(m);
			json_object_del(out, key);
			continue;
		}
		json_object_set_new(out, key, m);
	}
	return out;
}

int k8s_strategic_merge_patch(const json_t *target, const json_t *patch,
			      json_t **ret, char *err, size_t errlen)
{
	json_t *out;

	if (!json_is_object(patch)) {
		snprintf(err, errlen, "strategic merge patch must be a JSON object");
		return -EINVAL;
	}
	out = smp_merge(target, patch, 0);
	if (!out) {
		snprintf(err, errlen, "strategic merge patch nested too deeply");
		return -EINVAL;
	}
	*ret = out;
	return 0;
}

int k8s_patch_apply(enum k8s_patch_type type, const json_t *target,
		    const json_t *patch, json_t **ret, char *err, size_t errlen)
{
	switch (type) {
	case K8S_PATCH_JSON:
		return k8s_json_patch(target, patch, ret, err, errlen);
	case K8S_PATCH_STRATEGIC:
		return k8s_strategic_merge_patch(target, patch, ret, err, errlen);
	case K8S_PATCH_MERGE:
	case K8S_PATCH_APPLY:
		break;
	}
	return k8s_merge_patch(target, patch, ret, err, errlen);
}
