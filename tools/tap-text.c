/*
 * kanna-tap's readable output (tools/tap-text.h): one line per message,
 * built from the decoded JSON line with one summary function per message
 * type (proto/proto.h's field names). Fields a message leaves out (proto
 * defaults) are left out here too; nothing here fails on odd input, it
 * prints "?" for what is missing. Cleanup style: _cleanup_ attributes.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "tools/tap-text.h"

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static const char *str_of(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s ? s : "?";
}

static json_int_t int_of(json_t *obj, const char *key)
{
	return json_integer_value(json_object_get(obj, key));
}

/* "+N more" after TAP_TEXT_MAX_ITEMS of a list of n. */
static void more(FILE *f, size_t n)
{
	if (n > TAP_TEXT_MAX_ITEMS)
		fprintf(f, " +%zu more", n - TAP_TEXT_MAX_ITEMS);
}

/* Pod keys ("ns/name") of a plan, result or candidate. */
static void pod_keys(FILE *f, json_t *pods)
{
	size_t i;
	json_t *p;

	json_array_foreach(pods, i, p) {
		if (i == TAP_TEXT_MAX_ITEMS)
			break;
		fprintf(f, " %s", json_string_value(p) ? json_string_value(p) : "?");
	}
	more(f, json_array_size(pods));
}

static void on_hello(FILE *f, json_t *b)
{
	fprintf(f, "role %s shard %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT
		   " protocol %" JSON_INTEGER_FORMAT ".%" JSON_INTEGER_FORMAT " pid %" JSON_INTEGER_FORMAT,
		str_of(b, "role"), int_of(b, "shard"), int_of(b, "n_shards"), int_of(b, "version_major"),
		int_of(b, "version_minor"), int_of(b, "pid"));
	if (json_object_get(b, "instance"))
		fprintf(f, " on %s", str_of(b, "instance"));
}

static void on_heartbeat(FILE *f, json_t *b)
{
	fprintf(f, "uptime %.1fs state_seq %" JSON_INTEGER_FORMAT " queue %" JSON_INTEGER_FORMAT,
		(double)int_of(b, "uptime_ms") / 1000.0, int_of(b, "state_seq"), int_of(b, "queue_depth"));
}

/* A cluster-state object: its kind, name and what ties it to others. */
static void state_object(FILE *f, json_t *wrapped)
{
	const char *kind = str_of(wrapped, "kind");
	json_t *o = json_object_get(wrapped, "object");

	if (json_object_get(o, "ns"))
		fprintf(f, " %s %s/%s", kind, str_of(o, "ns"), str_of(o, "name"));
	else
		fprintf(f, " %s %s", kind, str_of(o, "name"));
	if (streq(kind, "pod")) {
		if (json_object_get(o, "phase"))
			fprintf(f, " %s", str_of(o, "phase"));
		if (json_object_get(o, "node_name"))
			fprintf(f, " on node %s", str_of(o, "node_name"));
		if (json_object_get(o, "nominated_nodeclaim"))
			fprintf(f, " nominated for nodeclaim %s", str_of(o, "nominated_nodeclaim"));
	} else if (streq(kind, "nodeclaim")) {
		fprintf(f, " (nodepool %s", str_of(o, "nodepool"));
		if (json_object_get(o, "instance_type"))
			fprintf(f, ", %s", str_of(o, "instance_type"));
		if (json_object_get(o, "node_name"))
			fprintf(f, ", node %s", str_of(o, "node_name"));
		fprintf(f, ", %zu planned pod(s))", json_array_size(json_object_get(o, "planned_pods")));
	} else if (streq(kind, "node")) {
		if (json_object_get(o, "nodeclaim"))
			fprintf(f, " (nodeclaim %s)", str_of(o, "nodeclaim"));
		if (json_object_get(o, "ready"))
			fprintf(f, " ready %s", str_of(o, "ready"));
	}
}

