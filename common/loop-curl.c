/*
 * libcurl's multi-socket API on the sd-event loop: curl tells us which
 * sockets to watch (CURLMOPT_SOCKETFUNCTION) and when to call it back
 * (CURLMOPT_TIMERFUNCTION); we map those onto sd-event io and time sources
 * and report finished transfers through loop_http_start()'s done(). The
 * HTTP clients (AWS, Kubernetes) call this; it never owns or frees an easy
 * handle and never calls curl_multi_* from inside a curl callback.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/loop-internal.h"
#include "common/loop.h"

struct loop_http {
	CURL *easy;
	loop_http_done_fn done;
	void *userdata;
	struct loop_http *next;
};

/* One socket curl asked us to watch. */
struct loop_curl_sock {
	sd_event_source *io;
	struct loop_curl_sock *prev, *next;
};

struct loop_curl {
	struct loop *loop;
	CURLM *multi;
	sd_event_source *timer;
	struct loop_http *transfers;
	unsigned n_transfers;
	struct loop_curl_sock *socks;
	bool global_init;
};

static int curlm_to_errno(CURLMcode code)
{
	switch (code) {
	case CURLM_OK:
		return 0;
	case CURLM_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLM_ADDED_ALREADY:
		return -EEXIST;
	case CURLM_BAD_HANDLE:
	case CURLM_BAD_EASY_HANDLE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static struct loop_http *loop_http_unlink(struct loop_curl *c, CURL *easy)
{
	for (struct loop_http **p = &c->transfers; *p; p = &(*p)->next) {
		struct loop_http *t = *p;

		if (t->easy == easy) {
			*p = t->next;
			c->n_transfers--;
			return t;
		}
	}
	return NULL;
}

/* Takes the transfer out of curl and tells its owner: exactly once. */
static void loop_http_finish(struct loop_curl *c, struct loop_http *t,
			     CURLcode result)
{
	CURLMcode mc = curl_multi_remove_handle(c->multi, t->easy);

	if (mc != CURLM_OK)
		log_warn("Failed to remove a finished HTTP transfer from curl: %s",
			 curl_multi_strerror(mc));
	t->done(t->easy, result, t->userdata);
	free(t);
}

static void loop_curl_collect_done(struct loop_curl *c)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(c->multi, &left))) {
		CURL *easy = msg->easy_handle;
		CURLcode result = msg->data.result;
		struct loop_http *t;

		if (msg->msg != CURLMSG_DONE)
			continue;
		t = loop_http_unlink(c, easy);
		if (t)
			loop_http_finish(c, t, result);
	}
}

static void loop_curl_action(struct loop_curl *c, curl_socket_t fd, int flags)
{
	int running;
	CURLMcode mc = curl_multi_socket_action(c->multi, fd, flags, &running);

	if (mc != CURLM_OK)
		log_error("Failed to drive HTTP transfers: %s", curl_multi_strerror(mc));
	loop_curl_collect_done(c);
}

static int on_curl_io(sd_event_source *s, int fd, uint32_t revents,
		      void *userdata)
{
	int flags = 0;

	if (revents & EPOLLIN)
		flags |= CURL_CSELECT_IN;
	if (revents & EPOLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (revents & (EPOLLERR | EPOLLHUP))
		flags |= CURL_CSELECT_ERR;
	loop_curl_action(userdata, fd, flags);
	return 0;
}

static int on_curl_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	loop_curl_action(userdata, CURL_SOCKET_TIMEOUT, 0);
	return 0;
}

static void loop_curl_sock_free(struct loop_curl *c, struct loop_curl_sock *cs)
{
	if (cs->prev)
		cs->prev->next = cs->next;
	else
		c->socks = cs->next;
	if (cs->next)
		cs->next->prev = cs->prev;
	sd_event_source_disable_unref(cs->io);
	free(cs);
}

static int loop_curl_sock_watch(struct loop_curl *c, curl_socket_t fd,
				uint32_t events, struct loop_curl_sock *cs)
{
	int r;

	if (cs) {
		r = sd_event_source_set_io_events(cs->io, events);
		if (r < 0)
			return r;
		return sd_event_source_set_enabled(cs->io, SD_EVENT_ON);
	}
	/*
	 * A source still on this fd number belongs to a socket curl closed
	 * without CURL_POLL_REMOVE: drop it now, before the new registration,
	 * so that its late removal cannot unregister the new socket.
	 */
	for (struct loop_curl_sock *stale = c->socks; stale; stale = stale->next)
		if (sd_event_source_get_io_fd(stale->io) == fd) {
			loop_curl_sock_free(c, stale);
			break;
		}
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	r = sd_event_add_io(loop_event(c->loop), &cs->io, fd, events, on_curl_io, c);
	if (r < 0) {
		free(cs);
		return r;
	}
	cs->next = c->socks;
	if (c->socks)
		c->socks->prev = cs;
	c->socks = cs;
	if (curl_multi_assign(c->multi, fd, cs) != CURLM_OK) {
		loop_curl_sock_free(c, cs);
		return -EIO;
	}
	return 0;
}

