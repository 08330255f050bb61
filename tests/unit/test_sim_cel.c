/*
 * kanna-sim's CEL subset (sim/cel*.c): every rule of the shipped CRDs
 * compiles, constructs outside the subset are refused by name, cel-go's
 * evaluation semantics, and NodePool / EC2NodeClass objects accepted or
 * refused as in upstream Karpenter's CEL tests (kubernetes-sigs/karpenter
 * pkg/apis/v1/nodepool_validation_cel_test.go, aws/karpenter-provider-aws
 * pkg/apis/v1/ec2nodeclass_validation_cel_test.go), with kube-apiserver's
 * field paths and messages.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/yaml-json.h"
#include "sim/cel.h"

static const char *srcdir(void)
{
	const char *s = getenv("KANNA_SRCDIR");

	return s ? s : KANNA_SRCDIR;
}

/* --- every shipped rule compiles ------------------------------------ */

static int compile_all(const json_t *node, int *failed)
{
	int n = 0;
	size_t i;
	const char *k;
	json_t *v;

	if (json_is_object(node)) {
		json_array_foreach(json_object_get(node, "x-kubernetes-validations"), i, v) {
			struct cel_program *prog = NULL;
			char err[512];
			const char *rule = json_string_value(json_object_get(v, "rule"));

			n++;
			if (!rule || cel_compile(rule, &prog, err, sizeof(err)) != 0) {
				cr_log_error("%s: %s", rule ? rule : "(no rule)", err);
				(*failed)++;
			}
			cel_program_free(prog);
		}
		json_object_foreach((json_t *)node, k, v)
			n += compile_all(v, failed);
	} else if (json_is_array(node)) {
		json_array_foreach(node, i, v)
			n += compile_all(v, failed);
	}
	return n;
}

Test(sim_cel, every_rule_of_the_shipped_crds_compiles)
{
	char dir[4096];
	struct dirent **names;
	int n, rules = 0, failed = 0, schemas = 0;

	snprintf(dir, sizeof(dir), "%s/data/crds", srcdir());
	n = scandir(dir, &names, NULL, alphasort);
	cr_assert_gt(n, 0, "%s", dir);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		size_t len = strlen(name);
		struct yaml_docs *docs = NULL;
		char path[8192], err[512];
		size_t j;
		json_t *ver;

		if (len > 5 && !strcmp(name + len - 5, ".yaml") && strcmp(name, "kustomization.yaml")) {
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			cr_assert_eq(yaml_docs_load_file(path, &docs, err, sizeof(err)), 0, "%s", err);
			rules += compile_all(docs->docs[0], &failed);
			json_array_foreach(json_object_get(json_object_get(docs->docs[0], "spec"), "versions"),
					   j, ver) {
				struct cel_schema *cs = NULL;
				json_t *schema = json_object_get(json_object_get(ver, "schema"),
								 "openAPIV3Schema");

				cr_assert_eq(cel_schema_new(schema, &cs, err, sizeof(err)), 0, "%s: %s",
					     name, err);
				schemas += cs != NULL;
				cel_schema_free(cs);
			}
			yaml_docs_free(docs);
		}
		free(names[i]);
	}
	free(names);
	cr_assert_eq(failed, 0, "%d of %d rules do not compile", failed, rules);
	/* 197 when written; fewer means the walk or the CRDs lost rules. */
	cr_assert_geq(rules, 190, "only %d rules found", rules);
	cr_assert_geq(schemas, 6);
}

/* --- the subset's edges ---------------------------------------------- */

static void refused(const char *rule, const char *why)
{
	struct cel_program *prog = NULL;
	char err[512];

	cr_expect_eq(cel_compile(rule, &prog, err, sizeof(err)), -EINVAL, "%s compiled", rule);
	cr_expect(strstr(err, why) != NULL, "%s: \"%s\" does not say \"%s\"", rule, err, why);
	cel_program_free(prog);
}

