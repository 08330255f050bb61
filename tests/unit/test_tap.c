/*
 * kanna-tap: the header parser and JSON formatter (tools/tap-format.c), and
 * the real binary run as a subprocess against XPUB sockets bound the way a
 * daemon's tap is (ipc://<runtime_dir>/<process>.tap).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include <msgpack.h>

#include "common/loop.h"
#include "common/sock.h"
#include "proto/proto.h"
#include "tools/tap-format.h"

/* Encoded kanna messages to tap: 0 = heartbeat, 1 = hello. */
static int tap_test_payload(int which, uint8_t **ret, size_t *ret_size, const char **ret_type)
{
	struct proto_msg msg = { 0 };
	msgpack_sbuffer buf;

	msg.env.sender = PROTO_PROCESS_WATCHER;
	msg.env.seq = 42;
	if (which == 0) {
		msg.env.type = PROTO_MSG_HEARTBEAT;
		msg.body.heartbeat.uptime_ms = 1500;
		msg.body.heartbeat.queue_depth = 3;
	} else {
		msg.env.type = PROTO_MSG_HELLO;
		msg.body.hello.version_major = PROTO_VERSION_MAJOR;
		msg.body.hello.version_minor = PROTO_VERSION_MINOR;
		msg.body.hello.role = PROTO_PROCESS_WATCHER;
	}
	msgpack_sbuffer_init(&buf);
	int r = proto_encode(&msg, &buf, NULL);
	if (r < 0) {
		msgpack_sbuffer_destroy(&buf);
		return r;
	}
	*ret_size = buf.size;
	*ret = (uint8_t *)msgpack_sbuffer_release(&buf);
	*ret_type = proto_type_name(msg.env.type);
	return 0;
}

/* A watcher's message of `type` (state_delta or snapshot_item) carrying an
 * EC2NodeClass whose spec.userData is user_data. */
static int nodeclass_payload(enum proto_msg_type type, const char *user_data, uint8_t **ret,
			     size_t *ret_size)
{
	struct proto_nodeclass nc = { .name = "default", .uid = "nc-1", .role = "KarpenterNodeRole",
				      .user_data = (char *)user_data };
	struct proto_object obj = { .kind = PROTO_OBJECT_NODECLASS, .nodeclass = &nc };
	struct proto_msg msg = { .env = { .sender = PROTO_PROCESS_WATCHER, .seq = 7, .type = type } };
	msgpack_sbuffer buf;

	if (type == PROTO_MSG_STATE_DELTA)
		msg.body.state_delta = (struct proto_state_delta){ .seq = 7, .op = PROTO_DELTA_ADD, .object = obj };
	else
		msg.body.snapshot_item = (struct proto_snapshot_item){ .seq = 7, .object = obj };
	msgpack_sbuffer_init(&buf);
	int r = proto_encode(&msg, &buf, NULL);
	if (r < 0) {
		msgpack_sbuffer_destroy(&buf);
		return r;
	}
	*ret_size = buf.size;
	*ret = (uint8_t *)msgpack_sbuffer_release(&buf);
	return 0;
}

/* A bootstrap script with a secret, its length and its SHA-256 (sha256sum). */
#define SECRET_USER_DATA "#!/bin/bash\necho \"token=s3cr3t-bootstrap\"\n"
#define SECRET_USER_DATA_REDACTED "<redacted: 42 bytes, sha256 9737796e7ae6>"

static const char *str_or_missing(const char *s)
{
	return s ? s : "(missing)";
}

/* The user data of the nodeclass in a formatted line, or NULL. */
static const char *user_data_of(json_t *line)
{
	json_t *body = json_object_get(json_object_get(line, "fields"), "body");
	json_t *nc = json_object_get(json_object_get(body, "object"), "object");
	return json_string_value(json_object_get(nc, "user_data"));
}

static struct proto_decoder *decoder;

static void format_setup(void)
{
	decoder = proto_decoder_new();
	cr_assert(decoder);
}

static void format_teardown(void)
{
	proto_decoder_free(decoder);
}

TestSuite(tap_format, .init = format_setup, .fini = format_teardown);

/* ---- formatter ---------------------------------------------------------- */

