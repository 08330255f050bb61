/*
 * Building blocks of the Kubernetes JSON decoders (see decode.h): metadata,
 * label maps, requirements and selectors, tolerations and taints, resource
 * lists, durations and timestamps. Each checks the JSON type of what it
 * reads and says where it was when it is wrong.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/quantity.h"
#include "decode/decode.h"

int decode_fail(struct decoder *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->error, sizeof(d->error), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int decode_prefix(struct decoder *d, const char *what, const char *ns, const char *name, int r)
{
	char msg[DECODE_ERROR_MAX];

	if (r != -EINVAL)
		return r;
	snprintf(msg, sizeof(msg), "%s", d->error);
	decode_fail(d, "%s %s%s%s: %s", what, ns && *ns ? ns : "", ns && *ns ? "/" : "",
		    name ? name : "", msg);
	return r;
}

void decode_path(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

const json_t *decode_path_of(const json_t *v, char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	buf[0] = '\0';
	if (!v || json_is_null(v))
		return v;
	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return v;
}

const json_t *json_path(const json_t *o, const char *dotted)
{
	char key[128];

	while (o && *dotted) {
		size_t n = strcspn(dotted, ".");
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, dotted, n);
		key[n] = '\0';
		o = json_object_get(o, key);
		dotted += n;
		if (*dotted == '.')
			dotted++;
	}
	return o;
}

int decode_list(struct decoder *d, const json_t *arr, const char *where, size_t max,
		const char *what, size_t elem_size, void **ret)
{
	size_t n;

	*ret = NULL;
	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return decode_fail(d, "%s: expected a list of %s", where, what);
	n = json_array_size(arr);
	if (n > max)
		return decode_fail(d, "%s: %zu %s exceed the limit of %zu", where, n, what, max);
	if (n == 0)
		return 0;
	*ret = arena_calloc(d->arena, n, elem_size);
	return *ret ? (int)n : -ENOMEM;
}

int decode_string(struct decoder *d, const json_t *o, const char *key, const char *where,
		  char **ret)
{
	const json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return decode_fail(d, "%s.%s: expected a string", where, key);
	*ret = arena_strdup(d->arena, json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

int decode_kv(struct decoder *d, const json_t *map, const char *where, uint32_t max_entries,
	      size_t max_value, struct proto_kv **ret, uint32_t *n)
{
	const char *k;
	const json_t *v;
	uint32_t i = 0;

	*ret = NULL;
	*n = 0;
	if (!map || json_is_null(map))
		return 0;
	if (!json_is_object(map))
		return decode_fail(d, "%s: expected a map of strings", where);
	if (json_object_size(map) > max_entries)
		return decode_fail(d, "%s: %zu entries exceed the limit of %u", where,
				   json_object_size(map), max_entries);
	*ret = arena_calloc(d->arena, json_object_size(map) + 1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	json_object_foreach((json_t *)map, k, v) {
		if (!json_is_string(v))
			return decode_fail(d, "%s.%s: expected a string", where, k);
		if (strlen(k) > PROTO_MAX_KEY_LEN)
			return decode_fail(d, "%s: key of %zu bytes exceeds the limit of %u", where,
					   strlen(k), PROTO_MAX_KEY_LEN);
		if (json_string_length(v) > max_value)
			return decode_fail(d, "%s.%s: value of %zu bytes exceeds the limit of %zu", where,
					   k, json_string_length(v), max_value);
		(*ret)[i].key = arena_strdup(d->arena, k);
		(*ret)[i].value = arena_strdup(d->arena, json_string_value(v));
		if (!(*ret)[i].key || !(*ret)[i].value)
			return -ENOMEM;
		i++;
	}
	*n = i;
	return 0;
}

int decode_strings(struct decoder *d, const json_t *arr, const char *where, char ***ret,
		   uint32_t *n)
{
	const json_t *v;
	size_t i;

	*ret = NULL;
	*n = 0;
	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return decode_fail(d, "%s: expected a list of strings", where);
	*ret = arena_calloc(d->arena, json_array_size(arr) + 1, sizeof(char *));
	if (!*ret)
		return -ENOMEM;
	json_array_foreach(arr, i, v) {
		if (json_is_string(v))
			(*ret)[i] = arena_strdup(d->arena, json_string_value(v));
		else if (json_is_integer(v)) { /* YAML "values: [3]" for Gt/Lt */
			char buf[24];
			snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			(*ret)[i] = arena_strdup(d->arena, buf);
		} else
			return decode_fail(d, "%s[%zu]: expected a string", where, i);
		if (!(*ret)[i])
			return -ENOMEM;
	}
	*n = (uint32_t)json_array_size(arr);
	return 0;
}

