/* kanna-sim label and field selectors: parsing, matching, LabelSelector objects. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>

#include "sim/k8s-selector.h"

static bool label_match(const char *selector, const char *labels_json)
{
	struct k8s_selector *sel = NULL;
	char err[256];
	json_t *labels = json_loads(labels_json, 0, NULL);
	bool hit;

	cr_assert_eq(k8s_label_selector_parse(selector, &sel, err, sizeof(err)), 0,
		     "%s: %s", selector, err);
	hit = k8s_label_selector_matches(sel, labels);
	k8s_selector_free(sel);
	json_decref(labels);
	return hit;
}

Test(sim_selector, equality_operators_match_label_values)
{
	cr_assert(label_match("app=web", "{\"app\":\"web\"}"));
	cr_assert(label_match("app==web", "{\"app\":\"web\"}"));
	cr_assert_not(label_match("app=web", "{\"app\":\"db\"}"));
	cr_assert(label_match("app!=web", "{\"app\":\"db\"}"));
	cr_assert(label_match("app!=web", "{}"));
	cr_assert_not(label_match("app!=web", "{\"app\":\"web\"}"));
}

Test(sim_selector, set_operators_and_existence)
{
	cr_assert(label_match("tier in (a, b)", "{\"tier\":\"b\"}"));
	cr_assert_not(label_match("tier in (a,b)", "{\"tier\":\"c\"}"));
	cr_assert_not(label_match("tier in (a,b)", "{}"));
	cr_assert(label_match("tier notin (a,b)", "{\"tier\":\"c\"}"));
	cr_assert(label_match("tier notin (a,b)", "{}"));
	cr_assert(label_match("canary", "{\"canary\":\"\"}"));
	cr_assert_not(label_match("canary", "{}"));
	cr_assert(label_match("!canary", "{}"));
	cr_assert_not(label_match("!canary", "{\"canary\":\"x\"}"));
}

Test(sim_selector, requirements_are_anded)
{
	cr_assert(label_match("app=web,tier in (fe),!canary",
			      "{\"app\":\"web\",\"tier\":\"fe\"}"));
	cr_assert_not(label_match("app=web,tier in (fe),!canary",
				  "{\"app\":\"web\",\"tier\":\"fe\",\"canary\":\"1\"}"));
	cr_assert(label_match("", "{}"));
}

Test(sim_selector, rejects_malformed_selectors)
{
	static const char *const bad[] = { "app=web,", "in (a)", "app in a", "app in (a",
					   "app=web x", ",", "app<5" };
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct k8s_selector *sel = NULL;

		cr_assert_eq(k8s_label_selector_parse(bad[i], &sel, err, sizeof(err)), -EINVAL,
			     "accepted %s", bad[i]);
		cr_assert_null(sel);
		cr_assert_neq(err[0], '\0');
	}
}

static const char *resolve(const char *field, void *userdata)
{
	return k8s_json_field(userdata, field, NULL, 0);
}

Test(sim_selector, field_selectors_resolve_dotted_paths_and_refuse_set_operators)
{
	json_t *pod = json_loads("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\"},"
				 "\"status\":{\"phase\":\"Running\"}}", 0, NULL);
	struct k8s_selector *sel = NULL;
	char err[256];

	cr_assert_eq(k8s_field_selector_parse("spec.nodeName=n1,status.phase!=Failed", &sel,
					      err, sizeof(err)), 0);
	cr_assert(k8s_field_selector_matches(sel, resolve, pod));
	k8s_selector_free(sel);
	cr_assert_eq(k8s_field_selector_parse("spec.nodeName=", &sel, err, sizeof(err)), 0);
	cr_assert_not(k8s_field_selector_matches(sel, resolve, pod));
	k8s_selector_free(sel);
	sel = NULL;
	cr_assert_eq(k8s_field_selector_parse("spec.nodeName in (a)", &sel, err, sizeof(err)),
		     -EINVAL);
	json_decref(pod);
}

Test(sim_selector, label_selector_objects_from_pdbs)
{
	json_t *js = json_loads("{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":"
				"[{\"key\":\"tier\",\"operator\":\"NotIn\",\"values\":[\"db\"]}]}",
				0, NULL);
	json_t *yes = json_loads("{\"app\":\"web\",\"tier\":\"fe\"}", 0, NULL);
	json_t *no = json_loads("{\"app\":\"web\",\"tier\":\"db\"}", 0, NULL);
	struct k8s_selector *sel = NULL;
	char err[256];

	cr_assert_eq(k8s_label_selector_from_json(js, &sel, err, sizeof(err)), 0);
	cr_assert(k8s_label_selector_matches(sel, yes));
	cr_assert_not(k8s_label_selector_matches(sel, no));
	k8s_selector_free(sel);
	cr_assert_eq(k8s_label_selector_from_json(NULL, &sel, err, sizeof(err)), 0);
	cr_assert_not(k8s_label_selector_matches(sel, yes), "a null selector selects nothing");
	k8s_selector_free(sel);
	json_decref(js);
	json_decref(yes);
	json_decref(no);
}