Test(tap_format, parses_a_well_formed_header)
{
	static const char h[] = "recv state.pub 1763850123456789";
	struct tap_header header;
	const char *error;

	cr_assert_eq(tap_header_parse(h, strlen(h), &header, &error), 0);
	cr_assert_str_eq(header.direction, "recv");
	cr_assert_str_eq(header.socket, "state.pub");
	cr_assert_eq(header.time_usec, 1763850123456789ULL);
}

Test(tap_format, rejects_malformed_headers_with_a_specific_error)
{
	static const struct {
		const char *header;
		const char *error;
	} cases[] = {
		{ "sent x 1", "tap header does not start with \"send \" or \"recv \"" },
		{ "send", "tap header does not start with \"send \" or \"recv \"" },
		{ "send pending.0", "tap header has no time field" },
		{ "send  1", "tap header socket name is empty or too long" },
		{ "send pending.0 ", "tap header time is empty or too long" },
		{ "send pending.0 12x", "tap header time is not a decimal number" },
		{ "send pending.0 99999999999999999999", "tap header time overflows 64 bits" },
		{ "send pending.0 123456789012345678901", "tap header time is empty or too long" },
		{ "send pend\x01ing 1", "tap header socket name has a non-printable byte" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tap_header header;
		const char *error = NULL;
		cr_expect_eq(tap_header_parse(cases[i].header, strlen(cases[i].header), &header, &error),
			     -EBADMSG, "case %zu", i);
		cr_expect_str_eq(error ? error : "(none)", cases[i].error, "case %zu", i);
	}
}

Test(tap_format, formats_time_as_rfc3339_utc_with_microseconds)
{
	char buf[TAP_TIME_LEN];
	cr_assert_eq(tap_format_time(1763850123000042ULL, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "2025-11-22T22:22:03.000042Z");
	cr_assert_eq(tap_format_time(0, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "1970-01-01T00:00:00.000000Z");
}

static char *to_json(const char *process, const struct tap_frame *frames, size_t n)
{
	json_t *obj;
	cr_assert_eq(tap_message_to_json(decoder, process, frames, n, 1763850123000000ULL, 0, &obj), 0);
	char *s = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	return s;
}

Test(tap_format, garbage_payload_is_undecodable_with_bytes_and_hex_prefix)
{
	static const char header[] = "send plans 1763850123456789";
	uint8_t payload[100];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(0xc1); /* never used in msgpack */
	struct tap_frame frames[] = { { header, strlen(header) }, { payload, sizeof(payload) } };

	json_t *obj;
	cr_assert_eq(tap_message_to_json(decoder, "kanna-scheduler", frames, 2, 0, 0, &obj), 0);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "time")), "2025-11-22T22:22:03.456789Z");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "process")), "kanna-scheduler");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "direction")), "send");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "socket")), "plans");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "type")), "undecodable");
	cr_assert(json_string_value(json_object_get(obj, "error"))[0] != '\0');
	cr_assert_eq(json_integer_value(json_object_get(obj, "bytes")), 100);
	const char *hex = json_string_value(json_object_get(obj, "hex"));
	cr_assert_eq(strlen(hex), 2 * TAP_HEX_BYTES);
	cr_assert_eq(strncmp(hex, "c1c1c1", 6), 0);
	json_decref(obj);
}

Test(tap_format, malformed_header_keeps_the_payload_and_uses_receipt_time)
{
	static const char header[] = "bogus";
	static const uint8_t payload[] = { 0x01, 0xab };
	struct tap_frame frames[] = { { header, 5 }, { payload, 2 } };

	char *s = to_json("kanna-reaper", frames, 2);
	cr_assert_str_eq(s, "{\"time\":\"2025-11-22T22:22:03.000000Z\",\"process\":\"kanna-reaper\","
			    "\"direction\":null,\"socket\":null,\"type\":\"undecodable\","
			    "\"error\":\"tap header does not start with \\\"send \\\" or \\\"recv \\\"\","
			    "\"bytes\":2,\"hex\":\"01ab\"}");
	free(s);
}