int64_t decode_time_ms(const json_t *v)
{
	struct tm tm = { 0 };
	const char *s = json_string_value(v), *end;

	if (!s)
		return 0;
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return 0;
	return (int64_t)timegm(&tm) * 1000;
}

/* RFC 3339 as the API server validates format: date-time: a fraction
 * (kept to the millisecond), then Z or a ±hh:mm offset. */
int decode_time(struct decoder *d, const json_t *o, const char *key, const char *where,
		int64_t *ret)
{
	const json_t *v = json_object_get(o, key);
	const char *s = json_string_value(v), *p;
	struct tm tm = { 0 };
	int64_t ms = 0, scale = 100;
	int oh, om;

	*ret = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!s || !(p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
		goto bad;
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			goto bad;
		for (; isdigit((unsigned char)*p); p++, scale /= 10)
			ms += (*p - '0') * scale;
	}
	ms += (int64_t)timegm(&tm) * 1000;
	if (*p == 'Z' || *p == 'z')
		p++;
	else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
		 isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
		 isdigit((unsigned char)p[5]) && (oh = (p[1] - '0') * 10 + p[2] - '0') < 24 &&
		 (om = (p[4] - '0') * 10 + p[5] - '0') < 60) {
		ms -= (*p == '-' ? -1 : 1) * ((int64_t)oh * 3600 + om * 60) * 1000;
		p += 6;
	} else
		goto bad;
	if (*p)
		goto bad;
	*ret = ms;
	return 0;
bad:
	return decode_fail(d, "%s.%s: expected an RFC 3339 time like 2024-01-02T15:04:05Z", where,
			   key);
}

int decode_metadata(struct decoder *d, const json_t *obj, const char *kind, bool namespaced,
		    struct decoded_meta *ret)
{
	const json_t *meta = json_object_get(obj, "metadata");
	int r;

	*ret = (struct decoded_meta){ 0 };
	if (!json_is_object(obj))
		return decode_fail(d, "%s: expected an object", kind);
	if (!json_is_object(meta))
		return decode_fail(d, "%s: metadata is missing", kind);
	if ((r = decode_string(d, meta, "name", "metadata", &ret->name)) < 0 ||
	    (r = decode_string(d, meta, "namespace", "metadata", &ret->ns)) < 0 ||
	    (r = decode_string(d, meta, "uid", "metadata", &ret->uid)) < 0 ||
	    (r = decode_string(d, meta, "resourceVersion", "metadata", &ret->resource_version)) < 0)
		return r;
	if (!ret->name || !*ret->name)
		return decode_fail(d, "%s: metadata.name is missing", kind);
	if (namespaced && (!ret->ns || !*ret->ns))
		return decode_fail(d, "%s %s: metadata.namespace is missing", kind, ret->name);
	if (!ret->uid) {
		/* Offline inputs (--simulate) may omit uids: derive a stable one. */
		ret->uid = arena_alloc(d->arena, PROTO_MAX_NAME_LEN);
		if (!ret->uid)
			return -ENOMEM;
		snprintf(ret->uid, PROTO_MAX_NAME_LEN, "%s/%s/%s", kind, ret->ns ? ret->ns : "",
			 ret->name);
	}
	ret->creation_ms = decode_time_ms(json_object_get(meta, "creationTimestamp"));
	ret->deletion_ms = decode_time_ms(json_object_get(meta, "deletionTimestamp"));
	ret->labels = json_object_get(meta, "labels");
	ret->annotations = json_object_get(meta, "annotations");
	if (ret->labels && !json_is_object(ret->labels) && !json_is_null(ret->labels))
		return decode_fail(d, "%s %s: metadata.labels: expected a map", kind, ret->name);
	if (ret->annotations && !json_is_object(ret->annotations) && !json_is_null(ret->annotations))
		return decode_fail(d, "%s %s: metadata.annotations: expected a map", kind, ret->name);
	return 0;
}

