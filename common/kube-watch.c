/*
 * LIST + WATCH of one collection (see kube-client.h), client-go's reflector
 * in small: a paged LIST (limit/continue) delivers every object and the
 * collection's resourceVersion; a WATCH from that version streams
 * newline-delimited JSON events with bookmarks. A stream that ends is
 * resumed from the last version seen; 410 Gone (as a status or an ERROR
 * event) relists; failures back off with jitter; 404 Not Found means the
 * collection is not served and stops the watch (on_absent). The consumer's
 * copy is level-triggered: after a relist it is replaced, never patched by
 * guess.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kube-client-internal.h"

struct kube_watch {
	struct kube_client *client;
	char *collection;
	char *selector_query; /* "&labelSelector=…" or "" */
	struct kube_watch_handlers h;
	char *resource_version;
	struct kube_req *req;
	sd_event_source *retry_timer;
	char *line;
	size_t line_len, line_cap;
	bool gone, aborted_on_error;
	long stream_status;
	unsigned failures;
	struct kube_watch_stats stats;
};

static int watch_list(struct kube_watch *w, const char *continue_token);
static int watch_stream(struct kube_watch *w);

static void watch_error(struct kube_watch *w, const char *fmt, ...) _printf_(2, 3);

static void watch_error(struct kube_watch *w, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	w->stats.errors++;
	if (!w->h.on_error)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	w->h.on_error(buf, w->h.userdata);
}

static int set_resource_version(struct kube_watch *w, const char *rv)
{
	char *copy;

	if (!rv || !*rv)
		return 0;
	copy = strdup(rv);
	if (!copy)
		return -ENOMEM;
	free(w->resource_version);
	w->resource_version = copy;
	return 0;
}

static int on_retry(struct loop *loop, void *userdata)
{
	struct kube_watch *w = userdata;

	(void)loop;
	w->retry_timer = sd_event_source_disable_unref(w->retry_timer);
	return w->resource_version ? watch_stream(w) : watch_list(w, NULL);
}

/* After a failure: try again after a jittered, growing delay. */
static void watch_retry_later(struct kube_watch *w)
{
	uint64_t delay = kube_backoff_usec(w->failures, kube_client_random(w->client));

	w->failures++;
	if (loop_add_timer(w->client->loop, delay, on_retry, w, &w->retry_timer) < 0)
		watch_error(w, "failed to schedule a retry");
}

/* 404: not served. The watch stops here; the consumer decides when to look
 * again. Returns true when the consumer takes 404s (it was told). */
static bool watch_absent(struct kube_watch *w)
{
	if (!w->h.on_absent)
		return false;
	w->stats.absent++;
	free(w->resource_version);
	w->resource_version = NULL;
	w->h.on_absent(w->h.userdata);
	return true;
}

/*
 * A LIST page is read a value at a time with jansson: json_loadb() with
 * JSON_DISABLE_EOF_CHECK parses one value and says in error.position where
 * it ended, so the page's members are parsed one by one and its items
 * element by element, each item into the client's arena, delivered and
 * dropped. Only one item's tree exists at a time: a whole page's tree is
 * ~10x its text (30 MB for 5,000 pods). Only the punctuation between the
 * values ({ : , [ ] }) and whitespace is read here.
 *
 * Items go out as they are read, so a page found malformed after some of
 * them has delivered those (complete objects the server sent) before it is
 * retried; the retry relists, and the relist settles the rest. Should a
 * page name "items" twice, the first list is delivered (a parsed tree would
 * keep the last; no API server sends that).
 */
struct page_reader {
	struct kube_watch *w;
	const char *text;
	size_t len, pos;
	json_t *meta;       /* the page's metadata, once read */
	bool asked_next;    /* the next page is requested */
	bool items_read;
	json_error_t err;
};

static void page_skip_ws(struct page_reader *pr)
{
	while (pr->pos < pr->len && (pr->text[pr->pos] == ' ' || pr->text[pr->pos] == '\t' ||
				     pr->text[pr->pos] == '\r' || pr->text[pr->pos] == '\n'))
		pr->pos++;
}

/* Takes c (after whitespace) if it comes next. */
static bool page_take(struct page_reader *pr, char c)
{
	page_skip_ws(pr);
	if (pr->pos >= pr->len || pr->text[pr->pos] != c)
		return false;
	pr->pos++;
	return true;
}

