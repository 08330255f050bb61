/* kanna-sim's structural schemas on the shipped CRDs (data/crds): what
 * kube-apiserver refuses (types, enums, patterns, required fields, lengths,
 * counts, int-or-string, list-map keys) with its messages and causes, the
 * defaults it fills in, the unknown fields it prunes and how
 * fieldValidation reports them, and the CEL hook's calls. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-schema.h"
#include "sim/k8s-store.h"

static struct k8s_registry *reg;
static struct k8s_store *store;
static struct k8s_resource *nodepools, *nodeclasses;

static void setup(void)
{
	reg = k8s_registry_new();
	cr_assert_not_null(reg);
	cr_assert_eq(k8s_registry_load_crds(reg, KANNA_SRCDIR "/data/crds"), 0);
	cr_assert_eq(k8s_store_new(reg, 0, &store), 0);
	cr_assert_eq(k8s_store_seed(store), 0);
	nodepools = k8s_registry_find(reg, "karpenter.sh", "v1", "nodepools");
	nodeclasses = k8s_registry_find(reg, "karpenter.k8s.aws", "v1", "ec2nodeclasses");
	cr_assert(nodepools && nodepools->schema && nodeclasses && nodeclasses->schema);
	/* The structural checks alone (the registry installs the CEL hook;
	 * cel_rules_enforced below tests it). */
	k8s_schema_set_cel_hook(NULL, NULL);
}

static void teardown(void)
{
	k8s_schema_set_cel_hook(NULL, NULL);
	k8s_store_free(store);
	k8s_registry_free(reg);
}

TestSuite(sim_schema, .init = setup, .fini = teardown);

/* A NodePool named name whose spec is the JSON spec. */
static json_t *nodepool(const char *name, const char *spec)
{
	char buf[4096];
	json_t *j;

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"%s\"},"
		 "\"spec\":%s}", name, spec);
	j = json_loads(buf, 0, NULL);
	cr_assert_not_null(j, "bad JSON %s", buf);
	return j;
}

#define TEMPLATE                                                                                   \
	"\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":"      \
	"\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":[{\"key\":\"kubernetes.io/arch\","    \
	"\"operator\":\"In\",\"values\":[\"amd64\"]}]}}"

static int create(const char *name, const char *spec, const struct k8s_write_options *opts,
		  json_t **ret, struct k8s_error *err)
{
	json_t *body = nodepool(name, spec);
	int r = k8s_store_create_opts(store, nodepools, NULL, body, opts, ret, err);

	json_decref(body);
	return r;
}

/* The 422's message, and its causes as "reason field message" lines. */
static void expect_invalid(const char *spec, const char *message, const char *causes)
{
	struct k8s_error err = {};
	char got[4096] = "";
	const json_t *c;
	size_t i;

	cr_assert_eq(create("x", spec, NULL, NULL, &err), -EINVAL, "accepted %s", spec);
	cr_assert_eq(err.code, 422, "%d %s", err.code, err.message);
	cr_assert_str_eq(err.reason, "Invalid");
	cr_assert_str_eq(err.message, message);
	cr_assert_str_eq(json_string_value(json_object_get(err.details, "kind")), "NodePool");
	cr_assert_str_eq(json_string_value(json_object_get(err.details, "group")), "karpenter.sh");
	json_array_foreach(json_object_get(err.details, "causes"), i, c) {
		size_t len = strlen(got);

		snprintf(got + len, sizeof(got) - len, "%s %s %s\n",
			 json_string_value(json_object_get(c, "reason")),
			 json_string_value(json_object_get(c, "field")),
			 json_string_value(json_object_get(c, "message")));
	}
	cr_assert_str_eq(got, causes);
	k8s_error_clear(&err);
}

Test(sim_schema, enum)
{
	expect_invalid("{\"disruption\":{\"consolidateAfter\":\"1m\",\"consolidationPolicy\":\"Foo\"}," TEMPLATE "}",
		       "NodePool.karpenter.sh \"x\" is invalid: spec.disruption.consolidationPolicy: Unsupported value: \"Foo\": supported values: \"WhenEmpty\", \"WhenEmptyOrUnderutilized\", \"Balanced\"",
		       "FieldValueNotSupported spec.disruption.consolidationPolicy Unsupported value: \"Foo\": supported values: \"WhenEmpty\", \"WhenEmptyOrUnderutilized\", \"Balanced\"\n");
}