static void on_state_delta(FILE *f, json_t *b)
{
	fprintf(f, "seq %" JSON_INTEGER_FORMAT " %s", int_of(b, "seq"), str_of(b, "op"));
	state_object(f, json_object_get(b, "object"));
}

static void on_snapshot_request(FILE *f, json_t *b)
{
	fprintf(f, "since seq %" JSON_INTEGER_FORMAT, int_of(b, "since_seq"));
}

static void on_snapshot_item(FILE *f, json_t *b)
{
	fprintf(f, "seq %" JSON_INTEGER_FORMAT, int_of(b, "seq"));
	state_object(f, json_object_get(b, "object"));
}

static void on_snapshot_end(FILE *f, json_t *b)
{
	fprintf(f, "as of seq %" JSON_INTEGER_FORMAT ", %" JSON_INTEGER_FORMAT " item(s)",
		int_of(b, "as_of_seq"), int_of(b, "n_items"));
}

static void on_pending_pods(FILE *f, json_t *b)
{
	json_t *pods = json_object_get(b, "pods"), *p;
	size_t i;

	fprintf(f, "shard %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT " %zu pod(s):",
		int_of(b, "shard"), int_of(b, "n_shards"), json_array_size(pods));
	json_array_foreach(pods, i, p) {
		if (i == TAP_TEXT_MAX_ITEMS)
			break;
		fprintf(f, " %s/%s", str_of(p, "ns"), str_of(p, "name"));
	}
	more(f, json_array_size(pods));
}

/* "default-abc (nodepool default, 12 pods, cheapest m5.large)": the
 * scheduler lists a NodeClaim's instance types cheapest first. */
static void planned(FILE *f, json_t *nc)
{
	json_t *types = json_object_get(nc, "instance_types");

	fprintf(f, " %s (nodepool %s, %zu pod(s)", str_of(nc, "id"), str_of(nc, "nodepool"),
		json_array_size(json_object_get(nc, "pods")));
	if (json_array_size(types) > 0)
		fprintf(f, ", cheapest %s of %zu", str_of(json_array_get(types, 0), "name"),
			json_array_size(types));
	fputc(')', f);
}

static void planned_list(FILE *f, json_t *list)
{
	size_t i;
	json_t *nc;

	json_array_foreach(list, i, nc) {
		if (i == TAP_TEXT_MAX_ITEMS)
			break;
		fputs(i ? "," : "", f);
		planned(f, nc);
	}
	more(f, json_array_size(list));
}

static void on_launch_plan(FILE *f, json_t *b)
{
	json_t *ncs = json_object_get(b, "nodeclaims");

	fprintf(f, "%s %zu nodeclaim(s):", str_of(b, "plan_id"), json_array_size(ncs));
	planned_list(f, ncs);
}

static void on_launch_result(FILE *f, json_t *b)
{
	fprintf(f, "nodeclaim %s %s", str_of(b, "nodeclaim"), str_of(b, "outcome"));
	if (json_object_get(b, "instance_id"))
		fprintf(f, " %s", str_of(b, "instance_id"));
	if (json_object_get(b, "instance_type"))
		fprintf(f, " %s %s %s", str_of(b, "instance_type"), str_of(b, "zone"),
			json_object_get(b, "capacity_type") ? str_of(b, "capacity_type") : "on-demand");
	if (json_object_get(b, "node_name"))
		fprintf(f, " node %s", str_of(b, "node_name"));
	if (json_object_get(b, "plan_id"))
		fprintf(f, " plan %s", str_of(b, "plan_id"));
	fprintf(f, ", %zu pod(s)", json_array_size(json_object_get(b, "pods")));
	pod_keys(f, json_object_get(b, "pods"));
	if (json_object_get(b, "error"))
		fprintf(f, ": %s", str_of(b, "error"));
}

static void on_offering_unavailable(FILE *f, json_t *b)
{
	time_t until = (time_t)(int_of(b, "until") / 1000);
	char when[16] = "?";
	struct tm tm;

	if (gmtime_r(&until, &tm))
		strftime(when, sizeof(when), "%H:%M:%SZ", &tm);
	fprintf(f, "%s %s %s until %s", str_of(b, "instance_type"), str_of(b, "zone"),
		str_of(b, "capacity_type"), when);
	if (json_object_get(b, "reason"))
		fprintf(f, ": %s", str_of(b, "reason"));
}