Test(tap_format, single_frame_message_is_undecodable)
{
	static const char header[] = "send plans 1";
	struct tap_frame frames[] = { { header, strlen(header) } };

	char *s = to_json("kanna-launcher", frames, 1);
	cr_assert(strstr(s, "\"error\":\"tap message has fewer than 2 frames\""), "%s", s);
	cr_assert(strstr(s, "\"bytes\":0,\"hex\":\"\""), "%s", s);
	free(s);
}

Test(tap_format, payload_is_the_last_frame_after_routing_frames)
{
	static const char header[] = "recv state.sync 5";
	static const uint8_t identity[] = { 0x00, 0x6b, 0x8b, 0x45, 0x67 };
	static const uint8_t payload[] = { 0xc1 };
	struct tap_frame frames[] = { { header, strlen(header) },
				      { identity, sizeof(identity) },
				      { payload, sizeof(payload) } };

	char *s = to_json("kanna-watcher", frames, 3);
	cr_assert(strstr(s, "\"bytes\":1,\"hex\":\"c1\""), "%s", s);
	free(s);
}

Test(tap_format, decodes_a_proto_payload_into_type_and_fields)
{
	static const char header[] = "send pending.0 1763850123456789";
	uint8_t *payload;
	size_t size;
	const char *type;

	cr_assert_eq(tap_test_payload(0, &payload, &size, &type), 0);
	struct tap_frame frames[] = { { header, strlen(header) }, { payload, size } };
	json_t *obj;
	cr_assert_eq(tap_message_to_json(decoder, "kanna-watcher", frames, 2, 0, 0, &obj), 0);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "type")), type,
			 "%s", json_dumps(obj, JSON_COMPACT));
	cr_assert(json_is_object(json_object_get(obj, "fields")));
	cr_assert_null(json_object_get(obj, "error"));
	json_decref(obj);
	free(payload);
}

Test(tap_format, truncated_proto_payload_carries_the_decoders_message)
{
	static const char header[] = "recv state.pub 1";
	uint8_t *payload;
	size_t size;
	const char *type;
	const struct proto_msg *msg;
	struct proto_error err = { 0 };

	cr_assert_eq(tap_test_payload(0, &payload, &size, &type), 0);
	cr_assert_lt(proto_decode(decoder, payload, size - 1, &msg, &err), 0);
	struct tap_frame frames[] = { { header, strlen(header) }, { payload, size - 1 } };
	json_t *obj;
	cr_assert_eq(tap_message_to_json(decoder, "kanna-scheduler", frames, 2, 0, 0, &obj), 0);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "type")), "undecodable");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "error")), err.text);
	cr_assert_eq(json_integer_value(json_object_get(obj, "bytes")), (json_int_t)(size - 1));
	json_decref(obj);
	free(payload);
}

static json_t *format_nodeclass(enum proto_msg_type type, const char *user_data, unsigned flags)
{
	static const char header[] = "send state.pub 1763850123456789";
	uint8_t *payload;
	size_t size;
	json_t *obj;

	cr_assert_eq(nodeclass_payload(type, user_data, &payload, &size), 0);
	struct tap_frame frames[] = { { header, strlen(header) }, { payload, size } };
	cr_assert_eq(tap_message_to_json(decoder, "kanna-watcher", frames, 2, 0, flags, &obj), 0);
	free(payload);
	return obj;
}

Test(tap_format, nodeclass_user_data_shows_only_length_and_digest_by_default)
{
	static const enum proto_msg_type types[] = { PROTO_MSG_STATE_DELTA, PROTO_MSG_SNAPSHOT_ITEM };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		json_t *obj = format_nodeclass(types[i], SECRET_USER_DATA, 0);
		char *s = json_dumps(obj, JSON_COMPACT);
		cr_expect_str_eq(str_or_missing(user_data_of(obj)), SECRET_USER_DATA_REDACTED, "%s", s);
		cr_expect_null(strstr(s, "s3cr3t"), "%s", s);
		/* Only the user data: the rest of the nodeclass is as sent. */
		cr_expect(strstr(s, "\"role\":\"KarpenterNodeRole\""), "%s", s);
		free(s);
		json_decref(obj);
	}
}

