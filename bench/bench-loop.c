/*
 * bench-loop: messages per second PUSH -> PULL over ipc between two
 * processes through the runtime every daemon uses: the sender calls
 * sock_send(), the receiver is drained by the sd-event loop through
 * sock_watch()/sock_recv() (bounded batches, ZMQ_EVENTS re-checks).
 * Two runs: nobody on the receiver's tap, and a tap reader attached (every
 * message copied). Prints rows, tab-separated (bench/lib.sh). Run by
 * bench/loop.sh (./quickstart bench loop).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/sock.h"

/* Issue 3: PUSH -> PULL over ipc between two processes. */
#define TARGET_IPC_PER_S 500000.0
#define BENCH_MESSAGES (bench_quick() ? 20000L : 1000000L)
/* About one encoded pending pod. */
#define BENCH_MESSAGE_BYTES 256
/* How often the receiver checks whether the tap reader has attached. */
#define BENCH_ATTACH_POLL_USEC 1000

struct receiver {
	struct loop *loop;
	struct sock_ctx *ctx;
	bool want_tap, announced;
	int fd;
	long received;
	double start;
};

/* KANNA_BENCH_QUICK=1 (bench/results.sh, the pipeline's test): the same
 * rows from a fiftieth of the work; the figures then measure nothing. */
static bool bench_quick(void)
{
	const char *q = getenv("KANNA_BENCH_QUICK");

	return q && strcmp(q, "1") == 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int on_message(struct sock *s, void *userdata)
{
	struct receiver *rx = userdata;
	struct sock_msg msg;
	int r = sock_recv(s, &msg, ZMQ_DONTWAIT);

	if (r < 0)
		return r;
	sock_msg_close(&msg);
	if (rx->received++ == 0)
		rx->start = now();
	if (rx->received == BENCH_MESSAGES)
		loop_exit(rx->loop, 0);
	return 0;
}

/* Tells the sender to start once the tap reader (if any) is attached. */
static int announce_ready(struct loop *loop, void *userdata)
{
	struct receiver *rx = userdata;
	int ready = 1;

	if (rx->announced || (rx->want_tap && !sock_ctx_tap_attached(rx->ctx)))
		return 0;
	rx->announced = true;
	if (write(rx->fd, &ready, sizeof(ready)) != sizeof(ready))
		loop_exit(loop, 1);
	return loop_remove_periodic(loop, "announce");
}

static int receiver_main(const char *dir, bool want_tap, int fd)
{
	struct receiver rx = { .want_tap = want_tap, .fd = fd };
	struct sock *pull = NULL;
	double rate;
	int r;

	if (loop_new(&rx.loop, "bench-rx") < 0 ||
	    sock_ctx_new(&rx.ctx, rx.loop, "bench-rx", dir) < 0 ||
	    sock_new(&pull, rx.ctx, ZMQ_PULL, "bench") < 0 ||
	    sock_bind(pull, "bench") < 0 || sock_watch(pull, on_message, &rx) < 0 ||
	    loop_add_periodic(rx.loop, "announce", BENCH_ATTACH_POLL_USEC,
			      announce_ready, &rx) < 0)
		return 1;
	r = loop_run(rx.loop);
	rate = r == 0 ? (double)(rx.received - 1) / (now() - rx.start) : 0;
	if (write(fd, &rate, sizeof(rate)) != sizeof(rate))
		return 1;
	sock_free(pull);
	sock_ctx_free(rx.ctx);
	loop_free(rx.loop);
	return 0;
}

struct tap_reader {
	void *zmq, *sub;
	long copies;
};

/* Reads and discards tap copies until its context is shut down. */
static void *tap_reader_main(void *userdata)
{
	struct tap_reader *t = userdata;
	zmq_msg_t frame;

	zmq_msg_init(&frame);
	while (zmq_msg_recv(&frame, t->sub, 0) >= 0)
		if (!zmq_msg_more(&frame))
			t->copies++;
	zmq_msg_close(&frame);
	zmq_close(t->sub);
	return NULL;
}

static double run(const char *dir, bool with_tap, long *copies)
{
	struct tap_reader tap = { 0 };
	char buf[BENCH_MESSAGE_BYTES] = { 0 }, endpoint[512];
	struct sock_ctx *ctx = NULL;
	struct sock *push = NULL;
	pthread_t reader;
	int fds[2], ready, status, linger = 0;
	double rate = 0;
	pid_t pid;

	if (pipe(fds) < 0)
		return 0;
	pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0) {
		close(fds[0]);
		_exit(receiver_main(dir, with_tap, fds[1]));
	}
	close(fds[1]);
	if (with_tap) {
		snprintf(endpoint, sizeof(endpoint), "ipc://%s/bench-rx.tap", dir);
		tap.zmq = zmq_ctx_new();
		tap.sub = zmq_socket(tap.zmq, ZMQ_SUB);
		zmq_setsockopt(tap.sub, ZMQ_LINGER, &linger, sizeof(linger));
		zmq_setsockopt(tap.sub, ZMQ_SUBSCRIBE, "", 0);
		zmq_connect(tap.sub, endpoint);
		if (pthread_create(&reader, NULL, tap_reader_main, &tap) != 0)
			return 0;
	}
	if (read(fds[0], &ready, sizeof(ready)) != sizeof(ready))
		goto out;
	if (sock_ctx_new(&ctx, NULL, "bench-tx", dir) < 0 ||
	    sock_new(&push, ctx, ZMQ_PUSH, "bench") < 0 || sock_connect(push, "bench") < 0)
		goto out;
	for (long i = 0; i < BENCH_MESSAGES; i++)
		if (sock_send(push, buf, sizeof(buf), 0) < 0)
			goto out;
	if (read(fds[0], &rate, sizeof(rate)) != sizeof(rate))
		rate = 0;
out:
	waitpid(pid, &status, 0);
	close(fds[0]);
	sock_free(push);
	sock_ctx_free(ctx);
	if (with_tap) {
		zmq_ctx_shutdown(tap.zmq);
		pthread_join(reader, NULL);
		zmq_ctx_term(tap.zmq);
		*copies = tap.copies;
	}
	return rate;
}

/* One row, tab-separated: figure, value, unit, target ("-": none),
 * direction (bench/lib.sh prints the table). */
static void row(const char *figure, double value, const char *unit, double target, const char *direction)
{
	char t[32] = "-";

	if (target > 0)
		snprintf(t, sizeof(t), "%.0f", target);
	printf("%s\t%.0f\t%s\t%s\t%s\n", figure, value, unit, t, direction);
}

int main(void)
{
	char dir[] = "/tmp/kanna-bench-loop-XXXXXX";
	double idle, tapped;
	long copies = 0;

	if (!mkdtemp(dir))
		return 1;
	log_setup("bench-loop", LOG_FORMAT_TEXT, LOG_LEVEL_WARN);
	idle = run(dir, false, &copies);
	tapped = run(dir, true, &copies);
	rmdir(dir);
	row("PUSH->PULL ipc, 2 processes, via sd-event", idle, "msg/s", TARGET_IPC_PER_S, ">");
	row("same, kanna-tap attached to the receiver", tapped, "msg/s", 0, ">");
	row("tap copies read (1M recv, drops allowed)", (double)copies, "copies", 0, ">");
	return idle > 0 && tapped > 0 ? 0 : 1;
}