Test(sim_cel, constructs_outside_the_subset_are_refused_by_name)
{
	refused("self + 1 > 2", "arithmetic operator '+'");
	refused("duration(self) > duration('1s')", "function 'duration'");
	refused("self.map(x, x).size() == 1", "function 'map'");
	refused("self.exists_one(x, x == 1)", "function 'exists_one'");
	refused("self.lowerAscii() == 'a'", "function 'lowerAscii'");
	refused("self == 1.5", "double literals");
	refused("self == 1u", "unsigned literals");
	refused("self == {'a': 1}", "map and message literals");
	refused("other == 1", "undeclared reference to 'other'");
	refused("self.all(x, y == 1)", "undeclared reference to 'y'");
	refused("self.matches('a|b')", "alternation");
	refused("self.matches('^\\\\d+$')", "escape");
	refused("self.matches('a{2}')", "counted repetition");
	refused("self.matches('(?i)a')", "'(?'");
	refused("self.matches('(ab)+')", "repeated group");
	refused("self.matches('^a.b$')", "a '.' without '*' or '+'");
	refused("self.matches('^[^@]$')", "a negated class without '*' or '+'");
	refused("self.find('a*b+') == ''", "second repetition in find()");
	refused("self.matches(self)", "string literal pattern");
	refused("has(self)", "field selection");
	refused("self.foo__dash__bar == 1", "escaped property name 'foo__dash__bar'");
	refused("self.startsWith()", "takes 1 argument(s), not 0");
	refused("r'raw' == self", "raw and bytes");
	refused("self == 'a\\x41'", "escape sequence \\x");
	refused("(self == 1", "expected ')'");
	refused("self == 1 self", "unexpected token");
	refused("", "unexpected end of rule");
	refused("self == 'kubernetes.\216io'", "not valid UTF-8");
}

Test(sim_cel, nesting_is_bounded)
{
	char rule[1200];

	memset(rule, '(', 500);
	strcpy(rule + 500, "true");
	memset(rule + 504, ')', 500);
	rule[1004] = '\0';
	refused(rule, "nested too deep");
	memset(rule, '!', 1000);
	strcpy(rule + 1000, "true");
	refused(rule, "nested too deep");
}

/* 1 holds, 0 fails, <0 evaluation error (err). */
static int verdict(const char *rule, const char *self, const char *old, char *err, size_t errlen)
{
	struct cel_program *prog = NULL;
	json_t *s = json_loads(self, JSON_DECODE_ANY, NULL), *o = old ? json_loads(old, JSON_DECODE_ANY, NULL) : NULL;
	char cerr[512];
	int r;

	cr_assert_eq(cel_compile(rule, &prog, cerr, sizeof(cerr)), 0, "%s: %s", rule, cerr);
	cr_assert(s, "%s", self);
	r = cel_validate_object(prog, s, o, err, errlen);
	cel_program_free(prog);
	json_decref(s);
	json_decref(o);
	return r;
}

static void holds(const char *rule, const char *self)
{
	char err[256];

	cr_expect_eq(verdict(rule, self, NULL, err, sizeof(err)), 1, "%s on %s: %s", rule, self, err);
}

static void fails(const char *rule, const char *self)
{
	char err[256];

	cr_expect_eq(verdict(rule, self, NULL, err, sizeof(err)), 0, "%s on %s: %s", rule, self, err);
}

static void errs(const char *rule, const char *self, const char *text)
{
	char err[256];

	cr_expect_eq(verdict(rule, self, NULL, err, sizeof(err)), -EINVAL, "%s on %s", rule, self);
	cr_expect_str_eq(err, text, "%s", rule);
}

