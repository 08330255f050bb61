/*
 * kanna-tap's views of a message: the field filters (tools/tap-filter.c),
 * the readable lines (tools/tap-text.c) and the --summary arithmetic
 * (tools/tap-summary.c). Messages are real: built as proto structs, encoded
 * and formatted by tools/tap-format.c, as kanna-tap sees them.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "tools/tap-filter.h"
#include "tools/tap-format.h"
#include "tools/tap-summary.h"
#include "tools/tap-text.h"

static struct proto_decoder *decoder;

static void setup(void)
{
	decoder = proto_decoder_new();
	cr_assert(decoder);
}

static void teardown(void)
{
	proto_decoder_free(decoder);
}

/* The line kanna-tap builds for m, tapped from `process` with `header`. */
static json_t *line_of(const char *process, const char *header, struct proto_msg *m)
{
	msgpack_sbuffer buf;
	json_t *line = NULL;

	msgpack_sbuffer_init(&buf);
	struct proto_error err = { 0 };
	cr_assert_eq(proto_encode(m, &buf, &err), 0, "encode: %s", err.text);
	struct tap_frame frames[2] = { { header, strlen(header) }, { buf.data, buf.size } };
	cr_assert_eq(tap_message_to_json(decoder, process, frames, 2, 0, 0, &line), 0);
	msgpack_sbuffer_destroy(&buf);
	return line;
}

static struct proto_candidate m5_large = { .name = "m5.large" };
static struct proto_candidate types_2[] = { { .name = "m5.large" }, { .name = "m5.xlarge" } };
static char *plan_pods_a[] = { "default/inflate-1", "default/inflate-2", "batch/job-7" };
static char *plan_pods_b[] = { "default/web-0" };

/* A scheduler's plan: default-abc (nodepool default, 3 pods), gpu-xyz
 * (nodepool gpu, 1 pod). */
static json_t *launch_plan_line(void)
{
	struct proto_planned_nodeclaim ncs[] = {
		{ .id = "default-abc", .nodepool = "default", .instance_types = types_2,
		  .n_instance_types = 2, .pods = plan_pods_a, .n_pods = 3 },
		{ .id = "gpu-xyz", .nodepool = "gpu", .instance_types = &m5_large,
		  .n_instance_types = 1, .pods = plan_pods_b, .n_pods = 1 },
	};
	struct proto_msg m;

	proto_msg_init(&m, PROTO_MSG_LAUNCH_PLAN, PROTO_PROCESS_SCHEDULER, 0, 9);
	m.body.launch_plan = (struct proto_launch_plan){ .plan_id = "plan-0-3", .nodeclaims = ncs,
							 .n_nodeclaims = 2 };
	return line_of("scheduler", "send plans 1763850579123456", &m);
}

static json_t *pending_line(size_t n_pods)
{
	struct proto_pod pods[5] = {
		{ .ns = "default", .name = "inflate-1", .uid = "u1" },
		{ .ns = "default", .name = "inflate-2", .uid = "u2", .nominated_nodeclaim = "default-abc" },
		{ .ns = "batch", .name = "job-7", .uid = "u3" },
		{ .ns = "batch", .name = "job-8", .uid = "u4" },
		{ .ns = "batch", .name = "job-9", .uid = "u5" },
	};
	struct proto_msg m;

	proto_msg_init(&m, PROTO_MSG_PENDING_PODS, PROTO_PROCESS_WATCHER, 0, 4);
	m.body.pending_pods = (struct proto_pending_pods){ .n_shards = 1, .pods = pods,
							   .n_pods = (uint32_t)n_pods };
	return line_of("watcher", "send pending.0 1763850579000000", &m);
}

static json_t *delta_line(struct proto_object obj)
{
	struct proto_msg m;

	proto_msg_init(&m, PROTO_MSG_STATE_DELTA, PROTO_PROCESS_WATCHER, 0, 12);
	m.body.state_delta = (struct proto_state_delta){ .seq = 12, .op = PROTO_DELTA_UPDATE, .object = obj };
	return line_of("watcher", "send state.pub 1763850579000000", &m);
}

static char *claim_pods[] = { "default/inflate-3" };

