/*
 * The hello that opens every connection (STYLE 12; state/msg.h, common/sock.h
 * sock_on_connect()): a sender greets each peer as it connects or, on an
 * XPUB, subscribes, again after either side restarts; the receiver's
 * dispatch accepts a hello from a role that may send on the socket and
 * logs it, and refuses by name, in the log and in
 * kanna_messages_dropped_total, a peer of another protocol major, of the
 * wrong role or with another shard count. Real sockets over ipc, turned by
 * the event loop as in the daemons.
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

static char runtime_dir[] = "/tmp/kanna-test-hello-XXXXXX";
/* Every socket a test opens, closed by teardown() if a failed assertion
 * left it open (the context cannot close with a socket open). */
static struct sock *open_socks[16];
static struct loop *loop;
static struct sock_ctx *ctx;
static struct metrics_registry *reg;
static struct metrics_counter *dropped;
static struct msg_io io_watcher, io_scheduler, io_launcher;
static FILE *log_mem;
static char *log_text;
static size_t log_size;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(runtime_dir));
	log_setup("test-hello", LOG_FORMAT_TEXT, LOG_LEVEL_INFO);
	log_mem = open_memstream(&log_text, &log_size);
	cr_assert_not_null(log_mem);
	log_set_stream(log_mem);
	cr_assert_eq(loop_new(&loop, "test-hello"), 0);
	cr_assert_eq(sock_ctx_new(&ctx, loop, "test-hello", runtime_dir), 0);
	cr_assert_eq(metrics_registry_new(&reg), 0);
	cr_assert_eq(msg_dropped_metric_new(reg, &dropped), 0);
	cr_assert_eq(msg_io_init(&io_watcher, PROTO_PROCESS_WATCHER, 0), 0);
	cr_assert_eq(msg_io_init(&io_scheduler, PROTO_PROCESS_SCHEDULER, 1), 0);
	cr_assert_eq(msg_io_init(&io_launcher, PROTO_PROCESS_LAUNCHER, 0), 0);
}

static void teardown(void)
{
	char cmd[128];

	for (size_t i = 0; i < ARRAY_SIZE(open_socks); i++)
		sock_free(open_socks[i]);
	log_set_stream(NULL);
	fclose(log_mem);
	free(log_text);
	msg_io_done(&io_watcher);
	msg_io_done(&io_scheduler);
	msg_io_done(&io_launcher);
	metrics_registry_free(reg);
	sock_ctx_free(ctx);
	loop_free(loop);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", runtime_dir);
	if (system(cmd) != 0) {
		/* best effort: a leftover temp dir fails nothing */
	}
}

TestSuite(msg_hello, .init = setup, .fini = teardown, .timeout = 30);

static struct sock *open_sock(int type, const char *name)
{
	struct sock *s;

	cr_assert_eq(sock_new(&s, ctx, type, name), 0);
	for (size_t i = 0; i < ARRAY_SIZE(open_socks); i++)
		if (!open_socks[i]) {
			open_socks[i] = s;
			return s;
		}
	cr_assert_fail("too many sockets");
	return NULL;
}

static void close_sock(struct sock *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(open_socks); i++)
		if (open_socks[i] == s)
			open_socks[i] = NULL;
	sock_free(s);
}

/* ---- a receiving peer: a socket dispatched by table on the loop ---- */

struct peer {
	struct sock *s;
	struct msg_dispatch d;
	unsigned handled;
};

static int on_any(const struct proto_msg *m, void *userdata)
{
	struct peer *p = userdata;

	(void)m;
	p->handled++;
	return 0;
}

/* What the launcher takes on "plans", a scheduler on "pending.0" and on "results". */
static const struct msg_route plans_routes[] = {
	{ PROTO_MSG_LAUNCH_PLAN, MSG_FROM(PROTO_PROCESS_SCHEDULER) | MSG_FROM(PROTO_PROCESS_REAPER), on_any },
};
static const struct msg_route pending_routes[] = {
	{ PROTO_MSG_PENDING_PODS, MSG_FROM(PROTO_PROCESS_WATCHER), on_any },
};
static const struct msg_route results_routes[] = {
	{ PROTO_MSG_HEARTBEAT, MSG_FROM(PROTO_PROCESS_LAUNCHER), on_any },
};

static int on_readable(struct sock *s, void *userdata)
{
	struct peer *p = userdata;

	return msg_dispatch(&p->d, s, p);
}

/* A receiver on endpoint: bound (bind) or connected; a SUB subscribes to all. */
static void peer_start(struct peer *p, int type, const char *name, const char *endpoint, bool bind,
		       const struct msg_route *routes, size_t n_routes, struct msg_io *io)
{
	*p = (struct peer){ .d = { .socket = name, .routes = routes, .n_routes = n_routes, .io = io,
				   .dropped = dropped } };
	p->s = open_sock(type, name);
	if (type == ZMQ_SUB)
		cr_assert_eq(sock_subscribe(p->s, "", 0), 0);
	cr_assert_eq(bind ? sock_bind(p->s, endpoint) : sock_connect(p->s, endpoint), 0);
	cr_assert_eq(sock_watch(p->s, on_readable, p), 0);
}