Test(sim_cel, evaluation_follows_cel_go)
{
	/* Commutative && and ||: the deciding side wins over an error. */
	holds("self.missing == 1 || true", "{}");
	holds("true || self.missing == 1", "{}");
	fails("self.missing == 1 && false", "{}");
	errs("self.missing == 1 && true", "{}", "no such key: missing");
	errs("self.missing == 1", "{}", "no such key: missing");
	errs("self.left == 1 || self.right == 1", "{}", "no such key: left");
	/* all()/exists(): another element decides over an error. */
	fails("self.all(x, int(x) > 0)", "[\"a\", \"-1\"]");
	errs("self.all(x, int(x) > 0)", "[\"a\", \"1\"]", "type conversion error from 'string' to 'int'");
	holds("self.exists(x, int(x) > 0)", "[\"a\", \"1\"]");
	errs("self[3] == 1", "[1]", "index out of bounds: 3");
	errs("self.x.startsWith('a')", "{\"x\": 1}", "no such overload");
	errs("self > 'a'", "1", "no such overload");
	/* Heterogeneous equality: false, not an error. */
	fails("self == 'a'", "1");
	holds("self == 1", "1.0");
	holds("self.a == self.b", "{\"a\": [1, {\"x\": \"y\"}], \"b\": [1, {\"x\": \"y\"}]}");
	holds("'nodes' in self && !('cpu' in self)", "{\"nodes\": 1}");
	holds("size(self) == 3 && self.size() == 3", "\"héé\"");
	holds("self.split('@')[1] == 'latest' && self.split('@').size() == 2", "\"al2023@latest\"");
	holds("self.split('@').size() == 1", "\"al2023\"");
	holds("self.find('^([^/]+)') == 'karpenter.sh'", "\"karpenter.sh/nodepool\"");
	holds("self.find('^[^@]+') == ''", "\"@x\"");
	holds("self.matches('^[a-zA-Z0-9]+@.+$')", "\"al2@v1\"");
	fails("self.matches('^[a-zA-Z0-9]+@.+$')", "\"al2@\"");
	/* '.' does not match a newline in Go's regexp; runs of '.' or of a
	 * negated class cover a multi-byte character as Go's do. */
	fails("self.matches('^a.*b$')", "\"a\\nb\"");
	holds("self.matches('^a.+b$') && self.find('^[^b]+') == 'aé'", "\"aéb\"");
	holds("self.filter(x, x > 1).size() == 2", "[1, 2, 3]");
	holds("self.all(k, self[k] != '')", "{\"a\": \"b\"}");
	holds("int(self) >= 0", "\"+7\"");
	errs("int(self) >= 0", "\" 7\"", "type conversion error from 'string' to 'int'");
	holds("self.b ? self.x : self.missing", "{\"b\": true, \"x\": true}");
	holds("'a' < 'b' && 2 >= 1 && !(1 > 2) && 1 <= 1", "null");
}

Test(sim_cel, transition_rules_run_only_with_an_old_value)
{
	char err[256];

	cr_expect_eq(verdict("self == oldSelf", "1", NULL, err, sizeof(err)), 1);
	cr_expect_eq(verdict("self == oldSelf", "1", "2", err, sizeof(err)), 0);
	cr_expect_eq(verdict("has(self.replicas) == has(oldSelf.replicas)", "{\"replicas\": 1}", "{}",
			     err, sizeof(err)), 0);
}

/* --- whole objects against the shipped schemas ----------------------- */

struct collected {
	char text[8192];
	int n;
};

static void collect(void *ctx, const char *field, const char *reason, const char *body)
{
	struct collected *c = ctx;
	size_t len = strlen(c->text);

	cr_expect_str_eq(reason, "FieldValueInvalid");
	snprintf(c->text + len, sizeof(c->text) - len, "%s%s: %s", len ? "\n" : "", field, body);
	c->n++;
}

static struct cel_schema *load_version(const char *file, const char *version)
{
	struct yaml_docs *docs = NULL;
	struct cel_schema *cs = NULL;
	char path[4096], err[512];
	size_t i;
	json_t *ver;

