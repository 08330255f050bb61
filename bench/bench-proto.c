/*
 * bench-proto: proto codec and transport throughput on one core.
 *   1. encode+decode of a pending-pod message (one realistic pod)
 *   2. encode+decode of a launch plan with one NodeClaim of 60 candidates
 *   3. PUSH→PULL over ipc between two processes (fork), each message
 *      encoded by the sender and decoded by the receiver
 * Prints rows, tab-separated: figure, value, unit, target ("-": none),
 * direction (bench/lib.sh). Run by bench/proto.sh,
 * which adds instruction counts from "bench-proto count-pod|count-plan N".
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "proto/proto.h"

/* Targets of issue 3. */
#define TARGET_PENDING_POD_PER_S 2000000.0
#define TARGET_IPC_PER_S 500000.0
/* Each codec figure runs this long; the ipc run sends this many messages. */
#define CODEC_SECONDS (bench_quick() ? 0.03 : 1.5)
#define IPC_MESSAGES (bench_quick() ? 20000L : 1000000L)
/* KANNA_BENCH_QUICK=1 (bench/results.sh, the pipeline's test): the same
 * rows from a fiftieth of the work; the figures then measure nothing. */
static bool bench_quick(void)
{
	const char *q = getenv("KANNA_BENCH_QUICK");

	return q && strcmp(q, "1") == 0;
}

/* Deep enough that the sender never blocks on the receiver for long. */
#define IPC_HWM 100000

/* The machine may be shared: codec figures count this thread's CPU time
 * ("per core"), the ipc figure wall time. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct proto_kv pod_labels[] = { { "app", "inflate" }, { "pod-template-hash", "7c9d8f6b5" } };
static struct proto_owner_ref pod_owner[] = { { .kind = "ReplicaSet", .name = "inflate-7c9d8f6b5",
						.uid = "8d1f0c2e-5b7a-4c1e-9f3d-2a6b8c4e1d7f",
						.controller = true } };
static struct proto_resource pod_requests[] = { { "cpu", 1000 }, { "memory", 1536LL << 20 }, { "pods", 1 } };
static struct proto_kv pod_selector[] = { { "intent", "apps" } };
static struct proto_toleration pod_tolerations[] = { { .key = "dedicated", .op = PROTO_TOLERATION_EQUAL, .value = "apps", .effect = PROTO_EFFECT_NO_SCHEDULE } };
static struct proto_kv spread_labels[] = { { "app", "inflate" } };
static struct proto_spread_constraint pod_spread[] = { {
	.max_skew = 1, .topology_key = "topology.kubernetes.io/zone",
	.when_unsatisfiable = PROTO_UNSATISFIABLE_DO_NOT_SCHEDULE,
	.selector = { .match_labels = spread_labels, .n_match_labels = 1 },
} };
static struct proto_pod_template pod_template = {
	.labels = pod_labels, .n_labels = 2, .owner_refs = pod_owner, .n_owner_refs = 1,
	.requests = pod_requests, .n_requests = 3,
	.node_selector = pod_selector, .n_node_selector = 1, .tolerations = pod_tolerations,
	.n_tolerations = 1, .topology_spread = pod_spread, .n_topology_spread = 1,
};
static struct proto_pod bench_pod = {
	.ns = "default", .name = "inflate-7c9d8f6b5-x2x7k", .uid = "0b6f9e7c-3a1d-4f2b-8c5e-9d7a6b4c2e1f",
	.resource_version = "123456", .template = &pod_template, .n_template = 1,
	.phase = PROTO_PHASE_PENDING, .scheduled = PROTO_COND_FALSE,
	.scheduled_reason = "Unschedulable", .creation_time = 1763850000000,
};

static void make_pending_pod(struct proto_msg *m)
{
	*m = (struct proto_msg){ .env = { .type = PROTO_MSG_PENDING_PODS, .sender = PROTO_PROCESS_WATCHER,
					  .seq = 1, .send_time_ns = 1763850000000000000, .trace_id = 42 } };
	m->body.pending_pods = (struct proto_pending_pods){ .shard = 0, .n_shards = 1, .state_seq = 99,
							    .pods = &bench_pod, .n_pods = 1 };
}

/* The smallest useful pending pod: its key and requests only. */
static struct proto_pod_template minimal_template = { .requests = pod_requests, .n_requests = 3 };
static struct proto_pod minimal_pod = {
	.ns = "default", .name = "inflate-7c9d8f6b5-x2x7k", .uid = "0b6f9e7c-3a1d-4f2b-8c5e-9d7a6b4c2e1f",
	.template = &minimal_template, .n_template = 1,
};

static void make_minimal_pod(struct proto_msg *m)
{
	make_pending_pod(m);
	m->body.pending_pods.pods = &minimal_pod;
}