/* The next value, into ja when given; NULL with pr->err set if malformed. */
static json_t *page_value(struct page_reader *pr, struct json_arena *ja)
{
	const size_t flags = JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK;
	const char *at;
	size_t left;
	json_t *v;

	page_skip_ws(pr);
	at = pr->text + pr->pos;
	left = pr->len - pr->pos;
	v = ja ? json_arena_load(ja, at, left, flags, &pr->err) : json_loadb(at, left, flags, &pr->err);
	if (v)
		pr->pos += (size_t)pr->err.position;
	return v;
}

static int page_fail(struct page_reader *pr, const char *what)
{
	snprintf(pr->err.text, sizeof(pr->err.text), "%s at byte %zu", what, pr->pos);
	return -EBADMSG;
}

/* Asks for the page after this one, once its continue token is known. */
static int page_ask_next(struct page_reader *pr)
{
	const char *cont = json_string_value(json_object_get(pr->meta, "continue"));

	if (pr->asked_next || !cont || !*cont)
		return 0;
	pr->asked_next = true;
	return watch_list(pr->w, cont);
}

static int page_read_items(struct page_reader *pr)
{
	struct kube_watch *w = pr->w;
	json_t *item;
	int r;

	/* Ask for the next page first: the server prepares it while we decode
	 * this one (pages still arrive, and are delivered, in order). */
	if ((r = page_ask_next(pr)) < 0)
		return r;
	pr->items_read = true;
	if (page_take(pr, ']'))
		return 0;
	do {
		item = page_value(pr, &w->client->pages);
		if (!item)
			return -EBADMSG;
		w->stats.events++;
		w->h.on_event(KUBE_EVENT_ADDED, item, w->h.userdata);
		json_arena_release(&w->client->pages, item);
	} while (page_take(pr, ','));
	return page_take(pr, ']') ? 0 : page_fail(pr, "',' or ']' expected");
}

static int page_read(struct page_reader *pr)
{
	json_t *key, *v;
	int r;

	if (!page_take(pr, '{'))
		return page_fail(pr, "not an object");
	if (page_take(pr, '}'))
		goto end;
	do {
		if (!(key = page_value(pr, NULL)))
			return -EBADMSG;
		r = json_is_string(key) ? 0 : page_fail(pr, "a key expected");
		if (r >= 0 && !page_take(pr, ':'))
			r = page_fail(pr, "':' expected");
		if (r >= 0 && streq(json_string_value(key), "items") && !pr->items_read &&
		    page_take(pr, '[')) {
			r = page_read_items(pr);
		} else if (r >= 0) {
			v = page_value(pr, NULL);
			if (!v) {
				r = -EBADMSG;
			} else if (streq(json_string_value(key), "metadata")) {
				json_decref(pr->meta);
				pr->meta = v;
			} else {
				json_decref(v);
			}
		}
		json_decref(key);
		if (r < 0)
			return r;
	} while (page_take(pr, ','));
	if (!page_take(pr, '}'))
		return page_fail(pr, "',' or '}' expected");
end:
	page_skip_ws(pr);
	return pr->pos == pr->len ? 0 : page_fail(pr, "end of text expected");
}

static void on_list_page(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct kube_watch *w = userdata;
	struct page_reader pr = { .w = w, .text = resp->text, .len = resp->text_len };
	const char *cont;
	int r;

	(void)c;
	w->req = NULL; /* freed by the client after this returns */
	if (resp->status == 410) {
		/* The continue token expired mid-list: start the list again. */
		w->stats.gone++;
		free(w->resource_version);
		w->resource_version = NULL;
		watch_retry_later(w);
		return;
	}
	if (resp->status == 404 && watch_absent(w))
		return;
	if (resp->status != 200 || !resp->text) {
		watch_error(w, "Failed to list %s: %s", w->collection,
			    resp->error ? resp->error : "unexpected response");
		free(w->resource_version);
		w->resource_version = NULL;
		watch_retry_later(w);
		return;
	}
	r = page_read(&pr);
	if (r >= 0)
		r = page_ask_next(&pr); /* metadata came after the items */
	if (r < 0) {
		watch_error(w, "Failed to list %s: %s", w->collection,
			    r == -EBADMSG ? pr.err.text : strerror(-r));
		json_decref(pr.meta);
		/* A next page asked for already is not wanted any more. */
		if (w->req)
			kube_req_free(w->req);
		w->req = NULL;
		free(w->resource_version);
		w->resource_version = NULL;
		watch_retry_later(w);
		return;
	}
	cont = json_string_value(json_object_get(pr.meta, "continue"));
	if (cont && *cont) {
		json_decref(pr.meta);
		return;
	}
	r = set_resource_version(w, json_string_value(json_object_get(pr.meta, "resourceVersion")));
	json_decref(pr.meta);
	if (r < 0 || !w->resource_version) {
		watch_error(w, "Failed to list %s: no resourceVersion in the list", w->collection);
		watch_retry_later(w);
		return;
	}
	w->failures = 0;
	if (w->h.on_synced)
		w->h.on_synced(w->resource_version, w->h.userdata);
	if (watch_stream(w) < 0)
		watch_retry_later(w);
}