static void peer_stop(struct peer *p)
{
	close_sock(p->s);
	p->s = NULL;
}

/* Turns the loop until *counter reaches want (or 5 s pass). */
static void turn_until(const uint64_t *counter, uint64_t want)
{
	for (int i = 0; i < 500 && *counter < want; i++)
		cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
}

/* Turns the loop for about ms milliseconds. */
static void turn(int ms)
{
	for (int i = 0; i < ms / 10; i++)
		cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
}

static bool log_has(const char *needle)
{
	fflush(log_mem);
	return log_text && strstr(log_text, needle);
}

static unsigned log_count(const char *needle)
{
	unsigned n = 0;

	fflush(log_mem);
	for (const char *p = log_text; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static bool metric_has(const char *line)
{
	char *text = NULL;
	size_t len = 0;
	bool found;

	cr_assert_eq(metrics_registry_render(reg, &text, &len), 0);
	found = strstr(text, line) != NULL;
	free(text);
	return found;
}

static char host[MSG_INSTANCE_MAX];

static const char *hostname(void)
{
	if (gethostname(host, sizeof(host) - 1) < 0)
		strcpy(host, "-");
	return host;
}

/* ---- greeting ---- */

Test(msg_hello, a_connecting_sender_greets_its_peer_and_the_hello_is_accepted)
{
	struct peer launcher;
	struct sock *plans;
	char line[512];

	peer_start(&launcher, ZMQ_PULL, "plans", "plans", true, plans_routes,
		   ARRAY_SIZE(plans_routes), &io_launcher);
	plans = open_sock(ZMQ_PUSH, "plans-out");
	cr_assert_eq(msg_hello_on_connect(&io_scheduler, plans, 2), 0);
	cr_assert_eq(sock_connect(plans, "plans"), 0);
	turn_until(&launcher.d.n_hellos, 1);
	cr_assert_eq(launcher.d.n_hellos, 1, "no hello arrived");
	cr_assert_eq(launcher.d.n_dropped, 0, "the hello was dropped, not accepted");
	snprintf(line, sizeof(line), "peer scheduler 1/2 (pid %d, %s) connected on plans, protocol %d.%d",
		 (int)getpid(), hostname(), PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
	cr_assert(log_has(line), "no line \"%s\" in:\n%s", line, log_text);
	cr_assert_not(metric_has("kanna_messages_dropped_total{"), "a hello was counted as a drop");
	close_sock(plans);
	peer_stop(&launcher);
}

Test(msg_hello, a_connecting_sender_greets_a_restarted_peer_afresh)
{
	struct peer launcher;
	struct sock *plans;

	peer_start(&launcher, ZMQ_PULL, "plans", "plans", true, plans_routes,
		   ARRAY_SIZE(plans_routes), &io_launcher);
	plans = open_sock(ZMQ_PUSH, "plans-out");
	cr_assert_eq(msg_hello_on_connect(&io_scheduler, plans, 2), 0);
	cr_assert_eq(sock_connect(plans, "plans"), 0);
	turn_until(&launcher.d.n_hellos, 1);
	cr_assert_eq(launcher.d.n_hellos, 1, "%s", log_text);
	/* The launcher dies and comes back: the scheduler reconnects on its
	 * own (ZeroMQ's reconnect) and greets the new one. */
	peer_stop(&launcher);
	turn(50);
	peer_start(&launcher, ZMQ_PULL, "plans", "plans", true, plans_routes,
		   ARRAY_SIZE(plans_routes), &io_launcher);
	turn_until(&launcher.d.n_hellos, 1);
	cr_assert_eq(launcher.d.n_hellos, 1, "the restarted launcher was not greeted:\n%s", log_text);
	cr_assert_eq(launcher.d.n_dropped, 0);
	close_sock(plans);
	peer_stop(&launcher);
}

Test(msg_hello, an_accepting_sender_greets_each_peer_that_connects)
{
	struct peer scheduler;
	struct sock *pending;

	/* The watcher binds its PUSH; shard 0's scheduler connects. */
	pending = open_sock(ZMQ_PUSH, "pending.0");
	cr_assert_eq(msg_hello_on_connect(&io_watcher, pending, 1), 0);
	cr_assert_eq(sock_bind(pending, "pending.0"), 0);
	peer_start(&scheduler, ZMQ_PULL, "pending", "pending.0", false, pending_routes,
		   ARRAY_SIZE(pending_routes), &io_scheduler);
	turn_until(&scheduler.d.n_hellos, 1);
	cr_assert_eq(scheduler.d.n_hellos, 1, "no hello arrived");
	cr_assert(log_has("peer watcher (pid "));
	/* The scheduler restarts: its new connection is greeted too. */
	peer_stop(&scheduler);
	turn(50);
	peer_start(&scheduler, ZMQ_PULL, "pending", "pending.0", false, pending_routes,
		   ARRAY_SIZE(pending_routes), &io_scheduler);
	turn_until(&scheduler.d.n_hellos, 1);
	cr_assert_eq(scheduler.d.n_hellos, 1, "the restarted scheduler was not greeted");
	cr_assert_eq(scheduler.d.n_dropped, 0);
	peer_stop(&scheduler);
	close_sock(pending);
}

Test(msg_hello, a_publisher_greets_each_subscriber_as_it_subscribes_and_still_publishes)
{
	struct peer a, b;
	struct sock *results;
	struct proto_msg m;

	results = open_sock(ZMQ_XPUB, "results");
	cr_assert_eq(msg_hello_on_connect(&io_launcher, results, 0), 0);
	cr_assert_eq(sock_bind(results, "results"), 0);
	peer_start(&a, ZMQ_SUB, "results", "results", false, results_routes,
		   ARRAY_SIZE(results_routes), &io_scheduler);
	turn_until(&a.d.n_hellos, 1);
	cr_assert_eq(a.d.n_hellos, 1, "the first subscriber was not greeted");
	/* A second subscriber of the same topic is greeted too (XPUB_VERBOSE). */
	peer_start(&b, ZMQ_SUB, "results", "results", false, results_routes,
		   ARRAY_SIZE(results_routes), &io_scheduler);
	turn_until(&b.d.n_hellos, 1);
	cr_assert_eq(b.d.n_hellos, 1, "the second subscriber was not greeted");
	/* The subscriptions are read off the XPUB; messages go on flowing. */
	proto_msg_init(&m, PROTO_MSG_HEARTBEAT, PROTO_PROCESS_LAUNCHER, 0, 1);
	cr_assert_eq(msg_send(&io_launcher, results, &m, ZMQ_DONTWAIT), 0);
	for (int i = 0; i < 500 && (a.handled < 1 || b.handled < 1); i++)
		cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
	cr_assert_eq(a.handled, 1);
	cr_assert_eq(b.handled, 1);
	cr_assert_eq(a.d.n_dropped + b.d.n_dropped, 0);
	peer_stop(&a);
	peer_stop(&b);
	close_sock(results);
}

/* ---- refusing ---- */

/* Sends, from a bare PUSH, io's hello as a peer of protocol major `major`. */
static void send_hello_of_major(struct sock *tx, struct msg_io *io, unsigned major, uint32_t n_shards)
{
	struct proto_msg m;
	char *frame;

	proto_hello_init(&m, io->self, io->shard, n_shards, "old-host", 4242);
	m.body.hello.version_major = major;
	cr_assert_eq(msg_encode(io, &m), 0, "%s", io->last_error.text);
	frame = malloc(io->buf.size);
	cr_assert_not_null(frame);
	memcpy(frame, io->buf.data, io->buf.size);
	cr_assert_eq((unsigned char)frame[0], 0x94, "[major, minor, envelope, body]");
	frame[1] = (char)major; /* a positive fixint */
	cr_assert_eq(sock_send(tx, frame, io->buf.size, 0), 0);
	free(frame);
}

/* A launcher on "plans" and a bare PUSH (no hello of its own) towards it. */
static void plans_pair(struct peer *launcher, struct sock **tx)
{
	peer_start(launcher, ZMQ_PULL, "plans", "plans", true, plans_routes,
		   ARRAY_SIZE(plans_routes), &io_launcher);
	*tx = open_sock(ZMQ_PUSH, "plans-out");
	cr_assert_eq(sock_connect(*tx, "plans"), 0);
}

Test(msg_hello, a_peer_of_another_protocol_major_is_refused_by_name_and_counted)
{
	struct peer launcher;
	struct sock *tx;
	struct proto_msg m;
	char line[512], *frame;

	plans_pair(&launcher, &tx);
	send_hello_of_major(tx, &io_scheduler, PROTO_VERSION_MAJOR + 1, 0);
	turn_until(&launcher.d.n_dropped, 1);
	cr_assert_eq(launcher.d.n_hellos, 0, "a hello of another major was accepted");
	cr_assert_eq(launcher.d.n_refused, 1);
	snprintf(line, sizeof(line), "refusing peer scheduler pid 4242 on plans: it speaks protocol "
		 "%d.%d, this build %d.%d", PROTO_VERSION_MAJOR + 1, PROTO_VERSION_MINOR,
		 PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
	cr_assert(log_has(line), "no line \"%s\" in:\n%s", line, log_text);
	cr_assert(metric_has("kanna_messages_dropped_total{socket=\"plans\",reason=\"version_mismatch\"} 1"));
	cr_assert_not(metric_has("reason=\"unexpected_type\""), "the hello counted as an unexpected type");
	/* Its other messages go on being dropped whole. */
	proto_msg_init(&m, PROTO_MSG_HEARTBEAT, PROTO_PROCESS_SCHEDULER, 0, 0);
	cr_assert_eq(msg_encode(&io_scheduler, &m), 0);
	frame = malloc(io_scheduler.buf.size);
	cr_assert_not_null(frame);
	memcpy(frame, io_scheduler.buf.data, io_scheduler.buf.size);
	frame[1] = PROTO_VERSION_MAJOR + 1;
	cr_assert_eq(sock_send(tx, frame, io_scheduler.buf.size, 0), 0);
	free(frame);
	turn_until(&launcher.d.n_dropped, 2);
	cr_assert(metric_has("kanna_messages_dropped_total{socket=\"plans\",reason=\"version_mismatch\"} 2"));
	cr_assert_eq(launcher.handled, 0);
	close_sock(tx);
	peer_stop(&launcher);
}

Test(msg_hello, a_hello_from_a_role_that_may_not_send_on_the_socket_is_refused)
{
	struct peer launcher;
	struct sock *tx;

	plans_pair(&launcher, &tx);
	send_hello_of_major(tx, &io_watcher, PROTO_VERSION_MAJOR, 0);
	turn_until(&launcher.d.n_dropped, 1);
	cr_assert_eq(launcher.d.n_hellos, 0);
	cr_assert(log_has("refusing peer watcher pid 4242 on plans: hello: peer is watcher, expected "
			  "scheduler"), "%s", log_text);
	cr_assert(metric_has("kanna_messages_dropped_total{socket=\"plans\",reason=\"unexpected_sender\"} 1"));
	close_sock(tx);
	peer_stop(&launcher);
}

Test(msg_hello, a_hello_with_another_shard_count_is_refused)
{
	struct peer scheduler;
	struct sock *tx;

	peer_start(&scheduler, ZMQ_PULL, "pending", "pending.0", true, pending_routes,
		   ARRAY_SIZE(pending_routes), &io_scheduler);
	scheduler.d.n_shards = 4; /* this scheduler runs as shard 1 of 4 */
	tx = open_sock(ZMQ_PUSH, "pending-out");
	cr_assert_eq(sock_connect(tx, "pending.0"), 0);
	send_hello_of_major(tx, &io_watcher, PROTO_VERSION_MAJOR, 2);
	turn_until(&scheduler.d.n_dropped, 1);
	cr_assert_eq(scheduler.d.n_hellos, 0);
	cr_assert(log_has("refusing peer watcher pid 4242 on pending: hello: peer runs 2 scheduler "
			  "shard(s), this process expects 4"), "%s", log_text);
	/* The same count is accepted. */
	send_hello_of_major(tx, &io_watcher, PROTO_VERSION_MAJOR, 4);
	turn_until(&scheduler.d.n_hellos, 1);
	cr_assert_eq(scheduler.d.n_hellos, 1);
	close_sock(tx);
	peer_stop(&scheduler);
}

Test(msg_hello, refusals_are_all_counted_but_logged_at_a_bounded_rate)
{
	struct peer launcher;
	struct sock *tx;
	const unsigned n = 3 * MSG_REFUSAL_LOG_BURST;
	char line[64];

	plans_pair(&launcher, &tx);
	for (unsigned i = 0; i < n; i++)
		send_hello_of_major(tx, &io_scheduler, PROTO_VERSION_MAJOR + 1, 0);
	turn_until(&launcher.d.n_dropped, n);
	cr_assert_eq(launcher.d.n_refused, n);
	snprintf(line, sizeof(line), "reason=\"version_mismatch\"} %u", n);
	cr_assert(metric_has(line), "every refusal counts");
	cr_assert_eq(log_count("refusing peer scheduler"), MSG_REFUSAL_LOG_BURST,
		     "a burst is logged, the rest only counted:\n%s", log_text);
	close_sock(tx);
	peer_stop(&launcher);
}

Test(msg_hello, the_same_peer_greeting_again_is_logged_once_at_info)
{
	struct peer launcher;
	struct sock *tx;

	plans_pair(&launcher, &tx);
	for (int i = 0; i < 3; i++)
		send_hello_of_major(tx, &io_scheduler, PROTO_VERSION_MAJOR, 0);
	turn_until(&launcher.d.n_hellos, 3);
	cr_assert_eq(launcher.d.n_hellos, 3);
	cr_assert_eq(log_count("peer scheduler (pid 4242, old-host) connected on plans"), 1, "%s",
		     log_text);
	close_sock(tx);
	peer_stop(&launcher);
}