static void on_catalog(FILE *f, json_t *b)
{
	fprintf(f, "generation %" JSON_INTEGER_FORMAT " region %s, %zu instance type(s)",
		int_of(b, "generation"), str_of(b, "region"),
		json_array_size(json_object_get(b, "instance_types")));
}

static void on_disruption_decision(FILE *f, json_t *b)
{
	json_t *cands = json_object_get(b, "candidates"), *c;
	json_t *repl = json_object_get(b, "replacements");
	size_t i;

	fprintf(f, "%s %s: %zu candidate(s):", str_of(b, "id"), str_of(b, "reason"),
		json_array_size(cands));
	json_array_foreach(cands, i, c) {
		if (i == TAP_TEXT_MAX_ITEMS)
			break;
		fprintf(f, "%s node %s (nodeclaim %s, nodepool %s, %zu pod(s))", i ? "," : "",
			str_of(c, "node"), str_of(c, "nodeclaim"), str_of(c, "nodepool"),
			json_array_size(json_object_get(c, "pods")));
	}
	more(f, json_array_size(cands));
	if (json_array_size(repl) > 0) {
		fprintf(f, "; %zu replacement(s):", json_array_size(repl));
		planned_list(f, repl);
	}
	if (json_object_get(b, "savings"))
		fprintf(f, "; saves $%.4f/h", json_number_value(json_object_get(b, "savings")));
}

static void on_undecodable(FILE *f, json_t *line)
{
	fprintf(f, "%" JSON_INTEGER_FORMAT " byte(s): %s", int_of(line, "bytes"), str_of(line, "error"));
}

static const struct {
	const char *type;
	void (*summary)(FILE *f, json_t *body);
} summaries[] = {
	{ "hello", on_hello },
	{ "heartbeat", on_heartbeat },
	{ "state_delta", on_state_delta },
	{ "snapshot_request", on_snapshot_request },
	{ "snapshot_item", on_snapshot_item },
	{ "snapshot_end", on_snapshot_end },
	{ "pending_pods", on_pending_pods },
	{ "launch_plan", on_launch_plan },
	{ "launch_result", on_launch_result },
	{ "offering_unavailable", on_offering_unavailable },
	{ "catalog", on_catalog },
	{ "disruption_decision", on_disruption_decision },
};

/* "2026-11-22T22:29:39.123456Z" -> "22:29:39.123456". */
static void time_of_day(FILE *f, const char *time)
{
	const char *t = strchr(time, 'T');
	if (t && strlen(t + 1) > 1)
		fprintf(f, "%.*s", (int)(strlen(t + 1) - 1), t + 1);
	else
		fputs(time, f);
}

int tap_format_text(json_t *line, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	const char *type = str_of(line, "type"), *dir = str_of(line, "direction");
	json_t *body = json_object_get(json_object_get(line, "fields"), "body");
	size_t size = 0;

	{
		_cleanup_(fclosep) FILE *f = open_memstream(&buf, &size);
		if (!f)
			return -ENOMEM;
		time_of_day(f, str_of(line, "time"));
		fprintf(f, " %s %s %s %s ", str_of(line, "process"),
			streq(dir, "send") ? "->" : streq(dir, "recv") ? "<-" : "??",
			str_of(line, "socket"), type);
		if (streq(type, "undecodable"))
			on_undecodable(f, line);
		else
			for (size_t i = 0; i < ARRAY_SIZE(summaries); i++)
				if (streq(type, summaries[i].type)) {
					summaries[i].summary(f, body);
					break;
				}
		if (ferror(f))
			return -ENOMEM;
	}
	if (!buf)
		return -ENOMEM;
	while (size > 0 && buf[size - 1] == ' ') /* a type without a summary */
		buf[--size] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}
