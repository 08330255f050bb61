/*
 * ZeroMQ sockets on the loop. ZMQ_FD is edge-triggered: it only says "look
 * at ZMQ_EVENTS", so after every wake-up (and after every send on the same
 * socket) we hand messages to the handler while ZMQ_EVENTS reports
 * ZMQ_POLLIN, at most LOOP_ZSOCK_DRAIN_MAX per turn, and re-arm a deferred
 * source for the rest so one busy peer cannot starve anything else.
 * Called by loop.h users and common/sock.c; never blocks on a socket.
 */
#include <errno.h>
#include <stdlib.h>

#include <zmq.h>

#include "common/log.h"
#include "common/loop-internal.h"

/* ---- ZeroMQ sockets ------------------------------------------------------ */

void loop_zsock_free(struct loop_zsock *z)
{
	sd_event_source_disable_unref(z->io);
	sd_event_source_disable_unref(z->more);
	free(z);
}

static struct loop_zsock *loop_find_zsock(struct loop *loop, void *zsock)
{
	for (struct loop_zsock *z = loop->zsocks; z; z = z->next)
		if (z->zsock == zsock && !z->removed)
			return z;
	return NULL;
}

static int zsock_has_input(void *zsock)
{
	int events = 0;
	size_t size = sizeof(events);

	/* Also processes ZeroMQ's pending commands and resets ZMQ_FD. */
	if (zmq_getsockopt(zsock, ZMQ_EVENTS, &events, &size) < 0)
		return -errno;
	return !!(events & ZMQ_POLLIN);
}

static void zsock_unlink(struct loop *loop, struct loop_zsock *z)
{
	for (struct loop_zsock **p = &loop->zsocks; *p; p = &(*p)->next)
		if (*p == z) {
			*p = z->next;
			return;
		}
}

/* Hands pending messages to the handler, at most LOOP_ZSOCK_DRAIN_MAX. */
static int zsock_drain(struct loop_zsock *z)
{
	int r = 0;

	z->dispatching = true;
	for (unsigned n = 0; !z->removed && !z->loop->exiting; n++) {
		r = zsock_has_input(z->zsock);
		if (r <= 0) {
			if (r < 0)
				log_error_errno(r, "Failed to poll a ZeroMQ socket: %m");
			break;
		}
		if (n == LOOP_ZSOCK_DRAIN_MAX) {
			r = sd_event_source_set_enabled(z->more, SD_EVENT_ONESHOT);
			if (r < 0)
				log_error_errno(r, "Failed to re-arm a busy ZeroMQ socket: %m");
			break;
		}
		r = z->fn(z->zsock, z->userdata);
		if (r < 0)
			log_warn_errno(r, "Failed to handle a message, dropped it: %m");
	}
	z->dispatching = false;
	if (z->removed) {
		zsock_unlink(z->loop, z);
		loop_zsock_free(z);
	}
	return 0;
}

static int on_zsock_io(sd_event_source *s, int fd, uint32_t revents,
		       void *userdata)
{
	return zsock_drain(userdata);
}

static int on_zsock_more(sd_event_source *s, void *userdata)
{
	return zsock_drain(userdata);
}

int loop_add_zsock(struct loop *loop, void *zsock, loop_zsock_fn on_readable,
		   void *userdata)
{
	struct loop_zsock *z;
	size_t size = sizeof(int);
	int fd, r;

	if (!zsock || !on_readable)
		return -EINVAL;
	if (loop_find_zsock(loop, zsock))
		return -EEXIST;
	if (zmq_getsockopt(zsock, ZMQ_FD, &fd, &size) < 0)
		return -errno;
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	*z = (struct loop_zsock){ .loop = loop, .zsock = zsock,
				  .fn = on_readable, .userdata = userdata };
	r = sd_event_add_io(loop->event, &z->io, fd, EPOLLIN, on_zsock_io, z);
	if (r >= 0)
		r = sd_event_add_defer(loop->event, &z->more, on_zsock_more, z);
	if (r >= 0)
		r = sd_event_source_set_priority(z->more,
						 LOOP_ZSOCK_CONTINUE_PRIORITY);
	/* Messages may already be queued: their edge has passed, so look now. */
	if (r >= 0)
		r = sd_event_source_set_enabled(z->more, SD_EVENT_ONESHOT);
	if (r < 0) {
		loop_zsock_free(z);
		return r;
	}
	z->next = loop->zsocks;
	loop->zsocks = z;
	return 0;
}

int loop_remove_zsock(struct loop *loop, void *zsock)
{
	struct loop_zsock *z = loop_find_zsock(loop, zsock);

	if (!z)
		return -ENOENT;
	if (z->dispatching) {
		/* zsock_drain() frees it when the handler returns. */
		z->removed = true;
		(void)sd_event_source_set_enabled(z->io, SD_EVENT_OFF);
		(void)sd_event_source_set_enabled(z->more, SD_EVENT_OFF);
		return 0;
	}
	zsock_unlink(loop, z);
	loop_zsock_free(z);
	return 0;
}

int loop_zsock_check(struct loop *loop, void *zsock)
{
	struct loop_zsock *z;
	int r;

	r = zsock_has_input(zsock);
	if (r <= 0)
		return r;
	z = loop_find_zsock(loop, zsock);
	if (!z)
		return -ENOENT;
	return sd_event_source_set_enabled(z->more, SD_EVENT_ONESHOT);
}

void loop_zsocks_free(struct loop *loop)
{
	while (loop->zsocks) {
		struct loop_zsock *z = loop->zsocks;

		loop->zsocks = z->next;
		loop_zsock_free(z);
	}
}
