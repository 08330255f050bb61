/*
 * Dispatch by table (state/msg.h): a routed message reaches its handler;
 * one that cannot be decoded, of a type the socket does not take, or from
 * a sender that may not send it is counted in kanna_messages_dropped_total
 * with its reason, and the log lines about drops are rate-limited.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "state/msg.h"

static char runtime_dir[] = "/tmp/kanna-test-dispatch-XXXXXX";
static struct loop *loop;
static struct sock_ctx *ctx;
static struct sock *rx, *tx;
static struct metrics_registry *reg;
static struct msg_io io_rx, io_watcher, io_launcher;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(runtime_dir));
	log_setup("test-dispatch", LOG_FORMAT_TEXT, LOG_LEVEL_ERROR);
	cr_assert_eq(loop_new(&loop, "test-dispatch"), 0);
	cr_assert_eq(sock_ctx_new(&ctx, loop, "test-dispatch", runtime_dir), 0);
	cr_assert_eq(sock_new(&rx, ctx, ZMQ_PULL, "pending"), 0);
	cr_assert_eq(sock_bind(rx, "pending"), 0);
	cr_assert_eq(sock_new(&tx, ctx, ZMQ_PUSH, "pending-out"), 0);
	cr_assert_eq(sock_connect(tx, "pending"), 0);
	cr_assert_eq(metrics_registry_new(&reg), 0);
	cr_assert_eq(msg_io_init(&io_rx, PROTO_PROCESS_SCHEDULER, 0), 0);
	cr_assert_eq(msg_io_init(&io_watcher, PROTO_PROCESS_WATCHER, 0), 0);
	cr_assert_eq(msg_io_init(&io_launcher, PROTO_PROCESS_LAUNCHER, 0), 0);
}

static void teardown(void)
{
	char cmd[128];

	msg_io_done(&io_rx);
	msg_io_done(&io_watcher);
	msg_io_done(&io_launcher);
	metrics_registry_free(reg);
	sock_free(tx);
	sock_free(rx);
	sock_ctx_free(ctx);
	loop_free(loop);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", runtime_dir);
	if (system(cmd) != 0) {
		/* best effort: a leftover temp dir fails nothing */
	}
}

TestSuite(msg_dispatch, .init = setup, .fini = teardown, .timeout = 30);

static unsigned handled; /* per test: criterion runs each in its own process */

static int on_pending_pods(const struct proto_msg *m, void *userdata)
{
	(void)userdata;
	cr_assert_eq(m->env.type, PROTO_MSG_PENDING_PODS);
	handled++;
	return 0;
}

static const struct msg_route routes[] = {
	{ PROTO_MSG_PENDING_PODS, MSG_FROM(PROTO_PROCESS_WATCHER), on_pending_pods },
};

/* Dispatches until the message just sent was handled or dropped. */
static void dispatch_one(struct msg_dispatch *d)
{
	unsigned before = handled;
	uint64_t dropped = d->n_dropped;

	for (int i = 0; i < 2000 && handled == before && d->n_dropped == dropped; i++) {
		cr_assert_geq(msg_dispatch(d, rx, NULL), 0);
		if (handled == before && d->n_dropped == dropped)
			usleep(1000);
	}
	cr_assert(handled != before || d->n_dropped != dropped, "nothing arrived");
}

static void send_from(struct msg_io *io, enum proto_msg_type type)
{
	struct proto_msg m;

	proto_msg_init(&m, type, io->self, 0, 0);
	cr_assert_geq(msg_send(io, tx, &m, 0), 0, "%s", io->last_error.text);
}

static bool metric_has(const char *line)
{
	char *text = NULL;
	size_t len = 0;
	bool found;

	cr_assert_eq(metrics_registry_render(reg, &text, &len), 0);
	found = strstr(text, line) != NULL;
	if (!found)
		fprintf(stderr, "%s", text);
	free(text);
	return found;
}

Test(msg_dispatch, routed_messages_reach_their_handler_and_every_drop_is_counted_by_reason)
{
	struct msg_dispatch d = { .socket = "pending", .routes = routes, .n_routes = ARRAY_SIZE(routes),
				  .io = &io_rx };

	cr_assert_eq(msg_dropped_metric_new(reg, &d.dropped), 0);
	send_from(&io_watcher, PROTO_MSG_PENDING_PODS);
	dispatch_one(&d);
	cr_assert_eq(handled, 1);
	cr_assert_eq(d.n_dropped, 0);

	send_from(&io_watcher, PROTO_MSG_HEARTBEAT);
	dispatch_one(&d);
	send_from(&io_launcher, PROTO_MSG_PENDING_PODS);
	dispatch_one(&d);
	cr_assert_eq(sock_send(tx, "\xc1 not msgpack", 13, 0), 0);
	dispatch_one(&d);
	cr_assert_eq(handled, 1, "no dropped message reaches a handler");
	cr_assert_eq(d.n_dropped, 3);
	cr_assert(metric_has("kanna_messages_dropped_total{socket=\"pending\",reason=\"unexpected_type\"} 1"));
	cr_assert(metric_has("kanna_messages_dropped_total{socket=\"pending\",reason=\"unexpected_sender\"} 1"));
	cr_assert(metric_has("kanna_messages_dropped_total{socket=\"pending\",reason=\"undecodable\"} 1"));
	/* Three drops within a second: the first logged, the others counted
	 * for the next line. */
	cr_assert_eq(d.unlogged, 2);
}

/* A peer of another protocol major (another kanna release) is refused whole
 * and said to be one, not counted as noise. */
Test(msg_dispatch, a_peer_of_another_protocol_major_is_refused_as_such)
{
	struct msg_dispatch d = { .socket = "pending", .routes = routes, .n_routes = ARRAY_SIZE(routes),
				  .io = &io_rx };
	struct proto_msg m;
	char *frame;

	cr_assert_eq(msg_dropped_metric_new(reg, &d.dropped), 0);
	proto_msg_init(&m, PROTO_MSG_PENDING_PODS, PROTO_PROCESS_WATCHER, 0, 0);
	cr_assert_eq(msg_encode(&io_watcher, &m), 0);
	frame = malloc(io_watcher.buf.size);
	cr_assert_not_null(frame);
	memcpy(frame, io_watcher.buf.data, io_watcher.buf.size);
	cr_assert_eq((unsigned char)frame[0], 0x94, "[major, minor, envelope, body]");
	frame[1] = PROTO_VERSION_MAJOR + 1;
	cr_assert_eq(sock_send(tx, frame, io_watcher.buf.size, 0), 0);
	free(frame);
	dispatch_one(&d);
	cr_assert_eq(handled, 0);
	cr_assert(metric_has("kanna_messages_dropped_total{socket=\"pending\",reason=\"version_mismatch\"} 1"));
}