Test(sim_schema, type)
{
	expect_invalid("{\"weight\":\"heavy\"," TEMPLATE "}",
		       "NodePool.karpenter.sh \"x\" is invalid: spec.weight: Invalid value: \"string\": spec.weight in body must be of type integer: \"string\"",
		       "FieldValueTypeInvalid spec.weight Invalid value: \"string\": spec.weight in body must be of type integer: \"string\"\n");
}

Test(sim_schema, required_and_several)
{
	expect_invalid("{\"weight\":0,\"template\":{\"spec\":{\"requirements\":[]}}}",
		       "NodePool.karpenter.sh \"x\" is invalid: [spec.weight: Invalid value: 0: spec.weight in body should be greater than or equal to 1, spec.template.spec.nodeClassRef: Required value]",
		       "FieldValueInvalid spec.weight Invalid value: 0: spec.weight in body should be greater than or equal to 1\n"
		       "FieldValueRequired spec.template.spec.nodeClassRef Required value\n");
}

Test(sim_schema, pattern_and_items)
{
	expect_invalid("{\"disruption\":{\"consolidateAfter\":\"soon\"}," TEMPLATE "}",
		       "NodePool.karpenter.sh \"x\" is invalid: spec.disruption.consolidateAfter: Invalid value: \"soon\": spec.disruption.consolidateAfter in body should match '^(([0-9]+(s|m|h))+|Never)$'",
		       "FieldValueInvalid spec.disruption.consolidateAfter Invalid value: \"soon\": spec.disruption.consolidateAfter in body should match '^(([0-9]+(s|m|h))+|Never)$'\n");
	/* An item of a list, at path[i]; a pattern with \. and \/ (translated). */
	expect_invalid("{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"d\"},"
		       "\"requirements\":[{\"key\":\"a\",\"operator\":\"In\"},{\"key\":\"-bad\",\"operator\":\"In\"}]}}}",
		       "NodePool.karpenter.sh \"x\" is invalid: spec.template.spec.requirements[1].key: Invalid value: \"-bad\": spec.template.spec.requirements[1].key in body should match '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$'",
		       "FieldValueInvalid spec.template.spec.requirements[1].key Invalid value: \"-bad\": spec.template.spec.requirements[1].key in body should match '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$'\n");
}

Test(sim_schema, int_or_string_and_too_many)
{
	/* limits: additionalProperties int-or-string; budgets: maxItems 50. */
	char spec[8192];
	size_t n = (size_t)snprintf(spec, sizeof(spec), "{\"limits\":{\"cpu\":true},\"disruption\":{\"consolidateAfter\":\"0s\",\"budgets\":[");

	for (int i = 0; i < 51; i++)
		n += (size_t)snprintf(spec + n, sizeof(spec) - n, "%s{\"nodes\":\"1\"}", i ? "," : "");
	snprintf(spec + n, sizeof(spec) - n, "]}," TEMPLATE "}");
	expect_invalid(spec,
		       "NodePool.karpenter.sh \"x\" is invalid: [spec.limits.cpu: Invalid value: \"boolean\": spec.limits.cpu in body must be of type integer,string: \"boolean\", "
		       "<nil>: Invalid value: \"\": \"spec.limits.cpu\" must validate at least one schema (anyOf), "
		       "spec.limits.cpu: Invalid value: \"boolean\": spec.limits.cpu in body must be of type integer: \"boolean\", "
		       "spec.disruption.budgets: Too many: 51: must have at most 50 items]",
		       "FieldValueTypeInvalid spec.limits.cpu Invalid value: \"boolean\": spec.limits.cpu in body must be of type integer,string: \"boolean\"\n"
		       "FieldValueInvalid <nil> Invalid value: \"\": \"spec.limits.cpu\" must validate at least one schema (anyOf)\n"
		       "FieldValueTypeInvalid spec.limits.cpu Invalid value: \"boolean\": spec.limits.cpu in body must be of type integer: \"boolean\"\n"
		       "FieldValueTooMany spec.disruption.budgets Too many: 51: must have at most 50 items\n");
}

Test(sim_schema, max_length_and_list_map)
{
	char spec[2048], key[400];

	memset(key, 'a', 320);
	key[320] = '\0';
	snprintf(spec, sizeof(spec), "{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"d\"},"
		 "\"requirements\":[{\"key\":\"%s\",\"operator\":\"In\"}]}}}", key);
	expect_invalid(spec, "NodePool.karpenter.sh \"x\" is invalid: spec.template.spec.requirements[0].key: Too long: may not be longer than 316",
		       "FieldValueTooLong spec.template.spec.requirements[0].key Too long: may not be longer than 316\n");
}