Test(tap_format, show_user_data_flag_prints_nodeclass_user_data_in_clear)
{
	static const enum proto_msg_type types[] = { PROTO_MSG_STATE_DELTA, PROTO_MSG_SNAPSHOT_ITEM };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		json_t *obj = format_nodeclass(types[i], SECRET_USER_DATA, TAP_SHOW_USER_DATA);
		cr_expect_str_eq(str_or_missing(user_data_of(obj)), SECRET_USER_DATA, "type %zu", i);
		json_decref(obj);
	}
}

Test(tap_format, redacted_digest_is_of_the_bytes_not_of_their_json_rendering)
{
	/* Not UTF-8: proto_to_json() would render it "??"; the digest and the
	 * length are those of the two bytes (printf '\xff\xfe' | sha256sum). */
	json_t *obj = format_nodeclass(PROTO_MSG_STATE_DELTA, "\xff\xfe", 0);
	cr_assert_str_eq(str_or_missing(user_data_of(obj)), "<redacted: 2 bytes, sha256 b3d510ef0427>");
	json_decref(obj);
}

/* ---- kanna-tap as a subprocess ------------------------------------------ */

/* How long a test waits for kanna-tap to subscribe or print: it rescans
 * every second, so a few seconds is generous even under sanitizers. */
#define WAIT_MSEC 10000

struct tapd {
	void *zctx;
	char dir[64];
	pid_t pid;
	int out;      /* kanna-tap's stdout */
	int err;      /* and its stderr */
	bool dir_from_env; /* pass the directory as KANNA_RUNTIME_DIR, not --runtime-dir */
	char buf[65536];
	size_t len;
};

static struct tapd t;

static void e2e_setup(void)
{
	t = (struct tapd){ .pid = -1, .out = -1, .err = -1 };
	snprintf(t.dir, sizeof(t.dir), "/tmp/kanna-tap-test.XXXXXX");
	cr_assert(mkdtemp(t.dir));
	t.zctx = zmq_ctx_new();
	cr_assert(t.zctx);
}

static void e2e_teardown(void)
{
	if (t.pid > 0) {
		kill(t.pid, SIGKILL);
		waitpid(t.pid, NULL, 0);
	}
	if (t.out >= 0)
		close(t.out);
	if (t.err >= 0)
		close(t.err);
	zmq_ctx_term(t.zctx);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t.dir);
	cr_expect_eq(system(cmd), 0);
}

/* A daemon's tap: XPUB at <dir>/<process>.tap. */
static void *bind_tap(const char *process)
{
	char endpoint[128];
	int linger = 0;
	void *xpub = zmq_socket(t.zctx, ZMQ_XPUB);

	cr_assert(xpub);
	zmq_setsockopt(xpub, ZMQ_LINGER, &linger, sizeof(linger));
	snprintf(endpoint, sizeof(endpoint), "ipc://%s/%s.tap", t.dir, process);
	cr_assert_eq(zmq_bind(xpub, endpoint), 0, "bind %s: %s", endpoint, zmq_strerror(zmq_errno()));
	return xpub;
}

