/*
 * Scenario runner: every tests/scheduling/NAME.yaml is loaded, solved and
 * printed as --simulate --json would; its "# expect:" lines are checked
 * against that JSON (and the catalog, for instance-type labels). Files in
 * tests/scheduling/invalid/ must fail with their "# expect-error:" text.
 * Also runs the kanna-scheduler binary for its exit statuses.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "dump/dump.h"
#include "scheduler/simulate.h"

/* Scenario files shipped; fewer means some were lost. */
#define MIN_SCENARIOS 36

static char *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert(f, "open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	cr_assert(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static const char *srcdir(void)
{
	const char *s = getenv("KANNA_SRCDIR");
	return s && *s ? s : KANNA_SRCDIR;
}

static bool list_has(json_t *arr, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
		if (streq(json_string_value(v), s))
			return true;
	return false;
}

/* "a,b,c" equals the array exactly (order as printed). */
static bool list_equals(json_t *arr, const char *csv)
{
	char buf[512], *save = NULL;
	size_t i = 0;
	snprintf(buf, sizeof(buf), "%s", csv);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), i++)
		if (i >= json_array_size(arr) || !streq(json_string_value(json_array_get(arr, i)), t))
			return false;
	return i == json_array_size(arr);
}

static const struct instance_type *type_by_name(const struct cluster *c, const char *name)
{
	uint32_t id = strtab_lookup(&c->st, name);
	for (uint32_t t = 0; t < c->cat.n_types; t++)
		if (c->cat.types[t].name == id)
			return &c->cat.types[t];
	return NULL;
}

static bool label_ok(const struct cluster *c, const char *type, const char *key, const char *op,
		     const char *arg)
{
	const struct instance_type *it = type_by_name(c, type);
	uint32_t k = strtab_lookup(&c->st, key);
	if (!it || k == STR_NONE)
		return false;
	uint32_t v = labels_get(it->labels, it->n_labels, k);
	if (v == STR_NONE)
		return false;
	const char *val = strtab_str(&c->st, v);
	if (streq(op, "in")) {
		char buf[256], *save = NULL;
		snprintf(buf, sizeof(buf), "%s", arg);
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
			if (streq(t, val))
				return true;
		return false;
	}
	if (streq(op, "gt"))
		return atoll(val) > atoll(arg);
	if (streq(op, "ge"))
		return atoll(val) >= atoll(arg);
	if (streq(op, "lt"))
		return atoll(val) < atoll(arg);
	if (streq(op, "le"))
		return atoll(val) <= atoll(arg);
	return false;
}

static int64_t count_pods(json_t *arr)
{
	size_t i;
	json_t *v;
	int64_t n = 0;
	json_array_foreach(arr, i, v)
		n += (int64_t)json_array_size(json_object_get(v, "pods"));
	return n;
}

