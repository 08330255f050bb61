/*
 * The schema walker's CEL hook (k8s-schema.h) on the CEL subset (cel.h):
 * each x-kubernetes-validations rule is compiled once, on first use, and
 * kept for the life of the process (the served CRDs never change); a rule
 * that fails adds kube-apiserver's cause,
 *   {reason: FieldValueInvalid, field: <path>,
 *    message: Invalid value: "<type>": <message | failed rule: <rule>>}
 * as apiextensions-apiserver's schema/cel/validation.go reports it, with
 * its ratcheting: a rule that does not read oldSelf and fails on a value
 * the update leaves unchanged is not reported. A rule outside the subset
 * refuses the write, naming the rule (never a silent pass).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "common/log.h"
#include "sim/cel.h"
#include "sim/k8s-schema.h"

/* A compile error is kept too (prog NULL), so that it is reported, not
 * recompiled, on every write. */
struct compiled_rule {
	struct cel_program *prog;
	char error[256];
};

static pthread_mutex_t rules_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hashmap rules;

static const struct compiled_rule *rule_compiled(const char *text)
{
	struct compiled_rule *c;

	pthread_mutex_lock(&rules_lock);
	c = hashmap_get(&rules, text);
	if (!c && (c = calloc(1, sizeof(*c)))) {
		if (cel_compile(text, &c->prog, c->error, sizeof(c->error)) == -ENOMEM ||
		    hashmap_put(&rules, text, c, NULL) < 0) {
			cel_program_free(c->prog);
			free(c);
			c = NULL;
		} else if (!c->prog) {
			log_warn("x-kubernetes-validations rule %s is outside kanna-sim's CEL subset: %s", text,
				 c->error);
		}
	}
	pthread_mutex_unlock(&rules_lock);
	return c;
}

/* The schema type CEL's message names, from the value. */
static const char *value_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "integer";
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	default:
		return "null";
	}
}

static int cel_rule_check(const json_t *rule, const json_t *self, const json_t *old_self, const char *path,
			  json_t *causes, void *userdata)
{
	const char *text = json_string_value(json_object_get(rule, "rule"));
	const char *message = json_string_value(json_object_get(rule, "message"));
	const struct compiled_rule *c;
	char why[512], detail[3072], body[3200];
	int r;

	(void)userdata;
	if (!text)
		return 0;
	c = rule_compiled(text);
	if (!c)
		return -ENOMEM;
	if (!c->prog) {
		snprintf(detail, sizeof(detail), "rule %s is not supported by kanna-sim: %s", text, c->error);
		r = 0;
	} else {
		/* cel_validate_object does not write to its values. */
		r = cel_validate_object(c->prog, (json_t *)self, (json_t *)old_self, why, sizeof(why));
		if (r == 1 || r == -ENOMEM)
			return r == 1 ? 0 : r;
		if (r == 0 && !cel_program_uses_old_self(c->prog) && old_self && json_equal(self, old_self))
			return 0; /* ratcheting: unchanged, and only the change is judged */
		if (r < 0)
			snprintf(detail, sizeof(detail), "%s evaluating rule: %s", why, message ?: text);
		else if (message)
			snprintf(detail, sizeof(detail), "%s", message);
		else
			snprintf(detail, sizeof(detail), "failed rule: %s", text);
	}
	snprintf(body, sizeof(body), "Invalid value: \"%s\": %s", value_type(self), detail);
	return json_array_append_new(causes, json_pack("{s:s, s:s, s:s}", "reason", "FieldValueInvalid",
						       "message", body, "field", *path ? path : "<nil>")) < 0
		       ? -ENOMEM
		       : 0;
}

void k8s_cel_hook_install(void)
{
	k8s_schema_set_cel_hook(cel_rule_check, NULL);
}