static const char *const zones[] = { "us-east-1a", "us-east-1b", "us-east-1c" };
static struct proto_offering offerings[PROTO_MAX_CANDIDATES][6];
static struct proto_candidate candidates[PROTO_MAX_CANDIDATES];
static char candidate_names[PROTO_MAX_CANDIDATES][32];
static const char *const arch_values[] = { "amd64" };
static const char *const ct_values[] = { "spot", "on-demand" };
static struct proto_requirement plan_reqs[] = {
	{ .key = "kubernetes.io/arch", .op = PROTO_OP_IN, .values = (char **)arch_values, .n_values = 1 },
	{ .key = "karpenter.sh/capacity-type", .op = PROTO_OP_IN, .values = (char **)ct_values,
	  .n_values = 2 },
	{ .key = "karpenter.sh/nodepool", .op = PROTO_OP_EXISTS },
};
static char pod_keys[10][64];
static char *pod_key_ptrs[10];
static struct proto_planned_nodeclaim plan_nc;

static void make_plan(struct proto_msg *m)
{
	for (int i = 0; i < PROTO_MAX_CANDIDATES; i++) {
		snprintf(candidate_names[i], sizeof(candidate_names[i]), "m%d.%dxlarge", 5 + i % 3, 1 + i);
		for (int z = 0; z < 6; z++)
			offerings[i][z] = (struct proto_offering){
				.zone = (char *)zones[z % 3],
				.capacity_type = z < 3 ? PROTO_CAPACITY_SPOT : PROTO_CAPACITY_ON_DEMAND,
				.price = 0.0123 * (i + 1) * (z < 3 ? 0.4 : 1.0), .available = true,
			};
		candidates[i] = (struct proto_candidate){ .name = candidate_names[i],
							  .offerings = offerings[i], .n_offerings = 6 };
	}
	for (int i = 0; i < 10; i++) {
		snprintf(pod_keys[i], sizeof(pod_keys[i]), "default/inflate-7c9d8f6b5-%05d", i);
		pod_key_ptrs[i] = pod_keys[i];
	}
	plan_nc = (struct proto_planned_nodeclaim){
		.id = "default-x7k2p", .nodepool = "default", .nodeclass = "default",
		.requirements = plan_reqs, .n_requirements = 3,
		.instance_types = candidates, .n_instance_types = PROTO_MAX_CANDIDATES,
		.requests = pod_requests, .n_requests = 3, .pods = pod_key_ptrs, .n_pods = 10,
	};
	*m = (struct proto_msg){ .env = { .type = PROTO_MSG_LAUNCH_PLAN, .sender = PROTO_PROCESS_SCHEDULER, .seq = 7 } };
	m->body.launch_plan = (struct proto_launch_plan){ .plan_id = "plan-0-17", .batch_id = 17,
							  .nodeclaims = &plan_nc, .n_nodeclaims = 1 };
}

/* Encode+decode round trips per second; *bytes = frame size. */
static double codec_rate(struct proto_msg *m, size_t *bytes)
{
	struct proto_decoder *d = proto_decoder_new();
	const struct proto_msg *out;
	msgpack_sbuffer sbuf;
	double start, elapsed;
	unsigned long n = 0;

	if (!d)
		exit(1);
	msgpack_sbuffer_init(&sbuf);
	start = cpu_now();
	do {
		for (int i = 0; i < 1000; i++, n++) {
			m->env.seq = n;
			msgpack_sbuffer_clear(&sbuf);
			if (proto_encode(m, &sbuf, NULL) < 0 ||
			    proto_decode(d, sbuf.data, sbuf.size, &out, NULL) < 0 ||
			    out->env.seq != n) {
				fprintf(stderr, "Failed to round-trip message %lu\n", n);
				exit(1);
			}
		}
		elapsed = cpu_now() - start;
	} while (elapsed < CODEC_SECONDS);
	*bytes = sbuf.size;
	msgpack_sbuffer_destroy(&sbuf);
	proto_decoder_free(d);
	return (double)n / elapsed;
}

/* Receiver: PULL, decode every message, report the rate on fd. */
static int ipc_receiver(const char *endpoint, int fd, bool codec)
{
	void *ctx = zmq_ctx_new(), *pull = zmq_socket(ctx, ZMQ_PULL);
	struct proto_decoder *d = proto_decoder_new();
	int hwm = IPC_HWM, ready = 1;
	const struct proto_msg *out;
	double start = 0, rate;
	zmq_msg_t msg;

	if (!pull || !d || zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof(hwm)) < 0 ||
	    zmq_bind(pull, endpoint) < 0)
		return 1;
	if (write(fd, &ready, sizeof(ready)) != sizeof(ready))
		return 1;
	zmq_msg_init(&msg);
	for (long i = 0; i < IPC_MESSAGES; i++) {
		if (zmq_msg_recv(&msg, pull, 0) < 0)
			return 1;
		if (i == 0)
			start = now();
		if (codec && proto_decode(d, zmq_msg_data(&msg), zmq_msg_size(&msg), &out, NULL) < 0)
			return 1;
	}
	rate = (IPC_MESSAGES - 1) / (now() - start);
	zmq_msg_close(&msg);
	if (write(fd, &rate, sizeof(rate)) != sizeof(rate))
		return 1;
	proto_decoder_free(d);
	zmq_close(pull);
	zmq_ctx_term(ctx);
	return 0;
}