/*
 * karpenter: Karpenter's NodeSelectorRequirementWithMinValues (v1 NodePools,
 * NodeClaims), whose operators add Gte and Lte to the core v1 six (the
 * shipped CRDs' enum; kubernetes-sigs/karpenter pkg/apis/v1
 * NodeSelectorOpGte/NodeSelectorOpLte). Pods' node selectors have the six.
 */
static int requirement_op(const char *s, bool karpenter)
{
	static const char *const ops[] = { "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt",
					   "Gte", "Lte" };
	size_t n = karpenter ? ARRAY_SIZE(ops) : 6;

	for (size_t i = 0; i < n; i++)
		if (streq(s, ops[i]))
			return (int)i; /* same order as enum proto_requirement_op */
	return -1;
}

static int requirements(struct decoder *d, const json_t *arr, const char *where, bool karpenter,
			struct proto_requirement **ret, uint32_t *n)
{
	const json_t *e;
	char at[256];
	size_t i;
	int r;

	r = decode_list(d, arr, where, PROTO_MAX_REQUIREMENTS, "requirements", sizeof(**ret),
			(void **)ret);
	*n = 0;
	if (r <= 0)
		return r;
	json_array_foreach(arr, i, e) {
		struct proto_requirement *q = &(*ret)[i];
		const char *op = json_string_value(json_object_get(e, "operator"));
		const json_t *mv = json_object_get(e, "minValues");
		int o;

		decode_path(at, sizeof(at), "%s[%zu]", where, i);
		if (!json_is_object(e))
			return decode_fail(d, "%s: expected an object", at);
		if ((r = decode_string(d, e, "key", at, &q->key)) < 0)
			return r;
		if (!q->key || !*q->key)
			return decode_fail(d, "%s.key: is required", at);
		o = op ? requirement_op(op, karpenter) : -1;
		if (o < 0)
			return decode_fail(d, "%s.operator: '%s' is not one of In, NotIn, Exists, "
					   "DoesNotExist, Gt, Lt%s", at, op ? op : "",
					   karpenter ? ", Gte, Lte" : "");
		q->op = (uint8_t)o;
		snprintf(at + strlen(at), sizeof(at) - strlen(at), ".values");
		if ((r = decode_strings(d, json_object_get(e, "values"), at, &q->values,
					&q->n_values)) < 0)
			return r;
		if (mv && !json_is_null(mv)) {
			if (!json_is_integer(mv) || json_integer_value(mv) < 1 ||
			    json_integer_value(mv) > 50)
				return decode_fail(d, "%s[%zu].minValues: expected an integer from 1 to 50",
						   where, i);
			q->min_values = (uint32_t)json_integer_value(mv);
		}
	}
	*n = (uint32_t)json_array_size(arr);
	return 0;
}

int decode_requirements(struct decoder *d, const json_t *arr, const char *where,
			struct proto_requirement **ret, uint32_t *n)
{
	return requirements(d, arr, where, false, ret, n);
}

int decode_karpenter_requirements(struct decoder *d, const json_t *arr, const char *where,
				  struct proto_requirement **ret, uint32_t *n)
{
	return requirements(d, arr, where, true, ret, n);
}

int decode_node_selector_terms(struct decoder *d, const json_t *arr, const char *where,
			       struct proto_node_selector_term **ret, uint32_t *n)
{
	const json_t *e;
	char at[256];
	size_t i;
	int r;