static int watch_list(struct kube_watch *w, const char *continue_token)
{
	_cleanup_free_ char *path = NULL, *cont = NULL;
	struct kube_req *req;
	int r;

	if (continue_token) {
		cont = curl_easy_escape(NULL, continue_token, 0);
		if (!cont)
			return -ENOMEM;
	} else {
		w->stats.lists++;
		if (w->h.on_relist)
			w->h.on_relist(w->h.userdata);
	}
	if (asprintf(&path, "%s?limit=%d%s%s%s", w->collection, KUBE_LIST_PAGE_LIMIT,
		     w->selector_query, cont ? "&continue=" : "", cont ? cont : "") < 0)
		return -ENOMEM;
	r = kube_req_new(w->client, "GET", path, NULL, NULL, &req);
	if (r < 0)
		return r;
	req->done = on_list_page;
	req->userdata = w;
	req->body_raw = true; /* parsed an item at a time (on_list_page) */
	w->req = req;
	return kube_req_start(req);
}

static int handle_event_line(struct kube_watch *w, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *ev = json_loadb(line, len, 0, &jerr);
	const char *type;
	json_t *obj;
	int r = 0;

	if (!ev) {
		watch_error(w, "Failed to decode a watch event of %s: %s", w->collection, jerr.text);
		return -EBADMSG;
	}
	type = json_string_value(json_object_get(ev, "type"));
	obj = json_object_get(ev, "object");
	if (!type || !json_is_object(obj)) {
		watch_error(w, "Failed to decode a watch event of %s: no type or object", w->collection);
		r = -EBADMSG;
	} else if (streq(type, "ERROR")) {
		if (json_integer_value(json_object_get(obj, "code")) == 410)
			w->gone = true;
		else
			watch_error(w, "watch of %s: %s", w->collection,
				    json_string_value(json_object_get(obj, "message")) ?: "error event");
		r = -ECONNRESET;
	} else {
		const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"),
								   "resourceVersion"));
		enum kube_event_type t;

		if (streq(type, "BOOKMARK")) {
			w->stats.bookmarks++;
			r = set_resource_version(w, rv);
		} else {
			if (streq(type, "ADDED"))
				t = KUBE_EVENT_ADDED;
			else if (streq(type, "MODIFIED"))
				t = KUBE_EVENT_MODIFIED;
			else if (streq(type, "DELETED"))
				t = KUBE_EVENT_DELETED;
			else {
				watch_error(w, "watch of %s: unknown event type '%s'", w->collection, type);
				json_decref(ev);
				return -EBADMSG;
			}
			w->stats.events++;
			w->h.on_event(t, obj, w->h.userdata);
			r = set_resource_version(w, rv);
		}
	}
	json_decref(ev);
	return r;
}