static json_t *nodeclaim_delta_line(void)
{
	static struct proto_nodeclaim nc = { .name = "default-q7", .uid = "c1", .nodepool = "default",
					     .instance_type = "m5.large", .planned_pods = claim_pods,
					     .n_planned_pods = 1 };
	return delta_line((struct proto_object){ .kind = PROTO_OBJECT_NODECLAIM, .nodeclaim = &nc });
}

static json_t *node_delta_line(void)
{
	static struct proto_kv labels[] = { { "karpenter.sh/nodepool", "spot-pool" } };
	static struct proto_node node = { .name = "ip-10-0-0-1", .uid = "n1", .nodeclaim = "spot-pool-x1",
					  .labels = labels, .n_labels = 1 };
	return delta_line((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &node });
}

static json_t *launch_result_line(void)
{
	static char *pods[] = { "default/inflate-1", "default/inflate-2" };
	struct proto_msg m;

	proto_msg_init(&m, PROTO_MSG_LAUNCH_RESULT, PROTO_PROCESS_LAUNCHER, 0, 3);
	m.body.launch_result = (struct proto_launch_result){
		.plan_id = "plan-0-3", .nodeclaim = "default-abc", .outcome = PROTO_LAUNCH_LAUNCHED,
		.instance_id = "i-0abc", .instance_type = "m5.large", .zone = "us-west-2a",
		.capacity_type = PROTO_CAPACITY_SPOT, .pods = pods, .n_pods = 2 };
	return line_of("launcher", "recv results 1763850579000000", &m);
}

static json_t *decision_line(void)
{
	static char *pods[] = { "web/api-1" };
	static struct proto_disruption_candidate cands[] = {
		{ .node = "ip-10-0-0-9", .nodeclaim = "old-claim", .nodepool = "legacy", .pods = pods, .n_pods = 1 },
	};
	static struct proto_planned_nodeclaim repl[] = {
		{ .id = "new-claim", .nodepool = "fresh", .instance_types = &m5_large, .n_instance_types = 1 },
	};
	struct proto_msg m;

	proto_msg_init(&m, PROTO_MSG_DISRUPTION_DECISION, PROTO_PROCESS_REAPER, 0, 5);
	m.body.disruption_decision = (struct proto_disruption_decision){
		.id = "d-1", .reason = PROTO_DISRUPT_CONSOLIDATION_REPLACE, .candidates = cands,
		.n_candidates = 1, .replacements = repl, .n_replacements = 1, .savings = 0.05 };
	return line_of("reaper", "send decisions 1763850579000000", &m);
}

static json_t *heartbeat_line(void)
{
	struct proto_msg m;

	proto_msg_init(&m, PROTO_MSG_HEARTBEAT, PROTO_PROCESS_LAUNCHER, 0, 1);
	m.body.heartbeat.uptime_ms = 2500;
	return line_of("launcher", "send results 1", &m);
}

/* A filter with one field pattern of `kind` ('p'od, 'c'laim, 'n'odepool). */
static bool matches(json_t *line, char kind, const char *pattern)
{
	struct tap_filter f = { 0 };
	struct tap_patterns *p = kind == 'p' ? &f.pods : kind == 'c' ? &f.nodeclaims : &f.nodepools;
	cr_assert_eq(tap_patterns_add(p, (char *)pattern), 0);
	bool m = tap_filter_match_fields(&f, line);
	tap_filter_done(&f);
	return m;
}

TestSuite(tap_filter, .init = setup, .fini = teardown);

Test(tap_filter, launch_plan_matches_its_nodepools_nodeclaims_and_pods)
{
	json_t *l = launch_plan_line();

	cr_expect(matches(l, 'n', "default"));
	cr_expect(matches(l, 'n', "gpu"));
	cr_expect_not(matches(l, 'n', "spot-pool"));
	cr_expect(matches(l, 'c', "gpu-xyz"));
	cr_expect(matches(l, 'c', "default-*"), "a glob matches");
	cr_expect_not(matches(l, 'c', "default"), "a plain name matches itself only");
	cr_expect(matches(l, 'p', "job-7"), "a name without namespace matches any namespace");
	cr_expect(matches(l, 'p', "batch/job-7"));
	cr_expect_not(matches(l, 'p', "default/job-7"), "the namespace must match too");
	cr_expect(matches(l, 'p', "*/web-*"));
	json_decref(l);
}