	r = decode_list(d, arr, where, PROTO_MAX_TERMS, "terms", sizeof(**ret), (void **)ret);
	*n = 0;
	if (r <= 0)
		return r;
	json_array_foreach(arr, i, e) {
		decode_path(at, sizeof(at), "%s[%zu].matchExpressions", where, i);
		r = decode_requirements(d, json_object_get(e, "matchExpressions"), at,
					&(*ret)[i].requirements, &(*ret)[i].n_requirements);
		if (r < 0)
			return r;
		/* matchFields (metadata.name) pins a pod to one named node:
		 * kept as a requirement on the hostname-like key it is. */
		if (json_array_size(json_object_get(e, "matchFields")) > 0) {
			struct proto_requirement *fields;
			uint32_t nf, nr = (*ret)[i].n_requirements;
			decode_path(at, sizeof(at), "%s[%zu].matchFields", where, i);
			r = decode_requirements(d, json_object_get(e, "matchFields"), at, &fields, &nf);
			if (r < 0)
				return r;
			struct proto_requirement *all = arena_calloc(d->arena, nr + nf + 1, sizeof(*all));
			if (!all)
				return -ENOMEM;
			memcpy(all, (*ret)[i].requirements, nr * sizeof(*all));
			memcpy(all + nr, fields, nf * sizeof(*all));
			(*ret)[i].requirements = all;
			(*ret)[i].n_requirements = nr + nf;
		}
	}
	*n = (uint32_t)json_array_size(arr);
	return 0;
}

int decode_label_selector(struct decoder *d, const json_t *sel, const char *where,
			  struct proto_label_selector *ret)
{
	char at[256];
	int r;

	*ret = (struct proto_label_selector){ 0 };
	if (!sel || json_is_null(sel))
		return 0;
	if (!json_is_object(sel))
		return decode_fail(d, "%s: expected a label selector", where);
	decode_path(at, sizeof(at), "%s.matchLabels", where);
	r = decode_kv(d, json_object_get(sel, "matchLabels"), at, PROTO_MAX_LABELS,
		      PROTO_MAX_LABEL_VALUE_LEN, &ret->match_labels, &ret->n_match_labels);
	if (r < 0)
		return r;
	decode_path(at, sizeof(at), "%s.matchExpressions", where);
	return decode_requirements(d, json_object_get(sel, "matchExpressions"), at,
				   &ret->match_expressions, &ret->n_match_expressions);
}

static int taint_effect(const char *s)
{
	if (!s || !*s)
		return PROTO_EFFECT_ANY;
	if (streq(s, "NoSchedule"))
		return PROTO_EFFECT_NO_SCHEDULE;
	if (streq(s, "PreferNoSchedule"))
		return PROTO_EFFECT_PREFER_NO_SCHEDULE;
	if (streq(s, "NoExecute"))
		return PROTO_EFFECT_NO_EXECUTE;
	return -1;
}

int decode_tolerations(struct decoder *d, const json_t *arr, const char *where,
		       struct proto_toleration **ret, uint32_t *n)
{
	const json_t *e;
	char at[256];
	size_t i;
	int r;

	r = decode_list(d, arr, where, PROTO_MAX_TOLERATIONS, "tolerations", sizeof(**ret), (void **)ret);
	*n = 0;
	if (r <= 0)
		return r;
	json_array_foreach(arr, i, e) {
		struct proto_toleration *t = &(*ret)[i];
		const char *op = json_string_value(json_object_get(e, "operator"));
		const json_t *secs = json_object_get(e, "tolerationSeconds");
		int eff;

		decode_path(at, sizeof(at), "%s[%zu]", where, i);
		if ((r = decode_string(d, e, "key", at, &t->key)) < 0 ||
		    (r = decode_string(d, e, "value", at, &t->value)) < 0)
			return r;
		if (!op || streq(op, "Equal"))
			t->op = PROTO_TOLERATION_EQUAL;
		else if (streq(op, "Exists"))
			t->op = PROTO_TOLERATION_EXISTS;
		else
			return decode_fail(d, "%s.operator: '%s' is not Equal or Exists", at, op);
		eff = taint_effect(json_string_value(json_object_get(e, "effect")));
		if (eff < 0)
			return decode_fail(d, "%s.effect: '%s' is not NoSchedule, PreferNoSchedule or "
					   "NoExecute", at, json_string_value(json_object_get(e, "effect")));
		t->effect = (uint8_t)eff;
		if (json_is_integer(secs)) {
			t->has_seconds = true;
			t->seconds = json_integer_value(secs);
		}
	}
	*n = (uint32_t)json_array_size(arr);
	return 0;
}