	snprintf(path, sizeof(path), "%s/data/crds/%s", srcdir(), file);
	cr_assert_eq(yaml_docs_load_file(path, &docs, err, sizeof(err)), 0, "%s", err);
	json_array_foreach(json_object_get(json_object_get(docs->docs[0], "spec"), "versions"), i, ver)
		if (!strcmp(json_string_value(json_object_get(ver, "name")), version))
			cr_assert_eq(cel_schema_new(json_object_get(json_object_get(ver, "schema"),
								    "openAPIV3Schema"),
						    &cs, err, sizeof(err)),
				     0, "%s", err);
	yaml_docs_free(docs);
	cr_assert(cs);
	return cs;
}

static struct cel_schema *load_schema(const char *file)
{
	return load_version(file, "v1");
}

/* The object is base with patch merged in (RFC 7386: null deletes). */
static json_t *merged(const char *base, const char *patch)
{
	json_t *o = json_loads(base, 0, NULL), *p = json_loads(patch, 0, NULL);

	cr_assert(o && p, "%s / %s", base, patch);
	cr_assert_eq(json_object_update_recursive(o, p), 0);
	json_decref(p);
	return o;
}

static void drop_nulls(json_t *o)
{
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(o, tmp, k, v) {
		if (json_is_null(v))
			json_object_del(o, k);
		else if (json_is_object(v))
			drop_nulls(v);
	}
}

/* Errors of create (old NULL) or update (old_patch applied to base). */
static struct collected run(struct cel_schema *cs, const char *base, const char *patch,
			    const char *old_patch)
{
	struct collected c = { .n = 0 };
	json_t *obj = merged(base, patch), *old = old_patch ? merged(base, old_patch) : NULL;

	drop_nulls(obj);
	if (old)
		drop_nulls(old);
	cr_assert_eq(cel_schema_validate(cs, obj, old, collect, &c), c.n);
	json_decref(obj);
	json_decref(old);
	return c;
}

static const char nodepool[] =
	"{\"apiVersion\": \"karpenter.sh/v1\", \"kind\": \"NodePool\", \"metadata\": {\"name\": \"a\"},"
	" \"spec\": {\"disruption\": {\"consolidationPolicy\": \"WhenEmptyOrUnderutilized\","
	"  \"consolidateAfter\": \"0s\", \"budgets\": [{\"nodes\": \"10%\"}]},"
	" \"template\": {\"metadata\": {\"labels\": {}}, \"spec\": {"
	"  \"nodeClassRef\": {\"group\": \"karpenter.test.sh\", \"kind\": \"TestNodeClass\", \"name\": \"default\"},"
	"  \"requirements\": [{\"key\": \"karpenter.sh/capacity-type\", \"operator\": \"Exists\"}]}}}}";

#define NP_REQ(r) "{\"spec\": {\"template\": {\"spec\": {\"requirements\": [" r "]}}}}"
#define NP_LABELS(l) "{\"spec\": {\"template\": {\"metadata\": {\"labels\": {" l "}}}}}"

static void np_ok(struct cel_schema *cs, const char *patch)
{
	struct collected c = run(cs, nodepool, patch, NULL);

	cr_expect_eq(c.n, 0, "%s refused:\n%s", patch, c.text);
}

static void np_refused(struct cel_schema *cs, const char *patch, const char *want)
{
	struct collected c = run(cs, nodepool, patch, NULL);

	cr_expect(c.n > 0 && strstr(c.text, want), "%s: want \"%s\", got:\n%s", patch, want, c.text);
}