/* Returns NULL when the expectation holds, else what was found. */
static const char *check(const struct cluster *c, json_t *out, const char *e, char *why, size_t sz)
{
	json_t *claims = json_object_get(out, "nodeClaims"), *un = json_object_get(out, "unschedulable");
	json_t *ex = json_object_get(out, "existingNodes"), *cl, *t;
	char a[256] = "", b[256] = "", d[256] = "";
	size_t i, j;
	long long n = 0;

	if (sscanf(e, "nodeClaims %lld", &n) == 1) {
		snprintf(why, sz, "%zu nodeClaims", json_array_size(claims));
		return (long long)json_array_size(claims) == n ? NULL : why;
	}
	if (sscanf(e, "claimPods %lld", &n) == 1) {
		snprintf(why, sz, "%lld pods in nodeClaims", (long long)count_pods(claims));
		return count_pods(claims) == n ? NULL : why;
	}
	if (sscanf(e, "existingPods %lld", &n) == 1) {
		snprintf(why, sz, "%lld pods on existing nodes", (long long)count_pods(ex));
		return count_pods(ex) == n ? NULL : why;
	}
	if (sscanf(e, "unschedulable>= %lld", &n) == 1) {
		snprintf(why, sz, "%zu unschedulable", json_array_size(un));
		return (long long)json_array_size(un) >= n ? NULL : why;
	}
	if (sscanf(e, "unschedulable %lld", &n) == 1) {
		snprintf(why, sz, "%zu unschedulable", json_array_size(un));
		return (long long)json_array_size(un) == n ? NULL : why;
	}
	if (!strncmp(e, "reason ", 7)) {
		json_array_foreach(un, i, t)
			if (strstr(json_string_value(json_object_get(t, "reason")), e + 7))
				return NULL;
		snprintf(why, sz, "no such reason among %zu", json_array_size(un));
		return why;
	}
	if (sscanf(e, "anyClaim.capacityTypes %255s", a) == 1) {
		json_array_foreach(claims, i, cl)
			if (list_has(json_object_get(cl, "capacityTypes"), a))
				return NULL;
		return "no claim with it";
	}
	if (sscanf(e, "everyClaim.%255[^ ] %255s", b, a) == 2) {
		json_array_foreach(claims, i, cl)
			if (!list_equals(json_object_get(cl, b), a)) {
				char *s = json_dumps(json_object_get(cl, b), JSON_COMPACT);
				snprintf(why, sz, "claim %zu has %s", i, s);
				free(s);
				return why;
			}
		return json_array_size(claims) ? NULL : "no claims";
	}
	if (sscanf(e, "everyType.label %255s %255s %255s", a, b, d) == 3) {
		json_array_foreach(claims, i, cl)
			json_array_foreach(json_object_get(cl, "instanceTypes"), j, t)
				if (!label_ok(c, json_string_value(t), a, b, d)) {
					snprintf(why, sz, "type %s", json_string_value(t));
					return why;
				}
		return json_array_size(claims) ? NULL : "no claims";
	}
	if (sscanf(e, "anyType.label %255s %255s %255s", a, b, d) == 3) {
		json_array_foreach(claims, i, cl)
			json_array_foreach(json_object_get(cl, "instanceTypes"), j, t)
				if (label_ok(c, json_string_value(t), a, b, d))
					return NULL;
		return "no such type";
	}
	if (sscanf(e, "everyType.notContains %255s", a) == 1) {
		json_array_foreach(claims, i, cl)
			json_array_foreach(json_object_get(cl, "instanceTypes"), j, t)
				if (strstr(json_string_value(t), a)) {
					snprintf(why, sz, "type %s", json_string_value(t));
					return why;
				}
		return NULL;
	}
	if (sscanf(e, "candidateTypes %lld", &n) == 1) {
		json_array_foreach(claims, i, cl)
			if ((long long)json_array_size(json_object_get(cl, "instanceTypes")) != n)
				return "a claim has another number of types";
		return NULL;
	}
	if (sscanf(e, "zonesUsed %lld", &n) == 1 || sscanf(e, "podsPerZone %lld", &n) == 1) {
		json_t *zones = json_object();
		json_array_foreach(claims, i, cl) {
			json_t *z = json_object_get(cl, "zones");
			if (json_array_size(z) != 1) {
				json_decref(zones);
				return "a claim is not pinned to one zone";
			}
			const char *zn = json_string_value(json_array_get(z, 0));
			json_int_t k = json_integer_value(json_object_get(zones, zn));
			json_object_set_new(zones, zn, json_integer(k + (json_int_t)json_array_size(json_object_get(cl, "pods"))));
		}
		bool ok = true;
		if (!strncmp(e, "zonesUsed", 9))
			ok = (long long)json_object_size(zones) == n;
		else {
			const char *key;
			json_object_foreach(zones, key, t)
				ok &= json_integer_value(t) == n;
		}
		char *s = json_dumps(zones, JSON_COMPACT);
		snprintf(why, sz, "pods per zone %s", s);
		free(s);
		json_decref(zones);
		return ok ? NULL : why;
	}
	if (sscanf(e, "noClaimZone %255s", a) == 1) {
		json_array_foreach(claims, i, cl)
			if (list_has(json_object_get(cl, "zones"), a))
				return "a claim allows it";
		return NULL;
	}
	if (sscanf(e, "maxPodsPerClaim %lld", &n) == 1) {
		json_array_foreach(claims, i, cl)
			if ((long long)json_array_size(json_object_get(cl, "pods")) > n)
				return "a claim has more";
		return NULL;
	}
	if (sscanf(e, "firstType %255s", a) == 1) {
		json_array_foreach(claims, i, cl)
			if (!streq(json_string_value(json_array_get(json_object_get(cl, "instanceTypes"), 0)), a))
				return "another first type";
		return json_array_size(claims) ? NULL : "no claims";
	}
	if (sscanf(e, "claimsOf %255s %lld", a, &n) == 2) {
		long long k = 0;
		json_array_foreach(claims, i, cl)
			k += streq(json_string_value(json_object_get(cl, "nodePool")), a);
		snprintf(why, sz, "%lld claims", k);
		return k == n ? NULL : why;
	}
	if (sscanf(e, "maxPerNode %255s %lld", a, &n) == 2) {
		/* Pods named "<a>…" per NodeClaim and per existing node, at most n. */
		json_t *lists[2] = { claims, ex };
		for (int l = 0; l < 2; l++)
			json_array_foreach(lists[l], i, cl) {
				long long k = 0;
				json_array_foreach(json_object_get(cl, "pods"), j, t)
					k += !strncmp(strchr(json_string_value(t), '/') + 1, a, strlen(a));
				if (k > n) {
					snprintf(why, sz, "%s %zu has %lld", l ? "node" : "claim", i, k);
					return why;
				}
			}
		return NULL;
	}
	if (sscanf(e, "typesOf %255s %255s", a, b) == 2) {
		/* Every claim of NodePool a lists exactly these types, cheapest first. */
		long long k = 0;
		json_array_foreach(claims, i, cl) {
			if (!streq(json_string_value(json_object_get(cl, "nodePool")), a))
				continue;
			k++;
			if (!list_equals(json_object_get(cl, "instanceTypes"), b)) {
				char *s = json_dumps(json_object_get(cl, "instanceTypes"), JSON_COMPACT);
				snprintf(why, sz, "claim %zu has %s", i, s);
				free(s);
				return why;
			}
		}
		return k ? NULL : "no claim of that nodepool";
	}
	if (sscanf(e, "existingNode %255s %lld", a, &n) == 2) {
		json_array_foreach(ex, i, t)
			if (streq(json_string_value(json_object_get(t, "node")), a))
				return (long long)json_array_size(json_object_get(t, "pods")) == n ? NULL : "other count";
		return "node not listed";
	}
	if (sscanf(e, "limit %255s %255s %lld", a, b, &n) == 3) {
		int slot = catalog_resource((struct catalog *)&c->cat, b, false);
		int64_t sum = 0;
		cr_assert_geq(slot, 0);
		json_array_foreach(claims, i, cl) {
			int64_t max = 0;
			if (!streq(json_string_value(json_object_get(cl, "nodePool")), a))
				continue;
			json_array_foreach(json_object_get(cl, "instanceTypes"), j, t)
				max = MAX(max, type_by_name(c, json_string_value(t))->capacity.v[slot]);
			sum += max;
		}
		if (slot == RES_CPU)
			n *= 1000;
		snprintf(why, sz, "%lld reserved", (long long)sum);
		return sum <= n ? NULL : why;
	}
	if (sscanf(e, "distinctLabel %255s %lld", a, &n) == 2) {
		uint32_t k = strtab_lookup(&c->st, a);
		json_array_foreach(claims, i, cl) {
			uint32_t seen[64], ns = 0;
			json_array_foreach(json_object_get(cl, "instanceTypes"), j, t) {
				const struct instance_type *it = type_by_name(c, json_string_value(t));
				uint32_t v = labels_get(it->labels, it->n_labels, k), x;
				for (x = 0; x < ns && seen[x] != v; x++)
					;
				if (x == ns && ns < 64)
					seen[ns++] = v;
			}
			if (ns < n)
				return "too few distinct values";
		}
		return NULL;
	}
	return "unknown expectation";
}

