/*
 * The socket wrapper through the sd-event loop: many-message PUSH/PULL and
 * PUB/SUB runs in bursts larger than the drain bound (an edge-triggered
 * ZMQ_FD that is not drained stalls them), sends from inside a receive
 * handler, runtime directory and endpoint rules, and the tap (copies only
 * while subscribed, in the documented wire format).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/sock.h"

/* Messages per bulk test: far beyond LOOP_ZSOCK_DRAIN_MAX and one HWM. */
#define N_MESSAGES 100000
/* Messages sent per sender tick: a burst larger than the drain bound. */
#define BURST 5000
/* A run that has not finished by then has stalled. */
#define STALL_TIMEOUT_USEC (20ULL * 1000 * 1000)
#define EXIT_STALLED 2

static char runtime_dir[] = "/tmp/kanna-test-sock-XXXXXX";
static struct loop *loop;
static struct sock_ctx *ctx;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(runtime_dir));
	log_setup("test-sock", LOG_FORMAT_TEXT, LOG_LEVEL_WARN);
	cr_assert_eq(loop_new(&loop, "test-sock"), 0);
	cr_assert_eq(sock_ctx_new(&ctx, loop, "test-sock", runtime_dir), 0);
}

/*
 * Every socket a test opens, closed in teardown even after a failed
 * assertion: zmq_ctx_term() waits for all of them.
 */
static struct sock *socks[8];
static size_t n_socks;

static struct sock *test_sock(int type, const char *name)
{
	struct sock *s;

	cr_assert_lt(n_socks, ARRAY_SIZE(socks));
	cr_assert_eq(sock_new(&s, ctx, type, name), 0);
	socks[n_socks++] = s;
	return s;
}

static void teardown(void)
{
	char cmd[128];

	while (n_socks > 0)
		sock_free(socks[--n_socks]);
	ctx = sock_ctx_free(ctx);
	loop = loop_free(loop);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", runtime_dir);
	if (system(cmd) != 0) {
		/* best effort: a leftover temp dir fails nothing */
	}
}

TestSuite(sock, .init = setup, .fini = teardown, .timeout = 60);

static int tap_quiet_over(struct loop *l, void *userdata);

static int on_stalled(struct loop *l, void *userdata)
{
	loop_exit(l, EXIT_STALLED);
	return 0;
}

static void arm_stall_timeout(void)
{
	cr_assert_eq(loop_add_timer(loop, STALL_TIMEOUT_USEC, on_stalled, NULL, NULL), 0);
}

/* ---- bulk PUSH/PULL and PUB/SUB ------------------------------------------ */

struct bulk {
	struct sock *tx, *rx;
	uint32_t sent, received;
	bool out_of_order;
	bool peer_seen; /* PUB/SUB: the subscription has reached the PUB */
	bool lossy;     /* PUB drops past the HWM instead of blocking */
};

static int bulk_on_readable(struct sock *s, void *userdata)
{
	struct bulk *b = userdata;
	struct sock_msg msg;
	uint32_t seq;
	int r;

	r = sock_recv(s, &msg, ZMQ_DONTWAIT);
	if (r < 0)
		return r;
	if (sock_msg_size(&msg, 0) == sizeof(seq)) {
		memcpy(&seq, sock_msg_data(&msg, 0), sizeof(seq));
		if (seq != b->received)
			b->out_of_order = true;
		b->received++;
	} else {
		b->peer_seen = true; /* a hello */
	}
	sock_msg_close(&msg);
	if (b->received == N_MESSAGES)
		loop_exit(loop, 0);
	return 0;
}

static int bulk_send_burst(struct loop *l, void *userdata)
{
	struct bulk *b = userdata;

	if (!b->peer_seen) {
		/* PUB drops until the subscription arrives (slow joiner). */
		(void)sock_send(b->tx, "hello", 5, ZMQ_DONTWAIT);
		return 0;
	}
	/* A PUB never pushes back: keep what is in flight well under the HWM,
	 * as a real publisher must, so a drop means a bug, not a full pipe. */
	if (b->lossy && b->sent - b->received >= SOCK_HWM / 2)
		return 0;
	for (int i = 0; i < BURST && b->sent < N_MESSAGES; i++) {
		int r = sock_send(b->tx, &b->sent, sizeof(b->sent), ZMQ_DONTWAIT);

		if (r == -EAGAIN)
			break; /* HWM: try again next tick */
		cr_assert_eq(r, 0);
		b->sent++;
	}
	return 0;
}