Test(sim_cel, nodepool_requirements_and_labels)
{
	struct cel_schema *cs = load_schema("karpenter.sh_nodepools.yaml");

	np_ok(cs, "{}");
	/* should allow supported ops */
	np_ok(cs, NP_REQ("{\"key\": \"topology.kubernetes.io/zone\", \"operator\": \"In\", \"values\": [\"test\"]},"
			 "{\"key\": \"topology.kubernetes.io/zone\", \"operator\": \"Gt\", \"values\": [\"1\"]},"
			 "{\"key\": \"topology.kubernetes.io/zone\", \"operator\": \"Lt\", \"values\": [\"1\"]},"
			 "{\"key\": \"topology.kubernetes.io/zone\", \"operator\": \"NotIn\"},"
			 "{\"key\": \"topology.kubernetes.io/zone\", \"operator\": \"Exists\"}"));
	/* should fail with invalid GT or LT values */
	np_refused(cs, NP_REQ("{\"key\": \"a\", \"operator\": \"Gt\", \"values\": []}"),
		   "spec.template.spec.requirements: Invalid value: \"array\": requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value");
	np_refused(cs, NP_REQ("{\"key\": \"a\", \"operator\": \"Gt\", \"values\": [\"1\", \"2\"]}"), "'Gt', 'Lt'");
	np_refused(cs, NP_REQ("{\"key\": \"a\", \"operator\": \"Lt\", \"values\": [\"-1\"]}"), "'Gt', 'Lt'");
	np_refused(cs, NP_REQ("{\"key\": \"a\", \"operator\": \"Lt\", \"values\": [\"a\"]}"),
		   "spec.template.spec.requirements: Invalid value: \"array\": type conversion error from 'string' to 'int' evaluating rule: requirements operator 'Gt'");
	np_refused(cs, NP_REQ("{\"key\": \"a\", \"operator\": \"In\", \"values\": []}"),
		   "requirements with operator 'In' must have a value defined");
	/* should error when minValues is greater than the number of values */
	np_refused(cs, NP_REQ("{\"key\": \"node.kubernetes.io/instance-type\", \"operator\": \"In\","
			      " \"values\": [\"insance-type-1\"], \"minValues\": 2}"),
		   "requirements with 'minValues' must have at least that many values");
	np_ok(cs, NP_REQ("{\"key\": \"node.kubernetes.io/instance-type\", \"operator\": \"In\","
			 " \"values\": [\"a\", \"b\"], \"minValues\": 2}"));
	/* restricted domains, their exceptions, well-known labels */
	np_refused(cs, NP_REQ("{\"key\": \"karpenter.sh/test\", \"operator\": \"Exists\"}"),
		   "spec.template.spec.requirements[0].key: Invalid value: \"string\": label domain \"karpenter.sh\" is restricted");
	np_refused(cs, NP_REQ("{\"key\": \"karpenter.sh/nodepool\", \"operator\": \"In\", \"values\": [\"x\"]}"),
		   "label \"karpenter.sh/nodepool\" is restricted");
	np_refused(cs, NP_REQ("{\"key\": \"karpenter.k8s.aws/test\", \"operator\": \"Exists\"}"),
		   "label domain \"karpenter.k8s.aws\" is restricted");
	np_ok(cs, NP_REQ("{\"key\": \"kops.k8s.io/test\", \"operator\": \"Exists\"},"
			 "{\"key\": \"subdomain.node.kubernetes.io/test\", \"operator\": \"Exists\"},"
			 "{\"key\": \"node-restriction.kubernetes.io/test\", \"operator\": \"Exists\"},"
			 "{\"key\": \"node.kubernetes.io/instance-type\", \"operator\": \"Exists\"},"
			 "{\"key\": \"karpenter.k8s.aws/instance-family\", \"operator\": \"Exists\"},"
			 "{\"key\": \"kubernetes.io/arch\", \"operator\": \"Exists\"}"));
	np_ok(cs, NP_LABELS("\"foo\": \"bar\", \"kops.k8s.io/instancegroup\": \"karpenter-nodes\","
			    " \"kops.k8s.io/gpu\": \"1\", \"subdomain.kops.k8s.io/key\": \"v\""));
	np_refused(cs, NP_LABELS("\"karpenter.sh/nodepool\": \"x\""),
		   "spec.template.metadata.labels: Invalid value: \"object\": label \"karpenter.sh/nodepool\" is restricted");
	np_refused(cs, NP_LABELS("\"kubernetes.io/hostname\": \"x\""), "label \"kubernetes.io/hostname\" is restricted");
	np_refused(cs, NP_LABELS("\"karpenter.sh/unknown\": \"x\""), "label domain \"karpenter.sh\" is restricted");
	cel_schema_free(cs);
}

