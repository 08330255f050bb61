/*
 * The Kubernetes API client every daemon uses: JSON requests over libcurl
 * on the event loop (TLS verified by default, HTTP/2 when offered, gzip),
 * retries with backoff on 429 (Retry-After honoured) and 5xx, and LIST+WATCH
 * streams (paged LIST, resourceVersion, bookmarks, 410 Gone → relist, cut
 * stream → resume) for the watcher's informers.
 */
#ifndef KANNA_COMMON_KUBE_CLIENT_H
#define KANNA_COMMON_KUBE_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/kubeconfig.h"
#include "common/loop.h"

/* client-go's defaults for a controller: Karpenter sets QPS 200, burst 300. */
#define KUBE_CLIENT_DEFAULT_QPS 200.0
#define KUBE_CLIENT_DEFAULT_BURST 300
/* A request that has not finished in this long failed (watches excepted). */
#define KUBE_REQUEST_TIMEOUT_SEC 60
/*
 * Requests (not watches) on the wire at once; the rest wait their turn in
 * order. A burst of the rate limiter (300) would otherwise open as many TLS
 * connections to an HTTP/1.1 server (~60 KiB each, kept in curl's cache
 * afterwards): 300 connections were 15 MB of the launcher's 52 MB peak
 * binding 1,000 pods. Over HTTP/2 they are streams of one connection, as
 * client-go's are; 32 in flight still far outruns the default 200 QPS.
 */
#define KUBE_CLIENT_MAX_IN_FLIGHT 32
/* Of those, bulk requests (kube_request_bulk()) leave this many to the
 * others, which also start before any bulk request waiting. */
#define KUBE_CLIENT_RESERVED_IN_FLIGHT 4
#define KUBE_CONNECT_TIMEOUT_SEC 10
/* Retries of 429/5xx/transport errors before the caller sees the failure. */
#define KUBE_REQUEST_MAX_ATTEMPTS 5
#define KUBE_BACKOFF_BASE_USEC (200ULL * 1000)
#define KUBE_BACKOFF_CAP_USEC (30ULL * 1000 * 1000)
/* Largest response body we accept (a LIST page of 500 big objects fits). */
#define KUBE_MAX_BODY_BYTES (256u * 1024 * 1024)
/*
 * LIST page size. client-go pages by 500; each page costs the server a
 * walk of its index (etcd range, or kanna-sim's tree), so for 100k objects
 * 500-item pages mean 200 walks. 5,000 keeps pages a few MB of JSON while
 * making the initial list ten times cheaper for the server.
 */
#define KUBE_LIST_PAGE_LIMIT 5000
/* Server-side watch timeout; the stream then ends and is resumed. */
#define KUBE_WATCH_TIMEOUT_SEC 300
/* Longest single watch event line we accept. */
#define KUBE_WATCH_MAX_LINE (64u * 1024 * 1024)

struct kube_client_options {
	double qps;          /* 0 → default */
	unsigned burst;      /* 0 → default */
	const char *user_agent;
	/* A plain http:// server is refused unless this is set, and then it
	 * gets no token, no client certificate and no exec plugin run. */
	bool allow_insecure_http;
};

struct kube_client;

/* Takes ownership of cfg (also on failure). -EPROTONOSUPPORT for a server
 * kube_config_check() refuses (call it first for the reason). */
int kube_client_new(struct kube_client **ret, struct loop *loop, struct kube_config *cfg,
		    const struct kube_client_options *opts);
struct kube_client *kube_client_free(struct kube_client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kube_client *, kube_client_free);
const struct kube_config *kube_client_config(const struct kube_client *c);

struct kube_response {
	long status;         /* HTTP status; 0 when the transport failed */
	json_t *body;        /* parsed JSON body, or NULL */
	const char *text;    /* a LIST page's 2xx body, unparsed (kube-watch.c reads it a */
	size_t text_len;     /* value at a time); body is NULL then */
	const char *error;   /* transport error or the Status message, or NULL */
	const char *reason;  /* Status reason (NotFound, Conflict…), or NULL */
};