static void run_bulk(struct bulk *b)
{
	cr_assert_eq(sock_watch(b->rx, bulk_on_readable, b), 0);
	cr_assert_eq(loop_add_periodic(loop, "send", 1000, bulk_send_burst, b), 0);
	arm_stall_timeout();
	cr_assert_eq(loop_run(loop), 0, "stalled after %u of %u messages (sent %u)",
		     b->received, N_MESSAGES, b->sent);
	cr_assert_eq(b->received, N_MESSAGES);
	cr_assert_not(b->out_of_order);
}

Test(sock, push_pull_delivers_every_message_in_bursts_beyond_the_drain_bound)
{
	struct bulk b = { .peer_seen = true };

	b.rx = test_sock(ZMQ_PULL, "work");
	cr_assert_eq(sock_bind(b.rx, "work"), 0);
	b.tx = test_sock(ZMQ_PUSH, "work-out");
	cr_assert_eq(sock_connect(b.tx, "work"), 0);
	run_bulk(&b);
}

Test(sock, pub_sub_delivers_every_message_in_bursts_beyond_the_drain_bound)
{
	struct bulk b = { .lossy = true };

	b.tx = test_sock(ZMQ_PUB, "state.pub");
	cr_assert_eq(sock_bind(b.tx, "state"), 0);
	b.rx = test_sock(ZMQ_SUB, "state.sub");
	cr_assert_eq(sock_subscribe(b.rx, "", 0), 0);
	cr_assert_eq(sock_connect(b.rx, "state"), 0);
	run_bulk(&b);
}

/* ---- a busy socket does not starve timers -------------------------------- */

/* Longest a 1 ms periodic job may wait while a full queue is drained. */
#define TICK_GAP_MAX_USEC (50ULL * 1000)

struct starve {
	uint32_t received;
	uint64_t last_tick, max_gap;
	unsigned ticks;
};

/* CPU time of this thread, not wall time: on a loaded machine the process
 * may sit descheduled for tens of ms, which says nothing about whether the
 * drain lets the timer in. */
static uint64_t cpu_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int starve_on_readable(struct sock *s, void *userdata)
{
	struct starve *st = userdata;
	struct sock_msg msg;
	int r = sock_recv(s, &msg, ZMQ_DONTWAIT);

	if (r < 0)
		return r;
	sock_msg_close(&msg);
	if (++st->received == N_MESSAGES)
		loop_exit(loop, 0);
	return 0;
}

static int starve_tick(struct loop *l, void *userdata)
{
	struct starve *st = userdata;
	uint64_t now = cpu_usec();

	if (st->last_tick)
		st->max_gap = MAX(st->max_gap, now - st->last_tick);
	st->last_tick = now;
	st->ticks++;
	return 0;
}

Test(sock, a_full_queue_is_drained_in_slices_that_let_timers_run)
{
	struct starve st = { 0 };
	struct sock *tx, *rx;

	rx = test_sock(ZMQ_PULL, "flood");
	cr_assert_eq(sock_bind(rx, "flood"), 0);
	tx = test_sock(ZMQ_PUSH, "flood-out");
	cr_assert_eq(sock_connect(tx, "flood"), 0);
	/* The whole flood is queued before the loop turns once. */
	for (uint32_t i = 0; i < N_MESSAGES; i++)
		cr_assert_eq(sock_send(tx, &i, sizeof(i), 0), 0);
	cr_assert_eq(sock_watch(rx, starve_on_readable, &st), 0);
	cr_assert_eq(loop_add_periodic(loop, "tick", 1000, starve_tick, &st), 0);
	arm_stall_timeout();
	cr_assert_eq(loop_run(loop), 0, "stalled after %u messages", st.received);
	cr_assert_eq(st.received, N_MESSAGES);
	cr_assert_gt(st.ticks, 1, "the timer never ran while the queue drained");
	cr_assert_lt(st.max_gap, TICK_GAP_MAX_USEC, "timer starved for %llu us of CPU",
		     (unsigned long long)st.max_gap);
}

/* ---- send from inside a receive handler ----------------------------------- */

#define PING_PONG_ROUNDS 20000

struct ping_pong {
	struct sock *a, *b;
	uint32_t rounds;
};