Test(sim_cel, nodepool_budgets_transitions_and_ratcheting)
{
	struct cel_schema *cs = load_schema("karpenter.sh_nodepools.yaml");
	struct collected c;

	np_refused(cs, "{\"spec\": {\"disruption\": {\"budgets\": [{\"nodes\": \"10\", \"schedule\": \"* * * * *\"}]}}}",
		   "spec.disruption.budgets: Invalid value: \"array\": 'schedule' must be set with 'duration'");
	np_refused(cs, "{\"spec\": {\"disruption\": {\"budgets\": [{\"nodes\": \"10\", \"duration\": \"20m\"}]}}}",
		   "'schedule' must be set with 'duration'");
	np_ok(cs, "{\"spec\": {\"disruption\": {\"budgets\": [{\"nodes\": \"10\", \"schedule\": \"@annually\", \"duration\": \"20m\"}]}}}");
	np_refused(cs, "{\"spec\": {\"replicas\": 2, \"weight\": 10}}", "'weight' is not supported on static NodePools");
	np_refused(cs, "{\"spec\": {\"replicas\": 2, \"limits\": {\"cpu\": \"10\"}}}", "only 'limits.nodes' is supported");
	np_ok(cs, "{\"spec\": {\"replicas\": 2, \"limits\": {\"nodes\": 3}}}");

	/* Transition rules: not on create, on update. */
	c = run(cs, nodepool, "{\"spec\": {\"template\": {\"spec\": {\"nodeClassRef\": {\"group\": \"karpenter.test.mutated.sh\"}}}}}", "{}");
	cr_expect_str_eq(c.text, "spec.template.spec.nodeClassRef: Invalid value: \"object\": nodeClassRef.group is immutable");
	c = run(cs, nodepool, "{\"spec\": {\"template\": {\"spec\": {\"nodeClassRef\": {\"kind\": \"Other\"}}}}}", "{}");
	cr_expect_str_eq(c.text, "spec.template.spec.nodeClassRef: Invalid value: \"object\": nodeClassRef.kind is immutable");
	c = run(cs, nodepool, "{\"spec\": {\"replicas\": 1}}", "{}");
	cr_expect(strstr(c.text, "spec: Invalid value: \"object\": Cannot transition NodePool between static"), "%s", c.text);
	c = run(cs, nodepool, "{\"spec\": {\"replicas\": 1}}", "{\"spec\": {\"replicas\": 3}}");
	cr_expect_eq(c.n, 0, "%s", c.text);

	/* Ratcheting: a stored violation left unchanged is not an error,
	 * a new one is. */
	c = run(cs, nodepool, NP_LABELS("\"karpenter.sh/nodepool\": \"x\""), NP_LABELS("\"karpenter.sh/nodepool\": \"x\""));
	cr_expect_eq(c.n, 0, "%s", c.text);
	c = run(cs, nodepool, NP_LABELS("\"karpenter.sh/nodepool\": \"x\", \"a\": \"b\""), NP_LABELS("\"karpenter.sh/nodepool\": \"x\""));
	cr_expect_eq(c.n, 1, "%s", c.text);
	c = run(cs, nodepool, NP_LABELS("\"karpenter.sh/nodepool\": \"x\""), "{}");
	cr_expect_eq(c.n, 1, "%s", c.text);
	cel_schema_free(cs);
}

static const char nodeclass[] =
	"{\"apiVersion\": \"karpenter.k8s.aws/v1\", \"kind\": \"EC2NodeClass\", \"metadata\": {\"name\": \"a\"},"
	" \"spec\": {\"role\": \"role\", \"amiSelectorTerms\": [{\"alias\": \"al2023@latest\"}],"
	" \"subnetSelectorTerms\": [{\"tags\": {\"*\": \"*\"}}],"
	" \"securityGroupSelectorTerms\": [{\"tags\": {\"*\": \"*\"}}]}}";

