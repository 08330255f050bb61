/*
 * peer-connect: a stranger knocking on a daemon's socket, for
 * tests/e2e/peer-trust.sh. Connects a PUSH socket to ipc://DIR/NAME.sock
 * and reports what the ZeroMQ handshake said: "admitted" (exit 0),
 * "refused" (the daemon's ZAP check said no; exit 3) or "no handshake"
 * within the timeout (exit 2: e.g. the socket's file mode kept us out).
 * With --hello ROLE, an admitted connection then says hello as ROLE, so
 * that the daemon's hello check (state/msg.c) can refuse the role.
 *
 *   peer-connect --runtime-dir DIR --socket NAME [--hello ROLE] [--timeout SEC]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sock.h"
#include "proto/proto.h"
#include "state/msg.h"

#define PEER_CONNECT_EVENTS                                                                    \
	(ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |                      \
	 ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
/* Time for the hello to leave before the socket closes. */
#define PEER_CONNECT_LINGER_MSEC 2000

/* The next handshake event on the monitor, 0 on timeout. */
static uint16_t next_event(void *monitor, int timeout_ms)
{
	zmq_pollitem_t item = { .socket = monitor, .events = ZMQ_POLLIN };
	zmq_msg_t frame;
	uint16_t event = 0;
	bool more = true;

	if (zmq_poll(&item, 1, timeout_ms) <= 0)
		return 0;
	for (bool head = true; more; head = false) {
		zmq_msg_init(&frame);
		if (zmq_msg_recv(&frame, monitor, 0) < 0)
			return 0;
		if (head && zmq_msg_size(&frame) >= sizeof(event))
			memcpy(&event, zmq_msg_data(&frame), sizeof(event));
		more = zmq_msg_more(&frame);
		zmq_msg_close(&frame);
	}
	return event;
}

static int role_by_name(const char *name)
{
	for (int p = 0; p < 32; p++)
		if (proto_process_name((enum proto_process)p) &&
		    streq(proto_process_name((enum proto_process)p), name))
			return p;
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "runtime-dir", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "hello", required_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 't' },
		{ 0 },
	};
	const char *dir = NULL, *name = NULL, *hello = NULL;
	int timeout_sec = 5, role = -1, c, linger = PEER_CONNECT_LINGER_MSEC;
	struct sock_ctx *ctx = NULL;
	struct sock *s = NULL;
	struct msg_io io;
	void *monitor;
	uint16_t event;

	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 's': name = optarg; break;
		case 'H': hello = optarg; break;
		case 't': timeout_sec = atoi(optarg); break;
		default: return 64;
		}
	}
	if (!dir || !name || (hello && (role = role_by_name(hello)) < 0)) {
		fprintf(stderr, "usage: peer-connect --runtime-dir DIR --socket NAME [--hello ROLE] "
				"[--timeout SEC]\n");
		return 64;
	}
	if (sock_ctx_new(&ctx, NULL, "peer-connect", dir) < 0 ||
	    sock_new(&s, ctx, ZMQ_PUSH, name) < 0 ||
	    zmq_setsockopt(sock_zsock(s), ZMQ_LINGER, &linger, sizeof(linger)) < 0 ||
	    zmq_socket_monitor(sock_zsock(s), "inproc://peer-connect-monitor", PEER_CONNECT_EVENTS) < 0 ||
	    !(monitor = zmq_socket(sock_ctx_zmq(ctx), ZMQ_PAIR)) ||
	    zmq_connect(monitor, "inproc://peer-connect-monitor") < 0 ||
	    sock_connect(s, name) < 0) {
		perror("peer-connect: failed to set up the connection");
		return 1;
	}
	event = next_event(monitor, timeout_sec * 1000);
	if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED && role >= 0) {
		if (msg_io_init(&io, (enum proto_process)role, 0) < 0 ||
		    msg_send_hello(&io, s, 0) < 0) {
			perror("peer-connect: failed to say hello");
			return 1;
		}
		msg_io_done(&io);
	}
	zmq_close(monitor);
	sock_free(s);
	sock_ctx_free(ctx);
	switch (event) {
	case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
		printf("admitted\n");
		return 0;
	case 0:
		printf("no handshake\n");
		return 2;
	default:
		printf("refused\n");
		return 3;
	}
}