/* Each side answers from inside its handler, on the socket it drains. */
static int ping_pong_on_readable(struct sock *s, void *userdata)
{
	struct ping_pong *pp = userdata;
	struct sock_msg msg;
	uint32_t n;
	int r;

	r = sock_recv(s, &msg, ZMQ_DONTWAIT);
	if (r < 0)
		return r;
	cr_assert_eq(sock_msg_size(&msg, 0), sizeof(n));
	memcpy(&n, sock_msg_data(&msg, 0), sizeof(n));
	sock_msg_close(&msg);
	pp->rounds = n;
	if (n == PING_PONG_ROUNDS) {
		loop_exit(loop, 0);
		return 0;
	}
	n++;
	return sock_send(s, &n, sizeof(n), ZMQ_DONTWAIT);
}

Test(sock, a_send_from_inside_a_receive_handler_never_stalls_the_socket)
{
	struct ping_pong pp = { 0 };
	uint32_t zero = 0;

	pp.a = test_sock(ZMQ_PAIR, "ping");
	cr_assert_eq(sock_bind(pp.a, "pair"), 0);
	pp.b = test_sock(ZMQ_PAIR, "pong");
	cr_assert_eq(sock_connect(pp.b, "pair"), 0);
	cr_assert_eq(sock_watch(pp.a, ping_pong_on_readable, &pp), 0);
	cr_assert_eq(sock_watch(pp.b, ping_pong_on_readable, &pp), 0);
	/* Blocking first send: waits for the connection, then the loop does the rest. */
	cr_assert_eq(sock_send(pp.b, &zero, sizeof(zero), 0), 0);
	arm_stall_timeout();
	cr_assert_eq(loop_run(loop), 0, "stalled at round %u", pp.rounds);
	cr_assert_eq(pp.rounds, PING_PONG_ROUNDS);
}

/* ---- unwatching from inside a handler ------------------------------------ */

#define UNWATCH_AFTER 10

struct unwatch {
	unsigned handled;
};

static int unwatch_on_readable(struct sock *s, void *userdata)
{
	struct unwatch *u = userdata;
	struct sock_msg msg;
	int r = sock_recv(s, &msg, ZMQ_DONTWAIT);

	if (r < 0)
		return r;
	sock_msg_close(&msg);
	if (++u->handled == UNWATCH_AFTER)
		cr_assert_eq(sock_unwatch(s), 0);
	return 0;
}