static void nc_ok(struct cel_schema *cs, const char *patch)
{
	struct collected c = run(cs, nodeclass, patch, NULL);

	cr_expect_eq(c.n, 0, "%s refused:\n%s", patch, c.text);
}

static void nc_refused(struct cel_schema *cs, const char *patch, const char *want)
{
	struct collected c = run(cs, nodeclass, patch, NULL);

	cr_expect(c.n > 0 && strstr(c.text, want), "%s: want \"%s\", got:\n%s", patch, want, c.text);
}

Test(sim_cel, ec2nodeclass_rules)
{
	struct cel_schema *cs = load_schema("karpenter.k8s.aws_ec2nodeclasses.yaml");

	nc_ok(cs, "{}");
	nc_ok(cs, "{\"spec\": {\"amiSelectorTerms\": [{\"alias\": \"bottlerocket@v1.20.0\"}]}}");
	nc_refused(cs, "{\"spec\": {\"amiSelectorTerms\": [{\"alias\": \"ubuntu@latest\"}]}}",
		   "spec.amiSelectorTerms[0].alias: Invalid value: \"string\": family is not supported");
	nc_refused(cs, "{\"spec\": {\"amiSelectorTerms\": [{\"alias\": \"al2023\"}]}}",
		   "'alias' is improperly formatted, must match the format 'family@version'");
	nc_refused(cs, "{\"spec\": {\"amiSelectorTerms\": [{\"alias\": \"windows2022@v1\"}]}}",
		   "windows families may only specify version 'latest'");
	nc_refused(cs, "{\"spec\": {\"amiSelectorTerms\": [{\"alias\": \"al2023@latest\", \"id\": \"ami-1\"}]}}",
		   "'alias' is mutually exclusive");
	nc_refused(cs, "{\"spec\": {\"amiSelectorTerms\": [{\"alias\": \"al2023@latest\"}, {\"alias\": \"al2@latest\"}]}}",
		   "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms");
	nc_refused(cs, "{\"spec\": {\"amiSelectorTerms\": [{\"id\": \"ami-1\"}]}}",
		   "spec: Invalid value: \"object\": must specify amiFamily if amiSelectorTerms does not contain an alias");
	nc_refused(cs, "{\"spec\": {\"amiFamily\": \"AL2\"}}",
		   "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias");
	nc_ok(cs, "{\"spec\": {\"amiFamily\": \"Custom\"}}");
	nc_refused(cs, "{\"spec\": {\"tags\": {\"karpenter.sh/nodepool\": \"x\"}}}",
		   "spec.tags: Invalid value: \"object\": tag contains a restricted tag matching karpenter.sh/nodepool");
	nc_refused(cs, "{\"spec\": {\"tags\": {\"kubernetes.io/cluster/test\": \"owned\"}}}",
		   "tag contains a restricted tag matching kubernetes.io/cluster/");
	nc_refused(cs, "{\"spec\": {\"tags\": {\"\": \"x\"}}}", "empty tag keys aren't supported");
	nc_refused(cs, "{\"spec\": {\"subnetSelectorTerms\": [{\"tags\": {\"a\": \"\"}}]}}",
		   "spec.subnetSelectorTerms[0].tags: Invalid value: \"object\": empty tag keys or values aren't supported");
	nc_refused(cs, "{\"spec\": {\"subnetSelectorTerms\": [{\"id\": \"subnet-1\", \"tags\": {\"a\": \"b\"}}]}}",
		   "'id' is mutually exclusive");
	nc_refused(cs, "{\"spec\": {\"subnetSelectorTerms\": []}}", "subnetSelectorTerms cannot be empty");
	nc_refused(cs, "{\"spec\": {\"instanceProfile\": \"p\"}}", "must specify exactly one of ['role', 'instanceProfile']");
	nc_refused(cs, "{\"spec\": {\"role\": null}}", "must specify exactly one of ['role', 'instanceProfile']");
	nc_refused(cs, "{\"spec\": {\"blockDeviceMappings\": [{\"rootVolume\": true, \"ebs\": {\"volumeSize\": \"20Gi\"}},"
		       " {\"rootVolume\": true, \"ebs\": {\"volumeSize\": \"20Gi\"}}]}}",
		   "must have only one blockDeviceMappings with rootVolume");
	nc_refused(cs, "{\"spec\": {\"blockDeviceMappings\": [{\"ebs\": {\"encrypted\": true}}]}}",
		   "spec.blockDeviceMappings[0].ebs: Invalid value: \"object\": snapshotID or volumeSize must be defined");
	nc_ok(cs, "{\"spec\": {\"blockDeviceMappings\": [{\"rootVolume\": true, \"ebs\": {\"volumeSize\": \"20Gi\"}},"
		  " {\"ebs\": {\"snapshotID\": \"snap-1\"}}]}}");
	cel_schema_free(cs);
}