Test(tap_filter, pending_pods_match_by_namespace_and_name_and_nominated_nodeclaim)
{
	json_t *l = pending_line(3);

	cr_expect(matches(l, 'p', "default/inflate-2"));
	cr_expect(matches(l, 'p', "batch/*"));
	cr_expect_not(matches(l, 'p', "kube-system/*"));
	cr_expect(matches(l, 'c', "default-abc"));
	cr_expect_not(matches(l, 'n', "default"), "a pending pod names no NodePool");
	json_decref(l);
}

Test(tap_filter, state_deltas_match_the_object_and_what_it_refers_to)
{
	json_t *claim = nodeclaim_delta_line(), *node = node_delta_line();
	static struct proto_nodepool np = { .name = "default", .uid = "p1" };
	static struct proto_pod pod = { .ns = "default", .name = "inflate-9", .uid = "u9",
					.nominated_nodeclaim = "default-q7" };
	json_t *pool = delta_line((struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np });
	json_t *p = delta_line((struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = &pod });

	cr_expect(matches(claim, 'c', "default-q7"));
	cr_expect(matches(claim, 'n', "default"));
	cr_expect(matches(claim, 'p', "default/inflate-3"), "a planned pod");
	cr_expect_not(matches(claim, 'p', "inflate-1"));
	cr_expect(matches(node, 'n', "spot-pool"), "by the karpenter.sh/nodepool label");
	cr_expect(matches(node, 'c', "spot-pool-x1"));
	cr_expect_not(matches(node, 'n', "default"));
	cr_expect(matches(pool, 'n', "default"));
	cr_expect_not(matches(pool, 'c', "default"));
	cr_expect(matches(p, 'p', "inflate-9"));
	cr_expect(matches(p, 'c', "default-q7"));
	cr_expect_not(matches(p, 'n', "default"));
	json_decref(claim);
	json_decref(node);
	json_decref(pool);
	json_decref(p);
}

Test(tap_filter, results_and_decisions_match_their_nodeclaims_nodepools_and_pods)
{
	json_t *res = launch_result_line(), *dec = decision_line();

	cr_expect(matches(res, 'c', "default-abc"));
	cr_expect(matches(res, 'p', "default/inflate-1"));
	cr_expect_not(matches(res, 'c', "gpu-xyz"));
	cr_expect(matches(dec, 'c', "old-claim"), "a candidate");
	cr_expect(matches(dec, 'c', "new-claim"), "a replacement");
	cr_expect(matches(dec, 'n', "legacy"));
	cr_expect(matches(dec, 'n', "fresh"));
	cr_expect(matches(dec, 'p', "web/api-1"));
	cr_expect_not(matches(dec, 'n', "default"));
	json_decref(res);
	json_decref(dec);
}

Test(tap_filter, types_and_processes_and_fields_combine)
{
	json_t *plan = launch_plan_line(), *hb = heartbeat_line();
	struct tap_filter f = { 0 };

	cr_expect(tap_filter_match(&f, "launcher", hb), "no filter: everything");
	cr_assert_eq(tap_patterns_add(&f.types, "launch_*"), 0);
	cr_expect(tap_filter_match(&f, "scheduler", plan));
	cr_expect_not(tap_filter_match(&f, "launcher", hb), "another type");
	cr_assert_eq(tap_patterns_add(&f.processes, "launcher"), 0);
	cr_expect_not(tap_filter_match(&f, "scheduler", plan), "another process");
	cr_assert_eq(tap_patterns_add(&f.processes, "sched*"), 0);
	cr_expect(tap_filter_match(&f, "scheduler", plan), "any of the processes");
	cr_assert_eq(tap_patterns_add(&f.nodepools, "spot-pool"), 0);
	cr_expect_not(tap_filter_match(&f, "scheduler", plan), "no field matches");
	cr_assert_eq(tap_patterns_add(&f.pods, "web-0"), 0);
	cr_expect(tap_filter_match(&f, "scheduler", plan), "any field filter is enough");
	cr_expect_not(tap_filter_match_fields(&f, hb), "a heartbeat names nothing");
	tap_filter_done(&f);
	json_decref(plan);
	json_decref(hb);
}