static int run_scenario(const char *dir, const char *name)
{
	char path[4096], err[1024], why[512];
	size_t size, len = 0;
	char *data, *json = NULL;
	struct cluster *c;
	struct sched_result *res;
	int failures = 0, expectations = 0;

	cr_assert_lt((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name), sizeof(path));
	data = read_file(path, &size);
	cr_assert_eq(dump_load(name, data, size, NULL, &c, err, sizeof(err)), 0, "%s: %s", name, err);
	cr_assert_eq(sched_solve(c, &res), 0, "%s: solve", name);
	FILE *mem = open_memstream(&json, &len);
	cr_assert_eq(simulate_print_json(mem, c, res), 0);
	fclose(mem);
	json_t *out = json_loads(json, 0, NULL);
	cr_assert(out, "%s: JSON output does not parse", name);
	for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "# expect: ", 10))
			continue;
		expectations++;
		const char *bad = check(c, out, line + 10, why, sizeof(why));
		if (bad) {
			cr_log_error("%s: expected %s — %s", name, line + 10, bad);
			failures++;
		}
	}
	if (!expectations) {
		cr_log_error("%s: no expectations", name);
		failures++;
	}
	json_decref(out);
	free(json);
	free(data);
	sched_result_free(res);
	cluster_free(c);
	return failures;
}