/* v1beta1 NodePools also restrict the kubernetes.io and k8s.io domains. */
Test(sim_cel, nodepool_v1beta1_restricted_domains)
{
	struct cel_schema *cs = load_version("karpenter.sh_nodepools.v1beta1.yaml", "v1beta1");
	static const char base[] =
		"{\"spec\": {\"template\": {\"spec\": {\"nodeClassRef\": {\"name\": \"default\"},"
		" \"requirements\": [{\"key\": \"%s\", \"operator\": \"Exists\"}]}}}}";
	static const struct {
		const char *key, *error;
	} cases[] = {
		{ "kubernetes.io/test", "label domain \"kubernetes.io\" is restricted" },
		{ "k8s.io/test", "label domain \"k8s.io\" is restricted" },
		{ "karpenter.sh/test", "label domain \"karpenter.sh\" is restricted" },
		{ "kops.k8s.io/test", NULL },
		{ "subdomain.node-restriction.kubernetes.io/test", NULL },
		{ "node.kubernetes.io/instance-type", NULL },
		{ "topology.kubernetes.io/zone", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char obj[512];
		struct collected c;

		snprintf(obj, sizeof(obj), base, cases[i].key);
		c = run(cs, obj, "{}", NULL);
		if (cases[i].error)
			cr_expect(strstr(c.text, cases[i].error), "%s: %s", cases[i].key, c.text);
		else
			cr_expect_eq(c.n, 0, "%s: %s", cases[i].key, c.text);
	}
	cel_schema_free(cs);
}

/* A rule on the schema's root reports the nil field.Path, a rule without
 * a message "failed rule: <rule>", an evaluation error CEL's text. */
Test(sim_cel, root_rules_default_messages_and_evaluation_errors)
{
	json_t *schema = json_loads(
		"{\"type\": \"object\", \"x-kubernetes-validations\": [{\"rule\": \" self.a == 1 \"}],"
		" \"properties\": {\"b\": {\"type\": \"object\", \"x-kubernetes-validations\":"
		" [{\"rule\": \"self.c == 1\", \"message\": \"c must be 1 \"}]}}}", 0, NULL);
	struct cel_schema *cs = NULL;
	struct collected c;
	char err[256];

	cr_assert(schema);
	cr_assert_eq(cel_schema_new(schema, &cs, err, sizeof(err)), 0, "%s", err);
	c = run(cs, "{\"a\": 2, \"b\": {}}", "{}", NULL);
	cr_expect_str_eq(c.text, "<nil>: Invalid value: \"object\": failed rule: self.a == 1\n"
				 "b: Invalid value: \"object\": no such key: c evaluating rule: c must be 1");
	cel_schema_free(cs);
	json_decref(schema);

	schema = json_loads("{\"x-kubernetes-validations\": [{\"rule\": \"true\", \"reason\": \"FieldValueForbidden\"}]}", 0, NULL);
	cr_expect_eq(cel_schema_new(schema, &cs, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "field 'reason' is not supported"), "%s", err);
	json_decref(schema);
}