Test(sim_schema, defaults_visible)
{
	struct k8s_error err = {};
	json_t *out = NULL, *spec;

	cr_assert_eq(create("d", "{" TEMPLATE "}", NULL, &out, &err), 0, "%s", err.message);
	spec = json_object_get(out, "spec");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(spec, "disruption"), "consolidateAfter")), "0s");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(spec, "disruption"), "consolidationPolicy")),
			 "WhenEmptyOrUnderutilized");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(spec, "disruption"), "budgets"), 0), "nodes")),
			 "10%");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(spec, "template"), "spec"), "expireAfter")),
			 "720h");
	json_decref(out);
	/* And on read: the stored object has them. */
	cr_assert_eq(k8s_store_get(store, nodepools, NULL, "d", &out, &err), 0);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(out, "spec"), "disruption"), "consolidateAfter")), "0s");
	json_decref(out);
}

Test(sim_schema, unknown_fields)
{
	struct k8s_write_options opts = { .field_validation = K8S_FIELD_VALIDATION_STRICT };
	struct k8s_error err = {};
	json_t *out = NULL;

	cr_assert_eq(create("u", "{\"foo\":1,\"bar\":{}," TEMPLATE "}", &opts, NULL, &err), -EINVAL);
	cr_assert_eq(err.code, 400);
	cr_assert_str_eq(err.reason, "BadRequest");
	cr_assert_str_eq(err.message, "NodePool in version \"v1\" cannot be handled as a NodePool: strict decoding error: unknown field \"spec.bar\", unknown field \"spec.foo\"");
	k8s_error_clear(&err);

	opts.field_validation = K8S_FIELD_VALIDATION_WARN;
	opts.warnings = json_array();
	cr_assert_eq(create("u", "{\"foo\":1," TEMPLATE "}", &opts, &out, &err), 0, "%s", err.message);
	cr_assert_eq(json_array_size(opts.warnings), 1);
	cr_assert_str_eq(json_string_value(json_array_get(opts.warnings, 0)), "unknown field \"spec.foo\"");
	cr_assert_null(json_object_get(json_object_get(out, "spec"), "foo"), "pruned");
	json_decref(out);
	json_decref(opts.warnings);

	/* Ignore (and the sim's own writes): pruned silently; metadata's too. */
	cr_assert_eq(create("i", "{\"foo\":1," TEMPLATE "}", NULL, &out, &err), 0, "%s", err.message);
	cr_assert_null(json_object_get(json_object_get(out, "spec"), "foo"));
	json_decref(out);
}

Test(sim_schema, preserve_unknown_fields)
{
	json_t *nc = json_loads("{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":\"n\"},"
				"\"spec\":{\"amiSelectorTerms\":[{\"alias\":\"al2023@latest\"}],\"role\":\"r\","
				"\"subnetSelectorTerms\":[{\"id\":\"subnet-1\"}],\"securityGroupSelectorTerms\":[{\"id\":\"sg-1\"}],"
				"\"kubelet\":{\"maxPods\":10},\"metadataOptions\":{}}}", 0, NULL);
	struct k8s_write_options opts = { .field_validation = K8S_FIELD_VALIDATION_STRICT };
	struct k8s_error err = {};
	json_t *out = NULL;

	cr_assert_not_null(nc);
	cr_assert_eq(k8s_store_create_opts(store, nodeclasses, NULL, nc, &opts, &out, &err), 0, "%s", err.message);
	/* metadataOptions' defaults. */
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(out, "spec"), "metadataOptions"), "httpTokens")),
			 "required");
	json_decref(out);
	json_decref(nc);
}

static int hook_calls;
static char hook_paths[1024];

static int count_rules(const json_t *rule, const json_t *self, const json_t *old_self, const char *path,
		       json_t *causes, void *userdata)
{
	size_t len = strlen(hook_paths);

	(void)rule, (void)self, (void)causes, (void)userdata;
	hook_calls++;
	if (streq_ptr(path, "spec.disruption.budgets") && len < sizeof(hook_paths) - 40)
		snprintf(hook_paths + len, sizeof(hook_paths) - len, "%s%s", path, old_self ? "+old;" : ";");
	return 0;
}