/* CURLMOPT_SOCKETFUNCTION */
static int curl_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp,
			  void *socketp)
{
	struct loop_curl *c = userp;
	struct loop_curl_sock *cs = socketp;
	uint32_t events = 0;
	int r;

	if (what == CURL_POLL_REMOVE) {
		if (cs) {
			loop_curl_sock_free(c, cs);
			(void)curl_multi_assign(c->multi, fd, NULL);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		events |= EPOLLOUT;
	r = loop_curl_sock_watch(c, fd, events, cs);
	if (r == -ESTALE)
		return 0; /* the loop has finished: transfers are being torn down */
	if (r < 0) {
		log_error_errno(r, "Failed to watch an HTTP connection: %m");
		return -1; /* curl fails this transfer */
	}
	return 0;
}

/* CURLMOPT_TIMERFUNCTION */
static int curl_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct loop_curl *c = userp;
	uint64_t usec;
	int r;

	if (timeout_ms < 0) {
		if (c->timer && sd_event_source_set_enabled(c->timer, SD_EVENT_OFF) < 0)
			return -1;
		return 0;
	}
	usec = (uint64_t)timeout_ms * 1000;
	if (!c->timer) {
		r = sd_event_add_time_relative(loop_event(c->loop), &c->timer,
					       CLOCK_MONOTONIC, usec, 1000,
					       on_curl_timer, c);
	} else {
		r = sd_event_source_set_time_relative(c->timer, usec);
		if (r >= 0)
			r = sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
	}
	if (r == -ESTALE)
		return 0; /* the loop has finished: transfers are being torn down */
	if (r < 0) {
		log_error_errno(r, "Failed to arm the HTTP timer: %m");
		return -1;
	}
	return 0;
}

int loop_curl_new(struct loop_curl **ret, struct loop *loop)
{
	struct loop_curl *c;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(c);
		return -EIO;
	}
	c->global_init = true;
	c->multi = curl_multi_init();
	if (!c->multi) {
		loop_curl_free(c);
		return -ENOMEM;
	}
	if (curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c) != CURLM_OK) {
		loop_curl_free(c);
		return -EIO;
	}
	*ret = c;
	return 0;
}

struct loop_curl *loop_curl_free(struct loop_curl *c)
{
	if (!c)
		return NULL;
	while (c->transfers)
		(void)loop_http_cancel(c->loop, c->transfers->easy);
	if (c->multi)
		curl_multi_cleanup(c->multi);
	while (c->socks)
		loop_curl_sock_free(c, c->socks);
	sd_event_source_disable_unref(c->timer);
	if (c->global_init)
		curl_global_cleanup();
	free(c);
	return NULL;
}

int loop_http_start(struct loop *loop, CURL *easy, loop_http_done_fn done,
		    void *userdata)
{
	struct loop_curl *c;
	struct loop_http *t;
	int r;

	if (!easy || !done)
		return -EINVAL;
	if ((r = loop_get_curl_started(loop, &c)) < 0)
		return r;
	for (t = c->transfers; t; t = t->next)
		if (t->easy == easy)
			return -EEXIST;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = (struct loop_http){ .easy = easy, .done = done, .userdata = userdata };
	/* curl answers through curl_timer_cb(): the transfer starts on the loop. */
	r = curlm_to_errno(curl_multi_add_handle(c->multi, easy));
	if (r < 0) {
		free(t);
		return r;
	}
	t->next = c->transfers;
	c->transfers = t;
	c->n_transfers++;
	return 0;
}

int loop_http_cancel(struct loop *loop, CURL *easy)
{
	struct loop_curl *c = loop_get_curl(loop);
	struct loop_http *t = c ? loop_http_unlink(c, easy) : NULL;

	if (!t)
		return -ENOENT;
	loop_http_finish(c, t, CURLE_ABORTED_BY_CALLBACK);
	return 0;
}

int loop_http_init(struct loop *loop)
{
	struct loop_curl *c;

	return loop_get_curl_started(loop, &c);
}

unsigned loop_http_running(const struct loop *loop)
{
	const struct loop_curl *c = loop_get_curl(loop);

	return c ? c->n_transfers : 0;
}