int decode_taints(struct decoder *d, const json_t *arr, const char *where,
		  struct proto_taint **ret, uint32_t *n)
{
	const json_t *e;
	char at[256];
	size_t i;
	int r;

	r = decode_list(d, arr, where, PROTO_MAX_TAINTS, "taints", sizeof(**ret), (void **)ret);
	*n = 0;
	if (r <= 0)
		return r;
	json_array_foreach(arr, i, e) {
		struct proto_taint *t = &(*ret)[i];
		const char *effect = json_string_value(json_object_get(e, "effect"));
		int eff = taint_effect(effect);

		decode_path(at, sizeof(at), "%s[%zu]", where, i);
		if ((r = decode_string(d, e, "key", at, &t->key)) < 0 ||
		    (r = decode_string(d, e, "value", at, &t->value)) < 0)
			return r;
		if (!t->key || !*t->key)
			return decode_fail(d, "%s.key: is required", at);
		if (eff <= PROTO_EFFECT_ANY)
			return decode_fail(d, "%s.effect: '%s' is not NoSchedule, PreferNoSchedule or "
					   "NoExecute", at, effect ? effect : "");
		t->effect = (uint8_t)eff;
	}
	*n = (uint32_t)json_array_size(arr);
	return 0;
}

int decode_condition_status(const char *s)
{
	if (s && streq(s, "True"))
		return PROTO_COND_TRUE;
	if (s && streq(s, "False"))
		return PROTO_COND_FALSE;
	return PROTO_COND_UNKNOWN;
}

int decode_conditions(struct decoder *d, const json_t *arr, const char *where,
		      struct proto_condition **ret, uint32_t *n)
{
	const json_t *e;
	char at[256];
	size_t i;
	uint32_t k = 0;
	int r;

	*ret = NULL;
	*n = 0;
	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return decode_fail(d, "%s: expected a list of conditions", where);
	*ret = arena_calloc(d->arena, MIN(json_array_size(arr), PROTO_MAX_CONDITIONS) + 1,
			    sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	json_array_foreach(arr, i, e) {
		struct proto_condition *c;

		if (k == PROTO_MAX_CONDITIONS)
			break; /* the rest are not ones we act on */
		c = &(*ret)[k];
		decode_path(at, sizeof(at), "%s[%zu]", where, i);
		if ((r = decode_string(d, e, "type", at, &c->type)) < 0 ||
		    (r = decode_string(d, e, "reason", at, &c->reason)) < 0 ||
		    (r = decode_string(d, e, "message", at, &c->message)) < 0)
			return r;
		if (!c->type)
			continue;
		if (c->message && strlen(c->message) > PROTO_MAX_TEXT_LEN)
			c->message[PROTO_MAX_TEXT_LEN] = '\0';
		c->status = (uint8_t)decode_condition_status(
			json_string_value(json_object_get(e, "status")));
		c->last_transition = decode_time_ms(json_object_get(e, "lastTransitionTime"));
		k++;
	}
	*n = k;
	return 0;
}

int decode_resources(struct decoder *d, const json_t *map, const char *where,
		     struct proto_resource **ret, uint32_t *n)
{
	const char *k;
	const json_t *v;
	uint32_t i = 0;