Test(sock, a_handler_may_stop_watching_its_own_socket)
{
	struct unwatch u = { 0 };
	struct sock *tx, *rx;
	struct sock_msg msg;

	rx = test_sock(ZMQ_PULL, "unwatched");
	cr_assert_eq(sock_bind(rx, "unwatch"), 0);
	tx = test_sock(ZMQ_PUSH, "unwatch-out");
	cr_assert_eq(sock_connect(tx, "unwatch"), 0);
	for (int i = 0; i < 3 * UNWATCH_AFTER; i++)
		cr_assert_eq(sock_send(tx, "m", 1, 0), 0);
	cr_assert_eq(sock_watch(rx, unwatch_on_readable, &u), 0);
	cr_assert_eq(loop_add_timer(loop, 100 * 1000, tap_quiet_over, NULL, NULL), 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(u.handled, UNWATCH_AFTER);
	cr_assert_eq(sock_unwatch(rx), -ENOENT);
	/* The rest is still queued for whoever reads next. */
	for (int i = 0; i < 2 * UNWATCH_AFTER; i++) {
		cr_assert_eq(sock_recv(rx, &msg, ZMQ_DONTWAIT), 0);
		sock_msg_close(&msg);
	}
}

/* ---- frames ----------------------------------------------------------- */

Test(sock, multipart_messages_arrive_whole_and_oversized_ones_are_dropped)
{
	struct sock *tx, *rx;
	struct sock_msg msg;
	struct iovec frames[SOCK_MAX_FRAMES + 1];
	size_t size;
	const void *body;

	rx = test_sock(ZMQ_PULL, "rx");
	cr_assert_eq(sock_bind(rx, "frames"), 0);
	tx = test_sock(ZMQ_PUSH, "tx");
	cr_assert_eq(sock_connect(tx, "frames"), 0);
	for (size_t i = 0; i < ARRAY_SIZE(frames); i++)
		frames[i] = (struct iovec){ .iov_base = "frame", .iov_len = 5 };
	frames[2] = (struct iovec){ .iov_base = "body", .iov_len = 4 };
	cr_assert_eq(sock_send_frames(tx, frames, 3, 0), 0);
	cr_assert_eq(sock_send_frames(tx, frames, ARRAY_SIZE(frames), 0), 0);
	cr_assert_eq(sock_send(tx, "after", 5, 0), 0);

	cr_assert_eq(sock_recv(rx, &msg, 0), 0);
	cr_assert_eq(msg.n_frames, 3);
	cr_assert_eq(sock_msg_size(&msg, 0), 5);
	body = sock_msg_body(&msg, &size);
	cr_assert_eq(size, 4);
	cr_assert_eq(memcmp(body, "body", 4), 0);
	cr_assert_null(sock_msg_data(&msg, 3));
	sock_msg_close(&msg);

	cr_assert_eq(sock_recv(rx, &msg, 0), -EMSGSIZE);
	cr_assert_eq(msg.n_frames, 0);
	/* The oversized message was consumed whole; the next one is intact. */
	cr_assert_eq(sock_recv(rx, &msg, 0), 0);
	cr_assert_eq(msg.n_frames, 1);
	cr_assert_eq(memcmp(sock_msg_data(&msg, 0), "after", 5), 0);
	sock_msg_close(&msg);
	cr_assert_eq(sock_recv(rx, &msg, ZMQ_DONTWAIT), -EAGAIN);
}

/* ---- runtime directory and endpoints ------------------------------------ */

Test(sock, runtime_dir_is_created_0750_and_endpoints_live_in_it)
{
	char sub[512], want[600], *dir = NULL, *endpoint = NULL;
	struct stat st;

	snprintf(sub, sizeof(sub), "%s/run", runtime_dir);
	cr_assert_eq(sock_runtime_dir(sub, &dir), 0);
	cr_assert_str_eq(dir, sub);
	cr_assert_eq(stat(sub, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0750);
	cr_assert_eq(sock_endpoint(dir, "launcher.plans", &endpoint), 0);
	snprintf(want, sizeof(want), "ipc://%s/launcher.plans.sock", sub);
	cr_assert_str_eq(endpoint, want);
	free(endpoint);
	cr_assert_eq(sock_endpoint(dir, "tcp://127.0.0.1:5555", &endpoint), 0);
	cr_assert_str_eq(endpoint, "tcp://127.0.0.1:5555");
	free(endpoint);
	cr_assert_eq(sock_endpoint(dir, "../escape", &endpoint), -EINVAL);
	free(dir);
}

Test(sock, runtime_dir_comes_from_RUNTIME_DIRECTORY_first_entry)
{
	char first[512], env[1100], *dir = NULL;

	snprintf(first, sizeof(first), "%s/a", runtime_dir);
	snprintf(env, sizeof(env), "%s:%s/b", first, runtime_dir);
	setenv("RUNTIME_DIRECTORY", env, 1);
	cr_assert_eq(sock_runtime_dir(NULL, &dir), 0);
	cr_assert_str_eq(dir, first);
	free(dir);
	unsetenv("RUNTIME_DIRECTORY");
}

Test(sock, endpoint_longer_than_a_unix_socket_path_is_refused)
{
	char name[200], *endpoint = NULL;

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	cr_assert_eq(sock_endpoint(runtime_dir, name, &endpoint), -ENAMETOOLONG);
	cr_assert_null(endpoint);
}

/* ---- the tap ------------------------------------------------------------ */

#define TAP_BATCH 10
/* After the last delivery, how long to wait for stray tap copies. */
#define TAP_QUIET_USEC (200ULL * 1000)

enum tap_phase { TAP_WAIT_ATTACH, TAP_WAIT_DETACH, TAP_QUIET, TAP_DONE };

struct tap_test {
	void *zmq;      /* the "kanna-tap" side: a context of its own */
	void *reader;   /* SUB on <runtime_dir>/test-sock.tap */
	struct sock *tx, *rx;
	enum tap_phase phase;
	unsigned delivered, copies_send, copies_recv;
	bool bad_format;
	uint64_t t_start;
};

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int tap_on_copy(void *zsock, void *userdata)
{
	struct tap_test *t = userdata;
	char header[256], dir[8], name[64];
	char payload[64];
	unsigned long long usec;
	int more = 0, n, m;
	size_t size = sizeof(more);

	n = zmq_recv(zsock, header, sizeof(header) - 1, ZMQ_DONTWAIT);
	if (n < 0)
		return -errno;
	header[n] = '\0';
	zmq_getsockopt(zsock, ZMQ_RCVMORE, &more, &size);
	cr_assert(more, "tap copy has no payload frame");
	m = zmq_recv(zsock, payload, sizeof(payload), 0);
	cr_assert_geq(m, 0);
	zmq_getsockopt(zsock, ZMQ_RCVMORE, &more, &size);
	cr_assert_not(more, "single-frame message gave more than 2 tap frames");
	if (sscanf(header, "%7s %63s %llu", dir, name, &usec) != 3 ||
	    usec < t->t_start || usec > now_usec() || m != 6 ||
	    memcmp(payload, "tapped", 6) != 0)
		t->bad_format = true;
	if (streq(dir, "send") && streq(name, "tap-tx"))
		t->copies_send++;
	else if (streq(dir, "recv") && streq(name, "tap-rx"))
		t->copies_recv++;
	else
		t->bad_format = true;
	return 0;
}

static int tap_on_delivery(struct sock *s, void *userdata)
{
	struct tap_test *t = userdata;
	struct sock_msg msg;
	int r = sock_recv(s, &msg, ZMQ_DONTWAIT);

	if (r < 0)
		return r;
	sock_msg_close(&msg);
	t->delivered++;
	return 0;
}

static int tap_quiet_over(struct loop *l, void *userdata)
{
	loop_exit(l, 0);
	return 0;
}

static void tap_send_batch(struct tap_test *t)
{
	for (int i = 0; i < TAP_BATCH; i++)
		cr_assert_eq(sock_send(t->tx, "tapped", 6, 0), 0);
}

/* Drives the phases: attach -> batch copied -> detach -> batch not copied. */
static int tap_step(struct loop *l, void *userdata)
{
	struct tap_test *t = userdata;

	switch (t->phase) {
	case TAP_WAIT_ATTACH:
		if (sock_ctx_tap_attached(ctx)) {
			tap_send_batch(t);
			t->phase = TAP_WAIT_DETACH;
		}
		break;
	case TAP_WAIT_DETACH:
		if (t->delivered < TAP_BATCH || t->copies_recv < TAP_BATCH ||
		    t->copies_send < TAP_BATCH)
			break;
		if (t->reader) {
			/* kanna-tap goes away without unsubscribing (Ctrl-C). */
			cr_assert_eq(loop_remove_zsock(loop, t->reader), 0);
			zmq_close(t->reader);
			t->reader = NULL;
		}
		if (sock_ctx_tap_attached(ctx))
			break;
		tap_send_batch(t);
		t->phase = TAP_QUIET;
		break;
	case TAP_QUIET:
		if (t->delivered < 2 * TAP_BATCH)
			break;
		t->phase = TAP_DONE;
		cr_assert_eq(loop_add_timer(loop, TAP_QUIET_USEC, tap_quiet_over, t, NULL), 0);
		break;
	case TAP_DONE:
		break;
	}
	return 0;
}

Test(sock, tap_copies_messages_only_while_a_subscriber_is_attached)
{
	struct tap_test t = { .t_start = now_usec() };
	char endpoint[600];
	int linger = 0;

	t.rx = test_sock(ZMQ_PULL, "tap-rx");
	cr_assert_eq(sock_bind(t.rx, "tapped"), 0);
	t.tx = test_sock(ZMQ_PUSH, "tap-tx");
	cr_assert_eq(sock_connect(t.tx, "tapped"), 0);

	/* Nobody attached: traffic costs the tap nothing. */
	tap_send_batch(&t);
	for (int i = 0; i < TAP_BATCH; i++) {
		struct sock_msg msg;

		cr_assert_eq(sock_recv(t.rx, &msg, 0), 0);
		sock_msg_close(&msg);
	}
	cr_assert_eq(sock_ctx_tap_copies(ctx), 0);
	cr_assert_eq(sock_watch(t.rx, tap_on_delivery, &t), 0);
	t.phase = TAP_WAIT_ATTACH;

	t.zmq = zmq_ctx_new();
	t.reader = zmq_socket(t.zmq, ZMQ_SUB);
	zmq_setsockopt(t.reader, ZMQ_LINGER, &linger, sizeof(linger));
	cr_assert_eq(zmq_setsockopt(t.reader, ZMQ_SUBSCRIBE, "", 0), 0);
	snprintf(endpoint, sizeof(endpoint), "ipc://%s/test-sock.tap", runtime_dir);
	cr_assert_eq(zmq_connect(t.reader, endpoint), 0);
	cr_assert_eq(loop_add_zsock(loop, t.reader, tap_on_copy, &t), 0);

	cr_assert_eq(loop_add_periodic(loop, "tap-step", 2000, tap_step, &t), 0);
	arm_stall_timeout();
	cr_assert_eq(loop_run(loop), 0, "stuck in phase %d", t.phase);
	cr_assert_eq(t.phase, TAP_DONE);
	cr_assert_not(t.bad_format);
	cr_assert_eq(t.copies_send, TAP_BATCH);
	cr_assert_eq(t.copies_recv, TAP_BATCH);
	cr_assert_eq(sock_ctx_tap_copies(ctx), 2 * TAP_BATCH,
		     "the tap published %llu copies",
		     (unsigned long long)sock_ctx_tap_copies(ctx));
	cr_assert_not(sock_ctx_tap_attached(ctx));
	zmq_ctx_term(t.zmq);
}

Test(sock, tap_publishes_nothing_without_a_subscriber)
{
	struct sock *tx, *rx;
	struct sock_msg msg;

	rx = test_sock(ZMQ_PULL, "rx");
	cr_assert_eq(sock_bind(rx, "quiet"), 0);
	tx = test_sock(ZMQ_PUSH, "tx");
	cr_assert_eq(sock_connect(tx, "quiet"), 0);
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(sock_send(tx, "x", 1, 0), 0);
		cr_assert_eq(sock_recv(rx, &msg, 0), 0);
		sock_msg_close(&msg);
	}
	cr_assert_not(sock_ctx_tap_attached(ctx));
	cr_assert_eq(sock_ctx_tap_copies(ctx), 0);
}

/* ROUTER traffic: the tap carries the routing frame first, the body last. */
struct tap_router {
	void *zmq, *reader;
	struct sock *router, *dealer;
	bool sent;
	unsigned frames;
	char body[16];
};

static int tap_router_on_copy(void *zsock, void *userdata)
{
	struct tap_router *t = userdata;
	zmq_msg_t frame;
	int more = 1;

	t->frames = 0;
	while (more) {
		zmq_msg_init(&frame);
		if (zmq_msg_recv(&frame, zsock, t->frames ? 0 : ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&frame);
			return t->frames ? -errno : 0;
		}
		t->frames++;
		more = zmq_msg_more(&frame);
		if (!more && zmq_msg_size(&frame) < sizeof(t->body))
			memcpy(t->body, zmq_msg_data(&frame), zmq_msg_size(&frame));
		zmq_msg_close(&frame);
	}
	loop_exit(loop, 0);
	return 0;
}

static int tap_router_step(struct loop *l, void *userdata)
{
	struct tap_router *t = userdata;
	struct sock_msg msg;

	if (t->sent || !sock_ctx_tap_attached(ctx))
		return 0;
	/* Both the send and the recv are copied; the reader filters (below). */
	cr_assert_eq(sock_send(t->dealer, "snapshot?", 9, 0), 0);
	cr_assert_eq(sock_recv(t->router, &msg, 0), 0);
	cr_assert_eq(msg.n_frames, 2);
	sock_msg_close(&msg);
	t->sent = true;
	return 0;
}

Test(sock, tap_copy_of_a_routed_message_ends_with_the_body)
{
	struct tap_router t = { 0 };
	char endpoint[600];
	int linger = 0;

	t.router = test_sock(ZMQ_ROUTER, "state.sync");
	cr_assert_eq(sock_bind(t.router, "sync"), 0);
	t.dealer = test_sock(ZMQ_DEALER, "sync-client");
	cr_assert_eq(sock_connect(t.dealer, "sync"), 0);
	t.zmq = zmq_ctx_new();
	t.reader = zmq_socket(t.zmq, ZMQ_SUB);
	zmq_setsockopt(t.reader, ZMQ_LINGER, &linger, sizeof(linger));
	/* Tap subscribers filter by header prefix: recv copies of state.sync. */
	cr_assert_eq(zmq_setsockopt(t.reader, ZMQ_SUBSCRIBE, "recv state.sync", 15), 0);
	snprintf(endpoint, sizeof(endpoint), "ipc://%s/test-sock.tap", runtime_dir);
	cr_assert_eq(zmq_connect(t.reader, endpoint), 0);
	cr_assert_eq(loop_add_zsock(loop, t.reader, tap_router_on_copy, &t), 0);
	cr_assert_eq(loop_add_periodic(loop, "step", 2000, tap_router_step, &t), 0);
	arm_stall_timeout();
	cr_assert_eq(loop_run(loop), 0);
	/* header + routing identity + body */
	cr_assert_eq(t.frames, 3);
	cr_assert_str_eq(t.body, "snapshot?");
	cr_assert_eq(loop_remove_zsock(loop, t.reader), 0);
	zmq_close(t.reader);
	zmq_ctx_term(t.zmq);
}