/* kanna-tap --runtime-dir <dir> <args...> with stdout on a pipe. */
static void spawn_tap(const char *const *args)
{
	const char *builddir = getenv("KANNA_BUILDDIR");
	char path[4096];
	const char *argv[16] = { "kanna-tap", "--runtime-dir", t.dir };
	size_t n = t.dir_from_env ? 1 : 3;
	int pipefd[2], errfd[2];

	if (t.out >= 0)
		close(t.out);
	if (t.err >= 0)
		close(t.err);
	t.len = 0;
	snprintf(path, sizeof(path), "%s/tools/kanna-tap", builddir ? builddir : ".");
	for (; args && *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	cr_assert_eq(pipe(pipefd), 0);
	cr_assert_eq(pipe(errfd), 0);
	t.pid = fork();
	cr_assert_geq(t.pid, 0);
	if (t.pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(errfd[1], STDERR_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		close(errfd[0]);
		close(errfd[1]);
		if (t.dir_from_env)
			setenv("KANNA_RUNTIME_DIR", t.dir, 1);
		execv(path, (char *const *)argv);
		fprintf(stderr, "Failed to execute %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	close(errfd[1]);
	t.out = pipefd[0];
	t.err = errfd[0];
}

/* Everything kanna-tap wrote to stderr (call after it exited). */
static char *read_stderr(void)
{
	static char text[8192];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(text) - 1 && (n = read(t.err, text + len, sizeof(text) - 1 - len)) > 0)
		len += (size_t)n;
	text[len] = '\0';
	return text;
}

/* Waits for the subscription kanna-tap's SUB sends to a daemon's XPUB. */
static bool subscribed(void *xpub, int timeout_msec)
{
	zmq_pollitem_t item = { xpub, 0, ZMQ_POLLIN, 0 };
	if (zmq_poll(&item, 1, timeout_msec) <= 0)
		return false;
	char sub[16];
	int n = zmq_recv(xpub, sub, sizeof(sub), 0);
	return n >= 1 && sub[0] == 1;
}

static void send_tap(void *xpub, const char *header, const void *payload, size_t size)
{
	cr_assert_eq(zmq_send(xpub, header, strlen(header), ZMQ_SNDMORE), (int)strlen(header));
	cr_assert_eq(zmq_send(xpub, payload, size, 0), (int)size);
}

/* The next line of kanna-tap's output parsed as JSON, or NULL on EOF/timeout. */
static json_t *next_line(int timeout_msec)
{
	for (;;) {
		char *nl = memchr(t.buf, '\n', t.len);
		if (nl) {
			json_error_t error;
			json_t *obj = json_loadb(t.buf, (size_t)(nl - t.buf), 0, &error);
			cr_assert(obj, "not JSON: %.*s (%s)", (int)(nl - t.buf), t.buf, error.text);
			t.len -= (size_t)(nl + 1 - t.buf);
			memmove(t.buf, nl + 1, t.len);
			return obj;
		}
		struct pollfd pfd = { t.out, POLLIN, 0 };
		if (poll(&pfd, 1, timeout_msec) <= 0)
			return NULL;
		ssize_t n = read(t.out, t.buf + t.len, sizeof(t.buf) - t.len);
		if (n <= 0)
			return NULL;
		t.len += (size_t)n;
	}
}

static int wait_exit(void)
{
	int status;
	for (int i = 0; i < WAIT_MSEC / 10; i++) {
		pid_t p = waitpid(t.pid, &status, WNOHANG);
		if (p == t.pid) {
			t.pid = -1;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000000 }, NULL);
	}
	return -1;
}

static const char *str(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s ? s : "(missing)";
}

TestSuite(tap_e2e, .init = e2e_setup, .fini = e2e_teardown, .timeout = 60);

Test(tap_e2e, prints_each_message_as_one_json_line_and_exits_after_count)
{
	static const uint8_t garbage[] = { 0xc1, 0x00, 0xff };
	void *xpub = bind_tap("kanna-watcher");
	uint8_t *payload;
	size_t size;
	const char *type;

	spawn_tap((const char *[]){ "--count", "3", NULL });
	cr_assert(subscribed(xpub, WAIT_MSEC), "kanna-tap never subscribed");
	cr_assert_eq(tap_test_payload(0, &payload, &size, &type), 0);
	send_tap(xpub, "send pending.0 1763850123000001", payload, size);
	send_tap(xpub, "recv state.sync 1763850123000002", garbage, sizeof(garbage));
	send_tap(xpub, "send pending.0 1763850123000003", payload, size);
	send_tap(xpub, "send pending.0 1763850123000004", payload, size); /* beyond --count */
	free(payload);

	json_t *l1 = next_line(WAIT_MSEC), *l2 = next_line(WAIT_MSEC), *l3 = next_line(WAIT_MSEC);
	cr_assert(l1 && l2 && l3, "expected 3 lines");
	cr_assert_str_eq(str(l1, "time"), "2025-11-22T22:22:03.000001Z");
	cr_assert_str_eq(str(l1, "process"), "kanna-watcher");
	cr_assert_str_eq(str(l1, "direction"), "send");
	cr_assert_str_eq(str(l1, "socket"), "pending.0");
	cr_assert_str_eq(str(l1, "type"), type);
	cr_assert(json_is_object(json_object_get(l1, "fields")));
	cr_assert_str_eq(str(l2, "direction"), "recv");
	cr_assert_str_eq(str(l2, "socket"), "state.sync");
	cr_assert_str_eq(str(l2, "type"), "undecodable");
	cr_assert_str_eq(str(l2, "hex"), "c100ff");
	cr_assert_eq(json_integer_value(json_object_get(l2, "bytes")), 3);
	cr_assert_str_eq(str(l3, "time"), "2025-11-22T22:22:03.000003Z");
	cr_assert_eq(wait_exit(), 0);
	cr_assert_null(next_line(100), "printed more than --count lines");
	json_decref(l1);
	json_decref(l2);
	json_decref(l3);
	zmq_close(xpub);
}

Test(tap_e2e, type_filter_prints_only_matching_messages)
{
	static const uint8_t garbage[] = { 0xc1 };
	void *xpub = bind_tap("kanna-scheduler");
	uint8_t *heartbeat, *hello;
	size_t heartbeat_size, hello_size;
	const char *type;

	spawn_tap((const char *[]){ "--type", "hello", "--type", "undecodable", "--count", "2", NULL });
	cr_assert(subscribed(xpub, WAIT_MSEC));
	cr_assert_eq(tap_test_payload(0, &heartbeat, &heartbeat_size, &type), 0);
	cr_assert_eq(tap_test_payload(1, &hello, &hello_size, &type), 0);
	send_tap(xpub, "recv state.pub 1", heartbeat, heartbeat_size);
	send_tap(xpub, "send plans 2", hello, hello_size);
	send_tap(xpub, "recv state.pub 3", heartbeat, heartbeat_size);
	send_tap(xpub, "send plans 4", garbage, sizeof(garbage));
	free(heartbeat);
	free(hello);

	json_t *l1 = next_line(WAIT_MSEC), *l2 = next_line(WAIT_MSEC);
	cr_assert(l1 && l2);
	cr_assert_str_eq(str(l1, "type"), "hello");
	cr_assert_str_eq(str(l1, "time"), "1970-01-01T00:00:00.000002Z");
	cr_assert_str_eq(str(l2, "type"), "undecodable");
	cr_assert_str_eq(str(l2, "time"), "1970-01-01T00:00:00.000004Z");
	cr_assert_eq(wait_exit(), 0);
	json_decref(l1);
	json_decref(l2);
	zmq_close(xpub);
}

Test(tap_e2e, process_filter_never_attaches_to_other_processes)
{
	static const uint8_t garbage[] = { 0xc1 };
	void *watcher = bind_tap("kanna-watcher");
	void *launcher = bind_tap("kanna-launcher");

	spawn_tap((const char *[]){ "--process", "kanna-launcher", "--count", "1", NULL });
	cr_assert(subscribed(launcher, WAIT_MSEC));
	/* The watcher's tap stays unattached: it costs the watcher nothing. */
	cr_assert_not(subscribed(watcher, 1500));
	send_tap(watcher, "send state.pub 1", garbage, 1);
	send_tap(launcher, "send results.pub 2", garbage, 1);
	json_t *l = next_line(WAIT_MSEC);
	cr_assert(l);
	cr_assert_str_eq(str(l, "process"), "kanna-launcher");
	cr_assert_eq(wait_exit(), 0);
	json_decref(l);
	zmq_close(watcher);
	zmq_close(launcher);
}

Test(tap_e2e, picks_up_a_daemon_started_after_kanna_tap)
{
	static const uint8_t garbage[] = { 0xc1 };

	spawn_tap((const char *[]){ "--count", "1", NULL });
	nanosleep(&(struct timespec){ .tv_nsec = 300 * 1000000 }, NULL);
	void *xpub = bind_tap("kanna-reaper");
	cr_assert(subscribed(xpub, WAIT_MSEC), "rescan did not find the new tap");
	send_tap(xpub, "send launch 7", garbage, 1);
	json_t *l = next_line(WAIT_MSEC);
	cr_assert(l);
	cr_assert_str_eq(str(l, "process"), "kanna-reaper");
	cr_assert_eq(wait_exit(), 0);
	json_decref(l);
	zmq_close(xpub);
}

Test(tap_e2e, finds_the_runtime_directory_through_kanna_runtime_dir)
{
	static const uint8_t garbage[] = { 0xc1 };
	void *xpub = bind_tap("kanna-watcher");

	t.dir_from_env = true;
	spawn_tap((const char *[]){ "--count", "1", NULL });
	cr_assert(subscribed(xpub, WAIT_MSEC));
	send_tap(xpub, "send state.pub 1", garbage, 1);
	json_t *l = next_line(WAIT_MSEC);
	cr_assert(l);
	cr_assert_str_eq(str(l, "process"), "kanna-watcher");
	cr_assert_eq(wait_exit(), 0);
	json_decref(l);
	zmq_close(xpub);
}

Test(tap_e2e, exits_zero_when_the_reader_goes_away)
{
	static const uint8_t garbage[] = { 0xc1 };
	void *xpub = bind_tap("kanna-watcher");

	spawn_tap(NULL);
	cr_assert(subscribed(xpub, WAIT_MSEC));
	send_tap(xpub, "send state.pub 1", garbage, 1);
	json_t *l = next_line(WAIT_MSEC);
	cr_assert(l);
	json_decref(l);
	close(t.out); /* like "kanna-tap | head -1" */
	t.out = -1;
	send_tap(xpub, "send state.pub 2", garbage, 1);
	cr_assert_eq(wait_exit(), 0);
	zmq_close(xpub);
}

Test(tap_e2e, bad_arguments_fail_with_a_clear_message)
{
	spawn_tap((const char *[]){ "--count", "zero", NULL });
	cr_assert_eq(wait_exit(), 1);
	cr_assert(strstr(read_stderr(), "Failed to parse --count 'zero': expected a positive integer"));

	spawn_tap((const char *[]){ "--bogus", NULL });
	cr_assert_eq(wait_exit(), 1);
	cr_assert(strstr(read_stderr(), "Failed to parse arguments: unknown option --bogus"));

	spawn_tap((const char *[]){ "--runtime-dir", "/nonexistent-kanna-dir", NULL });
	cr_assert_eq(wait_exit(), 1);
	cr_assert(strstr(read_stderr(),
			 "Failed to open runtime directory /nonexistent-kanna-dir: No such file or directory"));
}

Test(tap_e2e, help_prints_usage_and_exits_zero)
{
	spawn_tap((const char *[]){ "--help", NULL });
	cr_assert_eq(wait_exit(), 0);
	ssize_t n = read(t.out, t.buf, sizeof(t.buf) - 1);
	cr_assert_gt(n, 0);
	t.buf[n] = '\0';
	cr_assert(strstr(t.buf, "Usage: kanna-tap"));
	cr_assert(strstr(t.buf, "--count=N"));
	cr_assert(strstr(t.buf, "--show-user-data"));
}

Test(tap_e2e, redacts_nodeclass_user_data_unless_show_user_data_is_given)
{
	/* A tap per run: an XPUB passes a repeated subscription on only once. */
	static const char *const runs[][6] = {
		{ "--process", "kanna-watcher", "--count", "1", NULL },
		{ "--process", "kanna-watcher-2", "--show-user-data", "--count", "1", NULL },
	};
	static const char *const want[] = { SECRET_USER_DATA_REDACTED, SECRET_USER_DATA };
	uint8_t *payload;
	size_t size;

	cr_assert_eq(nodeclass_payload(PROTO_MSG_STATE_DELTA, SECRET_USER_DATA, &payload, &size), 0);
	for (size_t i = 0; i < 2; i++) {
		void *xpub = bind_tap(runs[i][1]);
		spawn_tap((const char *const *)runs[i]);
		cr_assert(subscribed(xpub, WAIT_MSEC), "run %zu: kanna-tap never subscribed", i);
		send_tap(xpub, "send state.pub 1", payload, size);
		json_t *l = next_line(WAIT_MSEC);
		cr_assert(l, "run %zu: no line", i);
		cr_expect_str_eq(str_or_missing(user_data_of(l)), want[i], "run %zu", i);
		cr_assert_eq(wait_exit(), 0);
		json_decref(l);
		zmq_close(xpub);
	}
	free(payload);
}

Test(tap_e2e, summary_with_count_prints_the_totals_of_exactly_count_messages)
{
	static const uint8_t garbage[] = { 0xc1, 0x00 };
	void *xpub = bind_tap("kanna-watcher");

	spawn_tap((const char *[]){ "--summary=1h", "--count", "2", "-o", "json", NULL });
	cr_assert(subscribed(xpub, WAIT_MSEC));
	for (int i = 0; i < 3; i++) /* the third is beyond --count */
		send_tap(xpub, "recv state.sync 1", garbage, sizeof(garbage));
	json_t *l = next_line(WAIT_MSEC);
	cr_assert(l, "no totals");
	cr_expect(json_is_true(json_object_get(l, "final")));
	cr_expect_eq(json_integer_value(json_object_get(l, "messages")), 2);
	cr_expect_eq(json_integer_value(json_object_get(l, "undecodable")), 2);
	json_t *row = json_array_get(json_object_get(l, "rows"), 0);
	cr_expect_str_eq(str(row, "process"), "kanna-watcher");
	cr_expect_str_eq(str(row, "socket"), "state.sync");
	cr_expect_eq(json_integer_value(json_object_get(row, "bytes")), 4);
	cr_assert_eq(wait_exit(), 0);
	json_decref(l);
	zmq_close(xpub);
}

/* A real daemon side: common/sock.h's tap, PUSH -> PULL through the loop. */
struct daemon_side {
	struct loop *loop;
	struct sock_ctx *ctx;
	struct sock *push, *pull;
	uint8_t *payload;
	size_t size;
	bool sent;
	int ticks;
};

static int on_pull_readable(struct sock *s, void *userdata)
{
	struct daemon_side *d = userdata;
	struct sock_msg msg;
	int r = sock_recv(s, &msg, ZMQ_DONTWAIT);
	if (r < 0)
		return r == -EAGAIN ? 0 : r;
	sock_msg_close(&msg);
	loop_exit(d->loop, 0);
	return 0;
}

/* Sends once kanna-tap is attached; gives up after WAIT_MSEC. */
static int on_tick(struct loop *loop, void *userdata)
{
	struct daemon_side *d = userdata;
	if (++d->ticks * 20 > WAIT_MSEC)
		loop_exit(loop, 2);
	else if (!d->sent && sock_ctx_tap_attached(d->ctx)) {
		d->sent = true;
		return sock_send(d->push, d->payload, d->size, 0);
	}
	return 0;
}

Test(tap_e2e, shows_what_a_daemon_sends_and_receives_through_common_sock)
{
	struct daemon_side d = { 0 };
	const char *type;

	cr_assert_eq(loop_new(&d.loop, "kanna-testd"), 0);
	cr_assert_eq(sock_ctx_new(&d.ctx, d.loop, "kanna-testd", t.dir), 0);
	cr_assert_eq(sock_new(&d.push, d.ctx, ZMQ_PUSH, "plans"), 0);
	cr_assert_eq(sock_new(&d.pull, d.ctx, ZMQ_PULL, "plans-in"), 0);
	cr_assert_eq(sock_bind(d.pull, "plans"), 0);
	cr_assert_eq(sock_connect(d.push, "plans"), 0);
	cr_assert_eq(sock_watch(d.pull, on_pull_readable, &d), 0);
	cr_assert_eq(tap_test_payload(1, &d.payload, &d.size, &type), 0);
	cr_assert_eq(loop_add_periodic(d.loop, "tick", 20 * 1000, on_tick, &d), 0);

	spawn_tap((const char *[]){ "--count", "2", NULL });
	cr_assert_eq(loop_run(d.loop), 0, "kanna-tap never attached or the message never arrived");

	json_t *l1 = next_line(WAIT_MSEC), *l2 = next_line(WAIT_MSEC);
	cr_assert(l1 && l2);
	cr_assert_str_eq(str(l1, "process"), "kanna-testd");
	cr_assert_str_eq(str(l1, "direction"), "send");
	cr_assert_str_eq(str(l1, "socket"), "plans");
	cr_assert_str_eq(str(l1, "type"), "hello");
	cr_assert_str_eq(str(l2, "direction"), "recv");
	cr_assert_str_eq(str(l2, "socket"), "plans-in");
	cr_assert_str_eq(str(l2, "type"), "hello");
	cr_assert_eq(wait_exit(), 0);
	json_decref(l1);
	json_decref(l2);
	free(d.payload);
	sock_free(d.push);
	sock_free(d.pull);
	sock_ctx_free(d.ctx);
	loop_free(d.loop);
}