static int on_watch_chunk(struct kube_req *req, const char *data, size_t len)
{
	struct kube_watch *w = req->stream_userdata;
	size_t start = 0;

	if (w->stream_status == 0)
		curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &w->stream_status);
	if (w->line_len + len > KUBE_WATCH_MAX_LINE) {
		watch_error(w, "watch of %s: event larger than %u bytes", w->collection,
			    KUBE_WATCH_MAX_LINE);
		return -EMSGSIZE;
	}
	if (w->line_len + len + 1 > w->line_cap) {
		size_t cap = MAX(w->line_cap * 2, w->line_len + len + 1);
		char *n = realloc(w->line, cap);
		if (!n)
			return -ENOMEM;
		w->line = n;
		w->line_cap = cap;
	}
	memcpy(w->line + w->line_len, data, len);
	w->line_len += len;
	if (w->stream_status != 200)
		return 0; /* an error Status body: kept for on_watch_end */
	for (size_t i = 0; i < w->line_len; i++) {
		if (w->line[i] != '\n')
			continue;
		if (i > start && handle_event_line(w, w->line + start, i - start) < 0) {
			w->aborted_on_error = true;
			return -ECONNRESET;
		}
		start = i + 1;
	}
	memmove(w->line, w->line + start, w->line_len - start);
	w->line_len -= start;
	return 0;
}

static void on_watch_end(struct kube_req *req, CURLcode result, long status)
{
	struct kube_watch *w = req->stream_userdata;
	bool gone = w->gone || status == 410;
	bool clean = result == CURLE_OK && status == 200 && !w->aborted_on_error;
	char why[512];

	snprintf(why, sizeof(why), "%s", result != CURLE_OK ? kube_req_transport_error(req, result) :
							      "unexpected HTTP status");
	w->req = NULL;
	kube_req_free(req);
	if (status == 404 && watch_absent(w))
		return;
	if (gone) {
		/* Our version is older than the server keeps: start over. */
		w->stats.gone++;
		free(w->resource_version);
		w->resource_version = NULL;
		if (watch_list(w, NULL) < 0)
			watch_retry_later(w);
		return;
	}
	if (clean) {
		/* The server closed the stream (timeoutSeconds): resume at once. */
		w->failures = 0;
		if (watch_stream(w) < 0)
			watch_retry_later(w);
		return;
	}
	if (!w->aborted_on_error)
		watch_error(w, "watch of %s ended: %s", w->collection, why);
	watch_retry_later(w);
}

static int watch_stream(struct kube_watch *w)
{
	_cleanup_free_ char *path = NULL, *rv = NULL;
	struct kube_req *req;
	int r;

	rv = curl_easy_escape(NULL, w->resource_version, 0);
	if (!rv)
		return -ENOMEM;
	if (asprintf(&path, "%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%d%s",
		     w->collection, rv, KUBE_WATCH_TIMEOUT_SEC, w->selector_query) < 0)
		return -ENOMEM;
	r = kube_req_new(w->client, "GET", path, NULL, NULL, &req);
	if (r < 0)
		return r;
	req->on_chunk = on_watch_chunk;
	req->on_stream_end = on_watch_end;
	req->stream_userdata = w;
	w->req = req;
	w->line_len = 0;
	w->gone = w->aborted_on_error = false;
	w->stream_status = 0;
	w->stats.watches++;
	return kube_req_start(req);
}

int kube_watch_start(struct kube_client *c, const char *collection_path,
		     const char *label_selector, const struct kube_watch_handlers *h,
		     struct kube_watch **ret)
{
	struct kube_watch *w;
	int r;

	if (!h || !h->on_event)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->client = c;
	w->h = *h;
	w->collection = strdup(collection_path);
	if (label_selector && *label_selector) {
		char *esc = curl_easy_escape(NULL, label_selector, 0);
		if (esc && asprintf(&w->selector_query, "&labelSelector=%s", esc) < 0)
			w->selector_query = NULL;
		curl_free(esc);
	} else {
		w->selector_query = strdup("");
	}
	if (!w->collection || !w->selector_query) {
		kube_watch_free(w);
		return -ENOMEM;
	}
	r = watch_list(w, NULL);
	if (r < 0) {
		kube_watch_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

struct kube_watch *kube_watch_free(struct kube_watch *w)
{
	if (!w)
		return NULL;
	if (w->req)
		kube_req_free(w->req);
	sd_event_source_disable_unref(w->retry_timer);
	free(w->collection);
	free(w->selector_query);
	free(w->resource_version);
	free(w->line);
	free(w);
	return NULL;
}

const char *kube_watch_resource_version(const struct kube_watch *w)
{
	return w->resource_version;
}

void kube_watch_get_stats(const struct kube_watch *w, struct kube_watch_stats *ret)
{
	*ret = w->stats;
}