Test(scenarios, every_scenario_meets_its_expectations)
{
	char dir[4096];
	struct dirent *e;
	int failures = 0, n = 0;

	snprintf(dir, sizeof(dir), "%s/tests/scheduling", srcdir());
	DIR *d = opendir(dir);
	cr_assert(d, "open %s", dir);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".yaml"))
			continue;
		failures += run_scenario(dir, e->d_name);
		n++;
	}
	closedir(d);
	cr_assert_geq(n, MIN_SCENARIOS, "only %d scenarios found", n);
	cr_assert_eq(failures, 0, "%d expectation(s) failed", failures);
}

Test(scenarios, invalid_inputs_fail_with_file_line_column)
{
	char dir[4096], path[4096], err[1024];
	struct dirent *e;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/tests/scheduling/invalid", srcdir());
	DIR *d = opendir(dir);
	cr_assert(d);
	while ((e = readdir(d))) {
		size_t size;
		struct cluster *c = NULL;
		if (!strstr(e->d_name, ".yaml"))
			continue;
		cr_assert_lt((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name), sizeof(path));
		char *data = read_file(path, &size);
		char *want = strstr(data, "# expect-error: ");
		cr_assert(want, "%s has no expect-error", e->d_name);
		want += 16;
		want[strcspn(want, "\n")] = '\0';
		char full[600];
		snprintf(full, sizeof(full), "%s:%s", e->d_name, want);
		data[strlen(data)] = '\n';
		int r = dump_load(e->d_name, data, size, NULL, &c, err, sizeof(err));
		cr_expect_eq(r, -EINVAL, "%s loaded", e->d_name);
		cr_expect(strstr(err, full), "%s: got \"%s\", want \"%s\"", e->d_name, err, full);
		free(data);
		n++;
	}
	closedir(d);
	cr_assert_geq(n, 4);
}

static int run_cli(const char *args)
{
	char cmd[8192];
	const char *b = getenv("KANNA_BUILDDIR");
	snprintf(cmd, sizeof(cmd), "%s/scheduler/kanna-scheduler %s >/dev/null 2>&1", b && *b ? b : ".", args);
	int st = system(cmd);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

Test(scenarios, cli_exit_status_is_0_when_solved_and_2_on_invalid_input)
{
	char args[4096];
	snprintf(args, sizeof(args), "--simulate %s/tests/scheduling/taints-and-tolerations.yaml --json", srcdir());
	cr_assert_eq(run_cli(args), 0);
	snprintf(args, sizeof(args), "--simulate %s/tests/scheduling/invalid/bad-operator.yaml", srcdir());
	cr_assert_eq(run_cli(args), 2);
	cr_assert_eq(run_cli("--help"), 0);
	cr_assert_eq(run_cli("--simulate"), 2, "--simulate needs a file");
	cr_assert_eq(run_cli("--no-such-option"), 2, "the daemon refuses unknown options");
}