Test(sim_schema, cel_hook)
{
	struct k8s_error err = {};
	json_t *out = NULL, *body;

	k8s_schema_set_cel_hook(count_rules, NULL);
	cr_assert_eq(create("c", "{" TEMPLATE "}", NULL, &out, &err), 0, "%s", err.message);
	cr_assert_gt(hook_calls, 0);
	cr_assert_str_eq(hook_paths, "spec.disruption.budgets;");
	/* An update: oldSelf is the stored value. */
	hook_paths[0] = '\0';
	body = json_deep_copy(out);
	cr_assert_eq(k8s_store_update(store, nodepools, NULL, "c", body, K8S_WRITE_MAIN, NULL, &err), 0, "%s", err.message);
	cr_assert_str_eq(hook_paths, "spec.disruption.budgets+old;");
	json_decref(body);
	json_decref(out);
	/* A type error blocks the rules, as upstream's hasBlockingErr. */
	hook_calls = 0;
	cr_assert_eq(create("t", "{\"weight\":\"x\"," TEMPLATE "}", NULL, NULL, &err), -EINVAL);
	cr_assert_eq(hook_calls, 0);
	cr_assert(strstr(err.message, "some validation rules were not checked because the object was invalid"), "%s", err.message);
	k8s_error_clear(&err);
}

Test(sim_schema, go_values)
{
	char buf[256];
	json_t *v = json_loads("{\"b\":[1,\"x\",null,true,1.5],\"a\":{}}", 0, NULL);

	k8s_schema_go_value(v, buf, sizeof(buf));
	cr_assert_str_eq(buf, "map[string]interface {}{\"a\":map[string]interface {}{}, \"b\":[]interface {}{1, \"x\", interface {}(nil), true, 1.5}}");
	json_decref(v);
}

/* RE2 syntax the CRDs use, translated for regcomp: \d, (?:, \., \/, \s. */
Test(sim_schema, patterns)
{
	static const struct {
		const char *pattern, *value;
		bool matches;
	} cases[] = {
		{ "^\\d+(?:\\.\\d+)?$", "12.5", true },
		{ "^\\d+(?:\\.\\d+)?$", "12x5", false },
		{ "^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$",
		  "100Gi", true },
		{ "^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$",
		  "0Gi", false },
		{ "^([a-z0-9]+\\/)?[a-z]+$", "a/b", true },
		{ "^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\\s(.+)\\s(.+)\\s(.+)\\s(.+))$",
		  "0 9 * * mon-fri", true },
		{ "^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\\s(.+)\\s(.+)\\s(.+)\\s(.+))$",
		  "@sometimes", false },
		{ "subnet-[0-9a-z]+", "my-subnet-0a1", true }, /* unanchored: anywhere */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = json_pack("{s:s, s:s}", "type", "string", "pattern", cases[i].pattern);
		json_t *v = json_string(cases[i].value), *causes = json_array();
		struct k8s_schema *s = NULL;

		cr_assert_eq(k8s_schema_compile(j, &s), 0);
		cr_assert(s->has_pattern, "%s not compiled", cases[i].pattern);
		cr_assert_eq(k8s_schema_validate(s, v, NULL, causes), 0);
		cr_assert_eq(json_array_size(causes) == 0, cases[i].matches, "%s ~ %s", cases[i].value,
			     cases[i].pattern);
		k8s_schema_free(s);
		json_decref(j);
		json_decref(v);
		json_decref(causes);
	}
}

/* The registry's hook enforces the shipped rules (sim/k8s-cel-hook.c):
 * kube-apiserver's cause for a failing rule, with its message. */
Test(sim_schema, cel_rules_enforced)
{
	struct k8s_error err = {};

	k8s_cel_hook_install();
	expect_invalid("{\"disruption\":{\"consolidateAfter\":\"1m\",\"budgets\":[{\"nodes\":\"10%\","
		       "\"schedule\":\"@daily\"}]}," TEMPLATE "}",
		       "NodePool.karpenter.sh \"x\" is invalid: spec.disruption.budgets: Invalid value: \"array\": "
		       "'schedule' must be set with 'duration'",
		       "FieldValueInvalid spec.disruption.budgets Invalid value: \"array\": 'schedule' must be set with 'duration'\n");
	/* A NodePool the rules accept is stored. */
	cr_assert_eq(create("ok", "{\"disruption\":{\"consolidateAfter\":\"1m\",\"budgets\":[{\"nodes\":\"10%\","
			    "\"schedule\":\"@daily\",\"duration\":\"10m\"}]}," TEMPLATE "}", NULL, NULL, &err),
		     0, "%s", err.message);
}