Test(tap_filter, a_nodepool_filter_follows_its_nodeclaims_into_launch_results)
{
	json_t *plan = launch_plan_line(), *res = launch_result_line(), *node = node_delta_line();
	struct tap_filter f = { 0 };

	cr_assert_eq(tap_patterns_add(&f.nodepools, "default"), 0);
	cr_expect_not(tap_filter_match_fields(&f, res), "default-abc not yet known as default's");
	cr_assert_eq(tap_patterns_add(&f.types, "launch_result"), 0);
	cr_expect_not(tap_filter_match(&f, "scheduler", plan), "a plan is not a launch_result");
	cr_expect(tap_filter_match(&f, "launcher", res), "the plan tied default-abc to default");
	cr_expect_not(tap_filter_match_fields(&f, node), "a node of another NodeClaim");
	tap_filter_done(&f);

	cr_assert_eq(tap_patterns_add(&f.nodepools, "spot-pool"), 0);
	cr_expect(tap_filter_match_fields(&f, node), "by its label");
	tap_filter_done(&f);
	json_decref(plan);
	json_decref(res);
	json_decref(node);
}

/* ---- readable lines ------------------------------------------------------ */

static char *text_of(json_t *line)
{
	char *text = NULL;
	cr_assert_eq(tap_format_text(line, &text), 0);
	json_decref(line);
	return text;
}

TestSuite(tap_text, .init = setup, .fini = teardown);

Test(tap_text, launch_plan_names_each_nodeclaim_with_its_nodepool_pods_and_cheapest_type)
{
	char *t = text_of(launch_plan_line());

	cr_expect_str_eq(t, "22:29:39.123456 scheduler -> plans launch_plan plan-0-3 2 nodeclaim(s): "
			    "default-abc (nodepool default, 3 pod(s), cheapest m5.large of 2), "
			    "gpu-xyz (nodepool gpu, 1 pod(s), cheapest m5.large of 1)");
	free(t);
}

Test(tap_text, long_lists_are_cut_with_a_count_of_the_rest)
{
	char *t = text_of(pending_line(5));

	cr_expect_str_eq(t, "22:29:39.000000 watcher -> pending.0 pending_pods shard 0/1 5 pod(s): "
			    "default/inflate-1 default/inflate-2 batch/job-7 +2 more");
	free(t);
}

Test(tap_text, received_results_point_left_and_name_instance_and_pods)
{
	char *t = text_of(launch_result_line());

	cr_expect_str_eq(t, "22:29:39.000000 launcher <- results launch_result nodeclaim default-abc "
			    "launched i-0abc m5.large us-west-2a spot plan plan-0-3, 2 pod(s) "
			    "default/inflate-1 default/inflate-2");
	free(t);
}

Test(tap_text, state_deltas_and_decisions_say_what_changed)
{
	char *claim = text_of(nodeclaim_delta_line()), *node = text_of(node_delta_line());
	char *dec = text_of(decision_line());

	cr_expect_str_eq(claim, "22:29:39.000000 watcher -> state.pub state_delta seq 12 update "
				"nodeclaim default-q7 (nodepool default, m5.large, 1 planned pod(s))");
	cr_expect_str_eq(node, "22:29:39.000000 watcher -> state.pub state_delta seq 12 update "
			       "node ip-10-0-0-1 (nodeclaim spot-pool-x1)");
	cr_expect_str_eq(dec, "22:29:39.000000 reaper -> decisions disruption_decision d-1 "
			      "consolidation_replace: 1 candidate(s): node ip-10-0-0-9 (nodeclaim "
			      "old-claim, nodepool legacy, 1 pod(s)); 1 replacement(s): new-claim "
			      "(nodepool fresh, 0 pod(s), cheapest m5.large of 1); saves $0.0500/h");
	free(claim);
	free(node);
	free(dec);
}

Test(tap_text, undecodable_payload_shows_its_size_and_the_error)
{
	static const uint8_t garbage[] = { 0xc1, 0x00 };
	const char *header = "recv state.sync 1763850579000001";
	struct tap_frame frames[2] = { { header, strlen(header) }, { garbage, sizeof(garbage) } };
	json_t *line = NULL;

	cr_assert_eq(tap_message_to_json(decoder, "scheduler", frames, 2, 0, 0, &line), 0);
	char *t = text_of(line);
	cr_expect(strncmp(t, "22:29:39.000001 scheduler <- state.sync undecodable 2 byte(s): ", 63) == 0,
		  "%s", t);
	free(t);
}

/* ---- --summary ----------------------------------------------------------- */

#define SEC 1000000ull

