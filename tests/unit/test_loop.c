/*
 * The event loop: periodic jobs and one-shot timers, SIGHUP/SIGTERM/SIGINT
 * handling with the daemon's hooks and exit codes, sd_notify READY/STATUS
 * and watchdog pings to a fake NOTIFY_SOCKET, and libcurl transfers driven
 * by the loop against a local libmicrohttpd server.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/worker.h"

#define USEC_PER_MSEC 1000ULL
/* A run that has not finished by then is broken. */
#define TEST_TIMEOUT_USEC (10ULL * 1000 * 1000)
#define EXIT_TIMED_OUT 3

static struct loop *loop;

static void setup(void)
{
	log_setup("test-loop", LOG_FORMAT_TEXT, LOG_LEVEL_WARN);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

static void teardown(void)
{
	loop = loop_free(loop);
}

TestSuite(loop, .init = setup, .fini = teardown, .timeout = 30);

static int on_exit_timer(struct loop *l, void *userdata)
{
	loop_exit(l, (int)(intptr_t)userdata);
	return 0;
}

static void exit_after(uint64_t usec, int code)
{
	cr_assert_eq(loop_add_timer(loop, usec, on_exit_timer, (void *)(intptr_t)code, NULL), 0);
}

/* ---- timers and periodic jobs ------------------------------------------- */

struct job_counts {
	unsigned fast, slow, self_removing;
};

#define FAST_RUNS 15

static int count_fast(struct loop *l, void *userdata)
{
	if (++((struct job_counts *)userdata)->fast == FAST_RUNS)
		loop_exit(l, 0);
	return 0;
}

static int count_slow(struct loop *l, void *userdata)
{
	((struct job_counts *)userdata)->slow++;
	return -EIO; /* a failing job is logged and keeps its schedule */
}

static int count_then_remove(struct loop *l, void *userdata)
{
	struct job_counts *c = userdata;

	if (++c->self_removing == 3)
		cr_assert_eq(loop_remove_periodic(l, "self-removing"), 0);
	return 0;
}

Test(loop, periodic_jobs_run_at_their_own_periods_until_removed)
{
	struct job_counts c = { 0 };
	uint64_t t0, elapsed;

	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	cr_assert_eq(loop_add_periodic(loop, "fast", 10 * USEC_PER_MSEC, count_fast, &c), 0);
	cr_assert_eq(loop_add_periodic(loop, "slow", 50 * USEC_PER_MSEC, count_slow, &c), 0);
	cr_assert_eq(loop_add_periodic(loop, "self-removing", 5 * USEC_PER_MSEC,
				       count_then_remove, &c), 0);
	cr_assert_eq(loop_add_periodic(loop, "fast", 10, count_fast, &c), -EEXIST);
	cr_assert_eq(loop_add_periodic(loop, "zero", 0, count_fast, &c), -EINVAL);
	exit_after(TEST_TIMEOUT_USEC, EXIT_TIMED_OUT);
	t0 = clock_monotonic_usec();
	cr_assert_eq(loop_run(loop), 0); /* until the fast job's FAST_RUNS-th run */
	elapsed = clock_monotonic_usec() - t0;
	/* No bound on how late a loaded machine runs them, only that none
	 * runs more often than due and each keeps its own period. */
	cr_assert_eq(c.fast, FAST_RUNS);
	cr_assert_geq(elapsed, (FAST_RUNS - 1) * 10 * USEC_PER_MSEC, "fast job ran %u times in %.1f ms",
		      c.fast, elapsed / 1000.0);
	cr_assert(c.slow >= 1 && c.slow <= elapsed / (50 * USEC_PER_MSEC) + 1,
		  "slow job ran %u times in %.1f ms", c.slow, elapsed / 1000.0);
	cr_assert_eq(c.self_removing, 3);
	cr_assert_eq(loop_remove_periodic(loop, "self-removing"), -ENOENT);
}

static int count_timer(struct loop *l, void *userdata)
{
	(*(unsigned *)userdata)++;
	return 0;
}

Test(loop, one_shot_timer_fires_once_and_a_cancelled_one_never)
{
	unsigned fired = 0, cancelled = 0;
	sd_event_source *held = NULL, *doomed = NULL;

	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	cr_assert_eq(loop_add_timer(loop, 10 * USEC_PER_MSEC, count_timer, &fired, NULL), 0);
	cr_assert_eq(loop_add_timer(loop, 20 * USEC_PER_MSEC, count_timer, &fired, &held), 0);
	cr_assert_eq(loop_add_timer(loop, 30 * USEC_PER_MSEC, count_timer, &cancelled, &doomed), 0);
	doomed = sd_event_source_disable_unref(doomed);
	exit_after(100 * USEC_PER_MSEC, 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(fired, 2);
	cr_assert_eq(cancelled, 0);
	sd_event_source_disable_unref(held);
}

/* ---- signals ---------------------------------------------------------- */

struct hooks_seen {
	unsigned reloads, shutdowns;
	int shutdown_result;
	bool handed_back;
	/* Scheduled from the first shutdown, so that a loaded machine that
	 * runs late cannot let them overtake the SIGTERM they answer. */
	uint64_t hand_back_after_usec;
	bool second_sigterm;
};

static int hand_back(struct loop *l, void *userdata);
static int raise_signal(struct loop *l, void *userdata);

static int on_reload(struct loop *l, void *userdata)
{
	((struct hooks_seen *)userdata)->reloads++;
	return 0;
}

static int on_shutdown(struct loop *l, void *userdata)
{
	struct hooks_seen *h = userdata;

	h->shutdowns++;
	cr_assert(loop_is_stopping(l));
	if (h->shutdowns == 1 && h->hand_back_after_usec)
		cr_assert_eq(loop_add_timer(l, h->hand_back_after_usec, hand_back, h, NULL), 0);
	if (h->shutdowns == 1 && h->second_sigterm)
		cr_assert_eq(loop_add_timer(l, 10 * USEC_PER_MSEC, raise_signal, (void *)SIGTERM, NULL), 0);
	return h->shutdown_result;
}

static int raise_signal(struct loop *l, void *userdata)
{
	raise((int)(intptr_t)userdata);
	return 0;
}

static void with_hooks(struct hooks_seen *h)
{
	struct loop_hooks hooks = { .on_shutdown = on_shutdown,
				    .on_reload = on_reload, .userdata = h };

	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	loop_set_hooks(loop, &hooks);
	exit_after(TEST_TIMEOUT_USEC, EXIT_TIMED_OUT);
}

Test(loop, sighup_reloads_and_keeps_running_then_sigterm_exits_zero)
{
	struct hooks_seen h = { 0 };
	unsigned after_reload = 0;

	with_hooks(&h);
	cr_assert_eq(loop_add_timer(loop, 10 * USEC_PER_MSEC, raise_signal, (void *)SIGHUP, NULL), 0);
	cr_assert_eq(loop_add_timer(loop, 30 * USEC_PER_MSEC, count_timer, &after_reload, NULL), 0);
	cr_assert_eq(loop_add_timer(loop, 50 * USEC_PER_MSEC, raise_signal, (void *)SIGTERM, NULL), 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(h.reloads, 1);
	cr_assert_eq(after_reload, 1, "the loop stopped turning after SIGHUP");
	cr_assert_eq(h.shutdowns, 1);
}

Test(loop, sigint_calls_on_shutdown_and_exits_zero)
{
	struct hooks_seen h = { 0 };

	with_hooks(&h);
	cr_assert_eq(loop_add_timer(loop, 10 * USEC_PER_MSEC, raise_signal, (void *)SIGINT, NULL), 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(h.shutdowns, 1);
	cr_assert_eq(h.reloads, 0);
}

static int hand_back(struct loop *l, void *userdata)
{
	((struct hooks_seen *)userdata)->handed_back = true;
	loop_exit(l, 0);
	return 0;
}

Test(loop, shutdown_waits_for_in_flight_work_the_hook_asks_time_for)
{
	/* The in-flight work finishes 50 ms after the stop request. */
	struct hooks_seen h = { .shutdown_result = LOOP_SHUTDOWN_PENDING,
				.hand_back_after_usec = 50 * USEC_PER_MSEC };

	with_hooks(&h);
	cr_assert_eq(loop_add_timer(loop, 10 * USEC_PER_MSEC, raise_signal, (void *)SIGTERM, NULL), 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(h.shutdowns, 1);
	cr_assert(h.handed_back);
}

Test(loop, a_hook_sets_its_own_shutdown_grace_and_learns_the_signal)
{
	/* kanna-init's use: the work would be handed back only after 5 s;
	 * the hook's 50 ms grace ends the loop long before. */
	struct hooks_seen h = { .shutdown_result = LOOP_SHUTDOWN_PENDING,
				.hand_back_after_usec = 5000 * USEC_PER_MSEC };
	struct loop_hooks hooks = { .on_shutdown = on_shutdown, .on_reload = on_reload,
				    .userdata = &h, .shutdown_grace_usec = 50 * USEC_PER_MSEC };

	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	loop_set_hooks(loop, &hooks);
	exit_after(TEST_TIMEOUT_USEC, EXIT_TIMED_OUT);
	cr_assert_eq(loop_shutdown_signal(loop), 0);
	cr_assert_eq(loop_add_timer(loop, 10 * USEC_PER_MSEC, raise_signal, (void *)SIGINT, NULL), 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(h.shutdowns, 1);
	cr_assert_not(h.handed_back, "the loop waited past the hook's grace");
	cr_assert_eq(loop_shutdown_signal(loop), SIGINT);
}

Test(loop, second_sigterm_exits_at_once)
{
	/* A second SIGTERM 10 ms into the shutdown; the work would be handed
	 * back only after 500 ms. */
	struct hooks_seen h = { .shutdown_result = LOOP_SHUTDOWN_PENDING,
				.hand_back_after_usec = 500 * USEC_PER_MSEC, .second_sigterm = true };

	with_hooks(&h);
	cr_assert_eq(loop_add_timer(loop, 10 * USEC_PER_MSEC, raise_signal, (void *)SIGTERM, NULL), 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(h.shutdowns, 1);
	cr_assert_not(h.handed_back);
}

Test(loop, failing_shutdown_hook_exits_one)
{
	struct hooks_seen h = { .shutdown_result = -EIO };

	with_hooks(&h);
	cr_assert_eq(loop_add_timer(loop, 10 * USEC_PER_MSEC, raise_signal, (void *)SIGTERM, NULL), 0);
	cr_assert_eq(loop_run(loop), 1);
	cr_assert_eq(h.shutdowns, 1);
}

/* ---- sd_notify ------------------------------------------------------------ */

static int notify_socket_open(char *path, size_t size)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/kanna-test-notify-XXXXXX";
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, size, "%s/notify", dir);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert_geq(fd, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	setenv("NOTIFY_SOCKET", path, 1);
	return fd;
}

struct notified {
	unsigned ready, watchdog;
	bool status_seen, status_update_seen, stopping_seen;
};

static void notify_read_all(int fd, struct notified *n)
{
	char buf[512];
	ssize_t len;

	while ((len = recv(fd, buf, sizeof(buf) - 1, 0)) > 0) {
		buf[len] = '\0';
		if (strstr(buf, "READY=1"))
			n->ready++;
		if (strstr(buf, "STATUS=serving 3 nodepools"))
			n->status_seen = true;
		if (strstr(buf, "WATCHDOG=1"))
			n->watchdog++;
		if (strstr(buf, "STATUS=solving batch of 12 pods"))
			n->status_update_seen = true;
		if (strstr(buf, "STOPPING=1"))
			n->stopping_seen = true;
	}
}

static int say_ready(struct loop *l, void *userdata)
{
	return loop_notify_ready(l, "serving 3 nodepools");
}

static int say_status(struct loop *l, void *userdata)
{
	return loop_notify_status(l, "solving batch of 12 pods");
}

/* Reads what was notified so far; SIGTERM once the loop has turned for
 * 260 ms and pinged twice (a loaded machine may run it late: the count,
 * not the clock, ends the test), or after 5 s whatever came. */
struct ping_watch {
	int fd;
	struct notified *n;
	uint64_t t0, elapsed;
};

static int watch_pings(struct loop *l, void *userdata)
{
	struct ping_watch *w = userdata;

	notify_read_all(w->fd, w->n);
	w->elapsed = clock_monotonic_usec() - w->t0;
	if ((w->elapsed >= 260 * USEC_PER_MSEC && w->n->watchdog >= 2) || w->elapsed >= 5000 * USEC_PER_MSEC) {
		loop_remove_periodic(l, "watch-pings");
		raise(SIGTERM);
	}
	return 0;
}

Test(loop, notifies_ready_with_status_and_pings_the_watchdog_while_turning)
{
	char path[256];
	struct notified n = { 0 };
	int fd = notify_socket_open(path, sizeof(path));
	struct ping_watch w = { .fd = fd, .n = &n };

	setenv("WATCHDOG_USEC", "100000", 1);
	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	cr_assert_eq(loop_watchdog_usec(loop), 100000);
	/* Not turning: no pings however long we wait. */
	usleep(250 * 1000);
	notify_read_all(fd, &n);
	cr_assert_eq(n.watchdog, 0);
	cr_assert_eq(loop_add_timer(loop, 10 * USEC_PER_MSEC, say_ready, NULL, NULL), 0);
	cr_assert_eq(loop_add_timer(loop, 20 * USEC_PER_MSEC, say_status, NULL, NULL), 0);
	w.t0 = clock_monotonic_usec();
	cr_assert_eq(loop_add_periodic(loop, "watch-pings", 20 * USEC_PER_MSEC, watch_pings, &w), 0);
	cr_assert_eq(loop_run(loop), 0);
	notify_read_all(fd, &n);
	cr_assert_eq(n.ready, 1);
	cr_assert(n.status_seen);
	cr_assert(n.status_update_seen);
	cr_assert(n.stopping_seen, "no STOPPING=1 on SIGTERM");
	/* Every 50 ms (half of WATCHDOG_USEC) while turning, no more often. */
	cr_assert(n.watchdog >= 2, "%u watchdog pings in %llu ms", n.watchdog,
		  (unsigned long long)(w.elapsed / USEC_PER_MSEC));
	cr_assert(n.watchdog <= w.elapsed / (50 * USEC_PER_MSEC) + 2, "%u watchdog pings in %llu ms",
		  n.watchdog, (unsigned long long)(w.elapsed / USEC_PER_MSEC));
	close(fd);
	unlink(path);
}

Test(loop, no_watchdog_pings_without_WATCHDOG_USEC)
{
	char path[256];
	struct notified n = { 0 };
	int fd = notify_socket_open(path, sizeof(path));

	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	cr_assert_eq(loop_watchdog_usec(loop), 0);
	exit_after(100 * USEC_PER_MSEC, 0);
	cr_assert_eq(loop_run(loop), 0);
	notify_read_all(fd, &n);
	cr_assert_eq(n.watchdog, 0);
	cr_assert_eq(n.ready, 0);
	close(fd);
	unlink(path);
}

/* ---- libcurl through the loop --------------------------------------------- */

/* Each /slow request takes this long on the server (a thread per connection). */
#define HTTP_SLOW_USEC (200ULL * 1000)
#define HTTP_CONCURRENT 8

static enum MHD_Result http_answer(void *cls, struct MHD_Connection *conn,
				   const char *url, const char *method,
				   const char *version, const char *upload,
				   size_t *upload_size, void **state)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (strncmp(url, "/slow", 5) == 0)
		usleep(HTTP_SLOW_USEC);
	resp = MHD_create_response_from_buffer(strlen(url), (void *)url,
					       MHD_RESPMEM_MUST_COPY);
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

static struct MHD_Daemon *http_server_start(uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct MHD_Daemon *d;

	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				     MHD_USE_THREAD_PER_CONNECTION,
			     0, NULL, NULL, http_answer, NULL,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
			     MHD_OPTION_END);
	cr_assert_not_null(d);
	*port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
	return d;
}

struct http_req {
	CURL *easy;
	char body[128];
	size_t size;
	unsigned done_calls;
	CURLcode result;
};

struct http_run {
	unsigned pending;
};

static size_t http_write(char *data, size_t size, size_t n, void *userdata)
{
	struct http_req *req = userdata;
	size_t len = size * n;

	if (req->size + len >= sizeof(req->body))
		return 0;
	memcpy(req->body + req->size, data, len);
	req->size += len;
	req->body[req->size] = '\0';
	return len;
}

static void http_done(CURL *easy, CURLcode result, void *userdata)
{
	struct http_req *req = userdata;

	cr_assert_eq(easy, req->easy);
	req->done_calls++;
	req->result = result;
}

static void http_done_count(CURL *easy, CURLcode result, void *userdata)
{
	struct http_req *req = userdata;

	http_done(easy, result, req);
	if (loop_http_running(loop) == 0)
		loop_exit(loop, 0);
}

static void http_req_init(struct http_req *req, uint16_t port, const char *path)
{
	char url[128];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	req->easy = curl_easy_init();
	cr_assert_not_null(req->easy);
	curl_easy_setopt(req->easy, CURLOPT_URL, url);
	curl_easy_setopt(req->easy, CURLOPT_WRITEFUNCTION, http_write);
	curl_easy_setopt(req->easy, CURLOPT_WRITEDATA, req);
}

static uint64_t monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

Test(loop, concurrent_http_gets_complete_through_the_loop)
{
	struct http_req reqs[HTTP_CONCURRENT] = { 0 };
	struct MHD_Daemon *server;
	uint16_t port;
	uint64_t start, elapsed;

	server = http_server_start(&port);
	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	exit_after(TEST_TIMEOUT_USEC, EXIT_TIMED_OUT);
	for (int i = 0; i < HTTP_CONCURRENT; i++) {
		char path[32];

		snprintf(path, sizeof(path), "/slow/%d", i);
		http_req_init(&reqs[i], port, path);
		cr_assert_eq(loop_http_start(loop, reqs[i].easy, http_done_count, &reqs[i]), 0);
		/* done() is never called from inside loop_http_start(). */
		cr_assert_eq(reqs[i].done_calls, 0);
	}
	cr_assert_eq(loop_http_start(loop, reqs[0].easy, http_done_count, &reqs[0]), -EEXIST);
	cr_assert_eq(loop_http_running(loop), HTTP_CONCURRENT);
	start = monotonic_usec();
	cr_assert_eq(loop_run(loop), 0);
	elapsed = monotonic_usec() - start;
	for (int i = 0; i < HTTP_CONCURRENT; i++) {
		char want[32];
		long code = 0;

		snprintf(want, sizeof(want), "/slow/%d", i);
		cr_assert_eq(reqs[i].done_calls, 1);
		cr_assert_eq(reqs[i].result, CURLE_OK, "%s", curl_easy_strerror(reqs[i].result));
		curl_easy_getinfo(reqs[i].easy, CURLINFO_RESPONSE_CODE, &code);
		cr_assert_eq(code, 200);
		cr_assert_str_eq(reqs[i].body, want);
		curl_easy_cleanup(reqs[i].easy);
	}
	/* Sequential transfers would take HTTP_CONCURRENT x HTTP_SLOW_USEC. */
	cr_assert_lt(elapsed, (HTTP_CONCURRENT - 2) * HTTP_SLOW_USEC, "took %llu us", (unsigned long long)elapsed);
	MHD_stop_daemon(server);
}

#define HTTP_CHAIN 25

/* done() reuses its easy handle for the next request: a keep-alive chain. */
static void http_done_restart(CURL *easy, CURLcode result, void *userdata)
{
	struct http_req *req = userdata;

	http_done(easy, result, req);
	if (result != CURLE_OK || req->done_calls == HTTP_CHAIN) {
		loop_exit(loop, 0);
		return;
	}
	req->size = 0;
	cr_assert_eq(loop_http_start(loop, easy, http_done_restart, req), 0);
}

Test(loop, done_may_restart_the_same_handle_from_inside_the_callback)
{
	struct http_req req = { 0 };
	struct MHD_Daemon *server;
	uint16_t port;

	server = http_server_start(&port);
	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	exit_after(TEST_TIMEOUT_USEC, EXIT_TIMED_OUT);
	http_req_init(&req, port, "/again");
	cr_assert_eq(loop_http_start(loop, req.easy, http_done_restart, &req), 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(req.result, CURLE_OK, "%s", curl_easy_strerror(req.result));
	cr_assert_eq(req.done_calls, HTTP_CHAIN);
	cr_assert_str_eq(req.body, "/again");
	curl_easy_cleanup(req.easy);
	MHD_stop_daemon(server);
}

static int cancel_request(struct loop *l, void *userdata)
{
	struct http_req *req = userdata;

	cr_assert_eq(req->done_calls, 0);
	cr_assert_eq(loop_http_cancel(l, req->easy), 0);
	cr_assert_eq(req->done_calls, 1);
	cr_assert_eq(req->result, CURLE_ABORTED_BY_CALLBACK);
	cr_assert_eq(loop_http_cancel(l, req->easy), -ENOENT);
	cr_assert_eq(loop_http_running(l), 0);
	return 0;
}

Test(loop, cancelled_transfer_reports_aborted_exactly_once)
{
	struct http_req req = { 0 };
	struct MHD_Daemon *server;
	uint16_t port;

	server = http_server_start(&port);
	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	http_req_init(&req, port, "/slow/cancelled");
	cr_assert_eq(loop_http_start(loop, req.easy, http_done, &req), 0);
	cr_assert_eq(loop_add_timer(loop, 30 * USEC_PER_MSEC, cancel_request, &req, NULL), 0);
	/* Keep turning past the time the server would have answered. */
	exit_after(2 * HTTP_SLOW_USEC, 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(req.done_calls, 1);
	cr_assert_eq(req.size, 0);
	curl_easy_cleanup(req.easy);
	MHD_stop_daemon(server);
}

Test(loop, refused_connection_completes_with_the_curl_error)
{
	struct http_req req = { 0 };
	struct MHD_Daemon *server;
	uint16_t port;

	/* A port that was just free: nobody listens there now. */
	server = http_server_start(&port);
	MHD_stop_daemon(server);
	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	exit_after(TEST_TIMEOUT_USEC, EXIT_TIMED_OUT);
	http_req_init(&req, port, "/");
	cr_assert_eq(loop_http_start(loop, req.easy, http_done_count, &req), 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(req.done_calls, 1);
	cr_assert_eq(req.result, CURLE_COULDNT_CONNECT, "%s", curl_easy_strerror(req.result));
	curl_easy_cleanup(req.easy);
}

Test(loop, freeing_the_loop_aborts_transfers_in_flight)
{
	struct http_req req = { 0 };
	struct MHD_Daemon *server;
	uint16_t port;

	server = http_server_start(&port);
	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	http_req_init(&req, port, "/slow/never");
	cr_assert_eq(loop_http_start(loop, req.easy, http_done, &req), 0);
	exit_after(20 * USEC_PER_MSEC, 0);
	cr_assert_eq(loop_run(loop), 0);
	loop = loop_free(loop);
	cr_assert_eq(req.done_calls, 1);
	cr_assert_eq(req.result, CURLE_ABORTED_BY_CALLBACK);
	curl_easy_cleanup(req.easy);
	MHD_stop_daemon(server);
}

/* ---- smaller contracts ------------------------------------------------------ */

Test(loop, status_text_cannot_smuggle_another_notify_assignment)
{
	char path[256], buf[256];
	int fd = notify_socket_open(path, sizeof(path));
	ssize_t len;

	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	cr_assert_eq(loop_notify_status(loop, "evil\nREADY=1"), 0);
	len = recv(fd, buf, sizeof(buf) - 1, 0);
	cr_assert_gt(len, 0);
	buf[len] = '\0';
	cr_assert_str_eq(buf, "STATUS=evil READY=1");
	close(fd);
	unlink(path);
}

Test(loop, forked_children_can_restore_default_signals_before_exec)
{
	sigset_t mask;
	struct sigaction sa;

	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, NULL, &mask), 0);
	cr_assert(sigismember(&mask, SIGTERM));
	cr_assert(sigismember(&mask, SIGHUP));
	cr_assert_eq(loop_child_reset_signals(), 0);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, NULL, &mask), 0);
	cr_assert_not(sigismember(&mask, SIGTERM));
	cr_assert_not(sigismember(&mask, SIGINT));
	cr_assert_not(sigismember(&mask, SIGHUP));
	cr_assert_eq(sigaction(SIGPIPE, NULL, &sa), 0);
	cr_assert_eq(sa.sa_handler, SIG_DFL);
}

/* ---- the background worker (common/worker.h) ---- */

struct slow_job {
	unsigned sleep_ms;
	pthread_t ran_on;
	bool ran;
};

struct worker_seen {
	int ticks_while_busy;  /* periodic job runs while the job slept */
	int done;
	pthread_t done_on;
	struct worker *w;
};

static void run_slow_job(void *job)
{
	struct slow_job *j = job;

	usleep(j->sleep_ms * 1000);
	j->ran_on = pthread_self();
	j->ran = true;
}

static void slow_job_done(void *job, void *userdata)
{
	struct worker_seen *seen = userdata;

	(void)job;
	seen->done++;
	seen->done_on = pthread_self();
	loop_exit(loop, 0);
}

static int tick_while_busy(struct loop *l, void *userdata)
{
	struct worker_seen *seen = userdata;

	(void)l;
	if (worker_busy(seen->w))
		seen->ticks_while_busy++;
	return 0;
}

Test(loop, a_worker_job_runs_off_the_loop_and_completes_on_it)
{
	struct worker_seen seen = { 0 };
	struct slow_job job = { .sleep_ms = 300 };

	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	cr_assert_eq(worker_new(&seen.w, loop, "test-worker", slow_job_done, &seen), 0);
	cr_assert_eq(loop_add_periodic(loop, "tick", 20 * 1000, tick_while_busy, &seen), 0);
	cr_assert_eq(worker_submit(seen.w, run_slow_job, &job), 0);
	cr_expect_eq(worker_submit(seen.w, run_slow_job, &job), -EBUSY, "one job at a time");
	exit_after(5 * 1000 * 1000, 2);
	cr_assert_eq(loop_run(loop), 0);
	cr_expect(job.ran);
	cr_expect_eq(seen.done, 1);
	cr_expect(pthread_equal(seen.done_on, pthread_self()), "done() runs on the loop thread");
	cr_expect_not(pthread_equal(job.ran_on, pthread_self()), "the job runs on the worker");
	cr_expect_geq(seen.ticks_while_busy, 5, "the loop kept turning: %d ticks", seen.ticks_while_busy);
	cr_expect_not(worker_busy(seen.w));
	worker_free(seen.w);
}

Test(loop, freeing_a_worker_waits_for_its_job_and_hands_it_back)
{
	struct worker_seen seen = { 0 };
	struct slow_job job = { .sleep_ms = 100 };

	cr_assert_eq(loop_new(&loop, "test-loop"), 0);
	cr_assert_eq(worker_new(&seen.w, loop, "test-worker", slow_job_done, &seen), 0);
	cr_assert_eq(worker_submit(seen.w, run_slow_job, &job), 0);
	worker_free(seen.w); /* the loop never ran: delivery happens here */
	cr_expect(job.ran);
	cr_expect_eq(seen.done, 1);
}
