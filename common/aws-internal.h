/*
 * Private helpers shared by common/aws*.c: the blocking HTTP fetch the
 * credential sources use (short timeouts, only at start and on refresh)
 * and the IMDSv2 session. Not for use outside common/aws*.c.
 */
#ifndef KANNA_COMMON_AWS_INTERNAL_H
#define KANNA_COMMON_AWS_INTERNAL_H

#include <curl/curl.h>

#include "common/aws.h"

/*
 * One blocking HTTP exchange. body may be NULL (no request body). Fills
 * *ret_status and *ret_body (NUL-terminated, *ret_len bytes, at most
 * AWS_CREDENTIALS_MAX_BODY). On failure returns negative errno and, when
 * ret_why is not NULL, a short reason ("connection refused", ...).
 */
int aws_http_fetch(const char *method, const char *url, struct curl_slist *headers,
		   const char *body, long timeout_ms, long *ret_status, char **ret_body,
		   size_t *ret_len, char **ret_why);

/* IMDS base URL: $AWS_EC2_METADATA_SERVICE_ENDPOINT or the link-local one;
 * -ENOENT (with *ret_why) if AWS_EC2_METADATA_DISABLED is true. */
int aws_imds_endpoint(char **ret, char **ret_why);
/* GET path ("/latest/meta-data/...") with a fresh IMDSv2 token. */
int aws_imds_get(const char *endpoint, const char *path, long timeout_ms,
		 char **ret_body, char **ret_why);

/* strdup/asprintf into *ret_why, ignoring allocation failure (best effort text). */
void aws_set_why(char **ret_why, const char *fmt, ...) _printf_(2, 3);

/*
 * Runs aws_credentials_resolve(opts) on a worker thread; done() runs later
 * on the loop with its result (creds ownership passes to done; NULL on
 * failure, then why says why). aws_refresh_free() waits for the worker and
 * drops the result without calling done(); never call it from done().
 */
struct loop;
struct aws_refresh;
typedef void (*aws_refresh_done_fn)(int r, struct aws_credentials *creds, const char *why,
				    void *userdata);
int aws_refresh_start(struct loop *loop, const struct aws_credentials_options *opts,
		      aws_refresh_done_fn done, void *userdata, struct aws_refresh **ret);
void aws_refresh_free(struct aws_refresh *job);

/* Cleanup attributes for curl's URL API. */
static inline void curl_url_cleanupp(CURLU **u)
{
	curl_url_cleanup(*u);
}

static inline void curl_freep(char **p)
{
	curl_free(*p);
}

/* True for a URL host (as curl_url() gives it: IPv6 in brackets) that is
 * this machine: 127.0.0.0/8, [::1] or "localhost". */
bool aws_host_is_loopback(const char *host);
/* AWS_CA_BUNDLE, as the SDKs and the CLI honour it: the CA certificates
 * that verify every AWS endpoint (a proxy that re-signs TLS, a private
 * endpoint). Nothing set: curl's default store. */
int aws_curl_set_ca_bundle(CURL *easy);

/* True for "true"/"1"/"yes" (case-insensitive). */
bool aws_env_true(const char *name);

#endif