/* codec: the sender encodes and the receiver decodes every message;
 * otherwise the same encoded frame is sent as is (transport alone). */
static double ipc_rate(bool codec)
{
	char endpoint[128];
	int fds[2], hwm = IPC_HWM, ready, status;
	struct proto_msg m;
	msgpack_sbuffer sbuf;
	double rate = 0;
	void *ctx, *push;
	pid_t pid;

	snprintf(endpoint, sizeof(endpoint), "ipc:///tmp/kanna-bench-proto-%d.sock", (int)getpid());
	if (pipe(fds) < 0)
		return 0;
	pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0) {
		close(fds[0]);
		_exit(ipc_receiver(endpoint, fds[1], codec));
	}
	close(fds[1]);
	if (read(fds[0], &ready, sizeof(ready)) != sizeof(ready))
		return 0;
	ctx = zmq_ctx_new();
	push = zmq_socket(ctx, ZMQ_PUSH);
	zmq_setsockopt(push, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	if (zmq_connect(push, endpoint) < 0)
		return 0;
	make_pending_pod(&m);
	msgpack_sbuffer_init(&sbuf);
	for (long i = 0; i < IPC_MESSAGES; i++) {
		if (codec || i == 0) {
			m.env.seq = (uint64_t)i;
			msgpack_sbuffer_clear(&sbuf);
			if (proto_encode(&m, &sbuf, NULL) < 0)
				break;
		}
		if (zmq_send(push, sbuf.data, sbuf.size, 0) < 0)
			break;
	}
	if (read(fds[0], &rate, sizeof(rate)) != sizeof(rate))
		rate = 0;
	waitpid(pid, &status, 0);
	msgpack_sbuffer_destroy(&sbuf);
	zmq_close(push);
	zmq_ctx_term(ctx);
	unlink(endpoint + strlen("ipc://"));
	return rate;
}

static void row(const char *figure, double value, const char *unit, double target, const char *direction)
{
	char t[32] = "-";

	if (target > 0)
		snprintf(t, sizeof(t), "%.0f", target);
	printf("%s\t%.0f\t%s\t%s\t%s\n", figure, value, unit, t, direction);
}

/* "count-pod N" / "count-plan N": N round trips and nothing else, for
 * instruction counts under callgrind (stable on a shared machine). */
static int count_mode(const char *what, long n)
{
	struct proto_decoder *d = proto_decoder_new();
	const struct proto_msg *out;
	msgpack_sbuffer sbuf;
	struct proto_msg m;

	if (!d)
		return 1;
	if (strcmp(what, "count-pod") == 0)
		make_pending_pod(&m);
	else
		make_plan(&m);
	msgpack_sbuffer_init(&sbuf);
	for (long i = 0; i < n; i++) {
		msgpack_sbuffer_clear(&sbuf);
		if (proto_encode(&m, &sbuf, NULL) < 0 || proto_decode(d, sbuf.data, sbuf.size, &out, NULL) < 0)
			return 1;
	}
	msgpack_sbuffer_destroy(&sbuf);
	proto_decoder_free(d);
	return 0;
}

int main(int argc, char **argv)
{
	struct proto_msg m;
	size_t pod_bytes, plan_bytes, min_bytes;
	double pod, plan, ipc, ipc_raw, min_pod;

	if (argc == 3)
		return count_mode(argv[1], atol(argv[2]));

	make_pending_pod(&m);
	pod = codec_rate(&m, &pod_bytes);
	make_minimal_pod(&m);
	min_pod = codec_rate(&m, &min_bytes);
	make_plan(&m);
	plan = codec_rate(&m, &plan_bytes);
	ipc_raw = ipc_rate(false);
	ipc = ipc_rate(true);

	row("pending-pod encode+decode (1 core)", pod, "msg/s", TARGET_PENDING_POD_PER_S, ">");
	row("pending-pod frame size", (double)pod_bytes, "bytes", 0, "<");
	row("minimal pending pod (key+requests) enc+dec", min_pod, "msg/s", TARGET_PENDING_POD_PER_S, ">");
	row("minimal pending-pod frame size", (double)min_bytes, "bytes", 0, "<");
	row("launch plan, 60 candidates, encode+decode", plan, "msg/s", 0, ">");
	row("launch plan frame size", (double)plan_bytes, "bytes", 0, "<");
	row("PUSH->PULL ipc, 2 processes, frames only", ipc_raw, "msg/s", TARGET_IPC_PER_S, ">");
	row("PUSH->PULL ipc, 2 processes, enc+dec each", ipc, "msg/s", TARGET_IPC_PER_S, ">");
	return ipc > 0 && ipc_raw > 0 ? 0 : 1;
}