typedef void (*kube_done_fn)(struct kube_client *c, const struct kube_response *resp,
			     void *userdata);

/*
 * Sends one request (path includes the query string, e.g.
 * "/api/v1/namespaces/default/pods?limit=500"). body may be NULL; it is
 * copied. content_type defaults to application/json. done() runs once from
 * the loop after retries are exhausted or the request succeeded (done may
 * be NULL: fire and forget).
 */
int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const char *body, kube_done_fn done, void *userdata);

/*
 * kube_request() for work that comes in thousands and may wait: paced by a
 * bucket of its own at the client's rate, and on the wire only while
 * KUBE_CLIENT_RESERVED_IN_FLIGHT places are left, after every other request
 * waiting. The launcher's pod bindings: the kube-scheduler's work in a
 * cluster, done by a client of its own there; 4,000 bindings queued ahead
 * of a NodeClaim's create held it back for seconds.
 */
int kube_request_bulk(struct kube_client *c, const char *method, const char *path,
		      const char *content_type, const char *body, kube_done_fn done,
		      void *userdata);

/*
 * kube_request() (bulk: kube_request_bulk()) whose userdata, from malloc(),
 * is the client's from this call on, even when it fails: freed after done()
 * returns, or with the request when it is cancelled — a request still in
 * flight when the client is freed calls nothing back, so a record that only
 * done() freed would be lost. done() must not free it.
 */
int kube_request_owned(struct kube_client *c, bool bulk, const char *method, const char *path,
		       const char *content_type, const char *body, kube_done_fn done,
		       void *userdata);

/* The loop the client runs its transfers on. */
struct loop *kube_client_loop(const struct kube_client *c);

/* ---- LIST + WATCH ------------------------------------------------------ */

enum kube_event_type {
	KUBE_EVENT_ADDED,
	KUBE_EVENT_MODIFIED,
	KUBE_EVENT_DELETED,
};

struct kube_watch_handlers {
	/*
	 * A full LIST starts (first start, or after 410 Gone): every object
	 * follows as ADDED; objects the consumer holds that do not come back
	 * before on_synced() are gone.
	 */
	void (*on_relist)(void *userdata);
	/* object is valid during the call only: keep no reference into it
	 * (json_incref included), as LIST pages are parsed into an arena. */
	void (*on_event)(enum kube_event_type type, json_t *object, void *userdata);
	/* The LIST finished; the consumer's copy equals the API's again. */
	void (*on_synced)(const char *resource_version, void *userdata);
	/* Something went wrong and will be retried (for logs and metrics). */
	void (*on_error)(const char *what, void *userdata);
	/*
	 * The collection answered 404 Not Found: the API server does not serve
	 * it (its CRD is not installed, or not at this version). The consumer's
	 * copy is empty and the watch has stopped; start a new one to look
	 * again. NULL: a 404 is retried like any other failure.
	 */
	void (*on_absent)(void *userdata);
	void *userdata;
};

struct kube_watch;

/*
 * Keeps a consumer's copy of one collection (e.g. "/api/v1/pods" or
 * "/apis/karpenter.sh/v1/nodepools") in step with the API for as long as
 * the watch lives. label_selector may be NULL.
 */
int kube_watch_start(struct kube_client *c, const char *collection_path,
		     const char *label_selector, const struct kube_watch_handlers *h,
		     struct kube_watch **ret);
struct kube_watch *kube_watch_free(struct kube_watch *w);
const char *kube_watch_resource_version(const struct kube_watch *w);
/* Counters for metrics and tests. */
struct kube_watch_stats {
	uint64_t lists, watches, events, bookmarks, gone, errors, absent;
};
void kube_watch_get_stats(const struct kube_watch *w, struct kube_watch_stats *ret);

/* Backoff for attempt n (0-based): full jitter in [0, min(cap, base·2^n)]. */
uint64_t kube_backoff_usec(unsigned attempt, uint64_t random_value);

#endif