/* A report printed as JSON, parsed back. */
static json_t *report(struct tap_summary *s, uint64_t now_usec, bool final)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	json_error_t error;

	cr_assert(f);
	cr_assert_eq(tap_summary_print(s, now_usec, 1763850579 * SEC, final, true, f), 0);
	fclose(f);
	json_t *obj = json_loads(buf, 0, &error);
	cr_assert(obj, "not JSON: %s (%s)", buf, error.text);
	cr_assert_eq(buf[size - 1], '\n', "one line");
	free(buf);
	return obj;
}

static double num(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	cr_assert(json_is_number(v), "%s is missing", key);
	return json_number_value(v);
}

static json_t *row(json_t *rep, size_t i)
{
	return json_array_get(json_object_get(rep, "rows"), i);
}

/* 10 plans of 100 bytes received by the launcher, 4 of 250 sent by the
 * scheduler and one undecodable frame of 3 bytes, 2 dropped, over 2 s. */
static void two_seconds_of_traffic(struct tap_summary *s)
{
	tap_summary_init(s, 1 * SEC);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(tap_summary_add(s, "launcher", "recv", "plans", "launch_plan", 100), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(tap_summary_add(s, "scheduler", "send", "plans", "launch_plan", 250), 0);
	cr_assert_eq(tap_summary_add(s, "watcher", "recv", "state.sync", TAP_TYPE_UNDECODABLE, 3), 0);
	tap_summary_add_dropped(s, 2);
}

TestSuite(tap_summary);

Test(tap_summary, interval_report_gives_count_and_rates_per_process_socket_and_type)
{
	struct tap_summary s;
	two_seconds_of_traffic(&s);
	json_t *rep = report(&s, 3 * SEC, false);

	cr_expect_eq(json_is_false(json_object_get(rep, "final")), true);
	cr_expect_float_eq(num(rep, "seconds"), 2.0, 1e-9);
	cr_expect_float_eq(num(rep, "messages"), 15, 1e-9);
	cr_expect_float_eq(num(rep, "rate"), 7.5, 1e-9);
	cr_expect_float_eq(num(rep, "bytes_per_s"), (1000 + 1000 + 3) / 2.0, 1e-9);
	cr_expect_float_eq(num(rep, "undecodable"), 1, 1e-9);
	cr_expect_float_eq(num(rep, "dropped"), 2, 1e-9);
	cr_assert_eq(json_array_size(json_object_get(rep, "rows")), 3);
	json_t *launcher = row(rep, 0), *scheduler = row(rep, 1);
	cr_expect_str_eq(json_string_value(json_object_get(launcher, "process")), "launcher");
	cr_expect_str_eq(json_string_value(json_object_get(launcher, "direction")), "recv");
	cr_expect_str_eq(json_string_value(json_object_get(launcher, "socket")), "plans");
	cr_expect_str_eq(json_string_value(json_object_get(launcher, "type")), "launch_plan");
	cr_expect_float_eq(num(launcher, "count"), 10, 1e-9);
	cr_expect_float_eq(num(launcher, "rate"), 5.0, 1e-9);
	cr_expect_float_eq(num(launcher, "bytes"), 1000, 1e-9);
	cr_expect_float_eq(num(launcher, "bytes_per_s"), 500.0, 1e-9);
	cr_expect_str_eq(json_string_value(json_object_get(scheduler, "process")), "scheduler");
	cr_expect_float_eq(num(scheduler, "rate"), 2.0, 1e-9);
	cr_expect_float_eq(num(scheduler, "bytes_per_s"), 500.0, 1e-9);
	cr_expect_str_eq(json_string_value(json_object_get(row(rep, 2), "type")), "undecodable");
	json_decref(rep);
	tap_summary_done(&s);
}

Test(tap_summary, next_interval_shows_only_new_traffic_and_final_totals_cover_the_whole_run)
{
	struct tap_summary s;
	two_seconds_of_traffic(&s);
	json_decref(report(&s, 3 * SEC, false));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(tap_summary_add(&s, "launcher", "recv", "plans", "launch_plan", 10), 0);

	json_t *second = report(&s, 3 * SEC + SEC / 2, false);
	cr_expect_float_eq(num(second, "seconds"), 0.5, 1e-9);
	cr_expect_float_eq(num(second, "rate"), 6.0, 1e-9);
	cr_expect_float_eq(num(second, "undecodable"), 0, 1e-9);
	cr_expect_float_eq(num(second, "dropped"), 0, 1e-9);
	cr_assert_eq(json_array_size(json_object_get(second, "rows")), 1, "only rows with traffic");
	cr_expect_float_eq(num(row(second, 0), "bytes_per_s"), 60.0, 1e-9);

	json_t *total = report(&s, 5 * SEC, true);
	cr_expect(json_is_true(json_object_get(total, "final")));
	cr_expect_float_eq(num(total, "seconds"), 4.0, 1e-9);
	cr_expect_float_eq(num(total, "messages"), 18, 1e-9);
	cr_expect_float_eq(num(total, "rate"), 4.5, 1e-9);
	cr_expect_float_eq(num(total, "undecodable"), 1, 1e-9);
	cr_expect_float_eq(num(total, "dropped"), 2, 1e-9);
	cr_assert_eq(json_array_size(json_object_get(total, "rows")), 3);
	cr_expect_float_eq(num(row(total, 0), "count"), 13, 1e-9);
	cr_expect_float_eq(num(row(total, 0), "rate"), 3.25, 1e-9);
	cr_expect_float_eq(num(row(total, 0), "bytes_per_s"), 1030 / 4.0, 1e-9);
	json_decref(second);
	json_decref(total);
	tap_summary_done(&s);
}

Test(tap_summary, text_report_is_a_headline_and_a_table)
{
	struct tap_summary s;
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	two_seconds_of_traffic(&s);
	cr_assert_eq(tap_summary_print(&s, 3 * SEC, 1763850579 * SEC, false, false, f), 0);
	fclose(f);
	cr_expect(strstr(buf, "2025-11-22T22:29:39.000000Z interval 2.00 s: 15 msg(s), 7.5 msg/s, "
			      "1002 B/s; undecodable 1, dropped 2\n"), "%s", buf);
	cr_expect(strstr(buf, "PROCESS"), "%s", buf);
	cr_expect(strstr(buf, "  launcher             recv plans            launch_plan                "
			      "10        5.0          500\n"), "%s", buf);
	free(buf);
	tap_summary_done(&s);
}

Test(tap_summary, type_only_formatting_decodes_the_type_and_leaves_the_fields_out, .init = setup,
     .fini = teardown)
{
	struct proto_planned_nodeclaim nc = { .id = "default-abc", .nodepool = "default",
					      .instance_types = &m5_large, .n_instance_types = 1 };
	const char *header = "send plans 1";
	struct proto_msg m;
	msgpack_sbuffer buf;
	json_t *line = NULL;

	proto_msg_init(&m, PROTO_MSG_LAUNCH_PLAN, PROTO_PROCESS_SCHEDULER, 0, 1);
	m.body.launch_plan = (struct proto_launch_plan){ .plan_id = "p", .nodeclaims = &nc, .n_nodeclaims = 1 };
	msgpack_sbuffer_init(&buf);
	cr_assert_eq(proto_encode(&m, &buf, NULL), 0);
	struct tap_frame frames[2] = { { header, strlen(header) }, { buf.data, buf.size } };
	cr_assert_eq(tap_message_to_json(decoder, "scheduler", frames, 2, 0, TAP_TYPE_ONLY, &line), 0);
	cr_expect_str_eq(json_string_value(json_object_get(line, "type")), "launch_plan");
	cr_expect_null(json_object_get(line, "fields"));
	json_decref(line);
	/* A payload that does not decode is still undecodable. */
	frames[1].size = buf.size - 1;
	cr_assert_eq(tap_message_to_json(decoder, "scheduler", frames, 2, 0, TAP_TYPE_ONLY, &line), 0);
	cr_expect_str_eq(json_string_value(json_object_get(line, "type")), TAP_TYPE_UNDECODABLE);
	json_decref(line);
	msgpack_sbuffer_destroy(&buf);
}

Test(tap_summary, rates_are_per_second_and_zero_for_an_empty_span)
{
	cr_expect_float_eq(tap_summary_rate(3, 1500000), 2.0, 1e-9);
	cr_expect_float_eq(tap_summary_rate(1, 250000), 4.0, 1e-9);
	cr_expect_float_eq(tap_summary_rate(5, 0), 0.0, 1e-9);
}
