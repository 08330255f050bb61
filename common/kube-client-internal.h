/*
 * Shared between kube-client.c (requests) and kube-watch.c (LIST+WATCH);
 * nothing else includes this.
 */
#ifndef KANNA_COMMON_KUBE_CLIENT_INTERNAL_H
#define KANNA_COMMON_KUBE_CLIENT_INTERNAL_H

#include <curl/curl.h>
#include <stdbool.h>

#include "common/json-arena.h"
#include "common/kube-client.h"
#include "common/ratelimit.h"

struct kube_req;

struct kube_client {
	struct loop *loop;
	struct kube_config *cfg;
	char *user_agent;
	struct ratelimit limit;
	/* Events are written at the same rate but from their own bucket, as
	 * client-go's event broadcaster (its own clientset) does: a burst of
	 * Events never delays the writes the controllers depend on. */
	struct ratelimit events_limit;
	struct ratelimit bulk_limit; /* kube_request_bulk()'s, at the same rate */
	uint64_t rng;
	bool plain_http; /* allowed http:// server: no credential ever goes there */
	struct kube_req *requests; /* every live request, for kube_client_free() */
	/* KUBE_CLIENT_MAX_IN_FLIGHT: requests running, those waiting (FIFO,
	 * bulk ones after the others: waiting_urgent_tail is the last of the
	 * others, or NULL) and the timer that starts the next from the loop. */
	unsigned in_flight;
	struct kube_req *waiting_head, *waiting_tail, *waiting_urgent_tail;
	sd_event_source *waiting_timer;
	struct json_arena pages;   /* the LIST item being delivered (kube-watch.c) */
};

struct kube_req {
	struct kube_client *client;
	struct ratelimit *limit; /* the client's, or its events bucket */
	struct kube_req *prev, *next;
	char *method, *path, *content_type, *request_body;
	CURL *easy;
	struct curl_slist *headers, *connect_to;
	sd_event_source *timer;
	char *body;
	size_t body_len, body_cap;
	char *error;
	char curl_error[CURL_ERROR_SIZE]; /* why the transfer failed, in curl's words */
	unsigned attempt;
	bool running, limited, freeing;
	bool in_flight; /* holds one of the client's KUBE_CLIENT_MAX_IN_FLIGHT */
	bool waiting;	/* in the client's waiting queue */
	bool bulk;	/* kube_request_bulk(): waits behind the others */
	struct kube_req *waiting_next;
	bool awaiting_credential; /* parked until the exec plugin's run ends */
	bool repeatable; /* a POST or PATCH safe to retry like a GET */
	/* A LIST page: a 2xx body reaches done() as text (resp.text), which
	 * parses what it needs a piece at a time (kube-watch.c); error bodies
	 * are parsed as usual. */
	bool body_raw;
	kube_done_fn done;
	void *userdata;
	bool owns_userdata; /* kube_request_owned(): free()d with the request */
	/* Streaming (watch): bytes go to on_chunk; the end to on_stream_end. */
	int (*on_chunk)(struct kube_req *req, const char *data, size_t len);
	void (*on_stream_end)(struct kube_req *req, CURLcode result, long status);
	void *stream_userdata;
};

int kube_req_new(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const char *body, struct kube_req **ret);
int kube_req_start(struct kube_req *req);
/*
 * kube_request() for Event writes: paced by the client's events bucket, and
 * retried on 5xx and transport errors like a GET, because they are safe to
 * repeat (a create names its Event, so a second one is answered 409; an
 * update sets absolute values). *ret is the request until done() has
 * returned, for kube_req_free() to cancel it.
 */
int kube_request_event(struct kube_client *c, const char *method, const char *path,
		       const char *content_type, const char *body, kube_done_fn done,
		       void *userdata, struct kube_req **ret);
void kube_req_free(struct kube_req *req);
/* Why a transfer failed: curl's error buffer (the TLS library's reason),
 * else the request's own error, else curl's generic text for result. */
const char *kube_req_transport_error(const struct kube_req *req, CURLcode result);
uint64_t kube_client_random(struct kube_client *c);

#endif