	*ret = NULL;
	*n = 0;
	if (!map || json_is_null(map))
		return 0;
	if (!json_is_object(map) || json_object_size(map) > PROTO_MAX_RESOURCES)
		return decode_fail(d, "%s: expected a map of at most %u resources", where,
				   PROTO_MAX_RESOURCES);
	*ret = arena_calloc(d->arena, json_object_size(map) + 1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	json_object_foreach((json_t *)map, k, v) {
		char buf[32];
		const char *s = json_string_value(v);
		int64_t q;

		if (json_is_integer(v)) {
			snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			s = buf;
		}
		if (!s || quantity_parse(s, streq(k, "cpu"), &q) < 0)
			return decode_fail(d, "%s.%s: '%s' is not a quantity", where, k,
					   s ? s : json_is_real(v) ? "(number)" : "(not a string)");
		(*ret)[i].name = arena_strdup(d->arena, k);
		if (!(*ret)[i].name)
			return -ENOMEM;
		(*ret)[i].value = q;
		i++;
	}
	*n = i;
	return 0;
}

int decode_duration(struct decoder *d, const json_t *v, const char *where, int64_t *ret)
{
	uint64_t usec;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) { /* v1alpha5 ttlSeconds* fields */
		*ret = json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) || config_parse_duration(json_string_value(v), true, &usec) < 0)
		return decode_fail(d, "%s: expected a duration like 720h or Never", where);
	*ret = usec == CONFIG_DURATION_NEVER ? -1 : (int64_t)(usec / 1000000);
	return 0;
}

/* kanna neither renders these into user data nor models them; a node
 * class or pool that sets one is refused visibly (UnsupportedField). */
const char *const decode_kubelet_unsupported_fields[] = {
	"evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod",
	"imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "cpuCFSQuota", "clusterDNS",
};
const size_t decode_kubelet_n_unsupported_fields = ARRAY_SIZE(decode_kubelet_unsupported_fields);
bool decode_nodeclass_ref_supported(const char *group, const char *kind, bool v1alpha5)
{
	const char *want_kind = v1alpha5 ? "AWSNodeTemplate" : NODECLASS_REF_DEFAULT_KIND;
	size_t len = group ? strcspn(group, "/") : 0;

	if (group && !(len == strlen(NODECLASS_REF_DEFAULT_GROUP) &&
		       !strncmp(group, NODECLASS_REF_DEFAULT_GROUP, len)))
		return false;
	return !kind || streq(kind, want_kind);
}

/* What decode_kubelet reads (and the launcher renders into user data). */
const char *const decode_kubelet_fields[] = {
	"maxPods", "podsPerCore", "systemReserved", "kubeReserved", "evictionHard",
};
const size_t decode_kubelet_n_fields = ARRAY_SIZE(decode_kubelet_fields);

int decode_kubelet(struct decoder *d, const json_t *k, const char *where, struct proto_kubelet *ret)
{
	char at[128];
	int r;

	*ret = (struct proto_kubelet){ 0 };
	if (!json_is_object(k))
		return 0;
	ret->max_pods = (int32_t)json_integer_value(json_object_get(k, "maxPods"));
	ret->pods_per_core = (int32_t)json_integer_value(json_object_get(k, "podsPerCore"));
	decode_path(at, sizeof(at), "%s.systemReserved", where);
	if ((r = decode_resources(d, json_object_get(k, "systemReserved"), at, &ret->system_reserved,
				  &ret->n_system_reserved)) < 0)
		return r;
	decode_path(at, sizeof(at), "%s.kubeReserved", where);
	if ((r = decode_resources(d, json_object_get(k, "kubeReserved"), at, &ret->kube_reserved,
				  &ret->n_kube_reserved)) < 0)
		return r;
	decode_path(at, sizeof(at), "%s.evictionHard", where);
	if ((r = decode_kv(d, json_object_get(k, "evictionHard"), at, PROTO_MAX_RESOURCES,
			   PROTO_MAX_LABEL_VALUE_LEN, &ret->eviction_hard, &ret->n_eviction_hard)) < 0)
		return r;
	/* The allocatable of every node depends on these: refuse what no
	 * kubelet would take rather than guess. */
	for (uint32_t i = 0; i < ret->n_eviction_hard; i++) {
		int64_t q;
		double pct;
		if (quantity_or_percent_parse(ret->eviction_hard[i].value, &q, &pct) < 0)
			return decode_fail(d, "%s.evictionHard.%s: '%s' is not a quantity or a percentage",
					   where, ret->eviction_hard[i].key, ret->eviction_hard[i].value);
	}
	return 0;
}
