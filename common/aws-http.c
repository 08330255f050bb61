/*
 * Blocking HTTP for the credential sources and IMDS (common/aws-internal.h):
 * curl easy handles with short named timeouts and a bounded body. Only the
 * credential chain and region lookup call it, at start or on refresh;
 * API calls never go through here (they run on the event loop).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/aws-internal.h"

struct fetch_buffer {
	char *data;
	size_t len;
	bool too_big;
};

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct fetch_buffer *b = userdata;
	size_t n = size * nmemb;
	char *d;

	if (b->len + n > AWS_CREDENTIALS_MAX_BODY) {
		b->too_big = true;
		return 0;
	}
	d = realloc(b->data, b->len + n + 1);
	if (!d)
		return 0;
	memcpy(d + b->len, ptr, n);
	b->len += n;
	d[b->len] = '\0';
	b->data = d;
	return n;
}

void aws_set_why(char **ret_why, const char *fmt, ...)
{
	va_list ap;

	if (!ret_why)
		return;
	free(*ret_why);
	*ret_why = NULL;
	va_start(ap, fmt);
	if (vasprintf(ret_why, fmt, ap) < 0)
		*ret_why = NULL;
	va_end(ap);
}

bool aws_env_true(const char *name)
{
	const char *v = getenv(name);

	return v && (strcasecmp(v, "true") == 0 || streq(v, "1") || strcasecmp(v, "yes") == 0);
}

bool aws_host_is_loopback(const char *host)
{
	char v6[INET6_ADDRSTRLEN];
	struct in6_addr a6;
	struct in_addr a4;
	size_t n = host ? strlen(host) : 0;

	if (n == 0)
		return false;
	if (strcasecmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (n < 3 || host[0] != '[' || host[n - 1] != ']' || n - 2 >= sizeof(v6))
		return false;
	memcpy(v6, host + 1, n - 2);
	v6[n - 2] = '\0';
	return inet_pton(AF_INET6, v6, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

int aws_curl_set_ca_bundle(CURL *easy)
{
	const char *bundle = getenv("AWS_CA_BUNDLE");

	if (!bundle || !*bundle)
		return 0;
	return curl_easy_setopt(easy, CURLOPT_CAINFO, bundle) == CURLE_OK ? 0 : -ENOMEM;
}

int aws_http_fetch(const char *method, const char *url, struct curl_slist *headers,
		   const char *body, long timeout_ms, long *ret_status, char **ret_body,
		   size_t *ret_len, char **ret_why)
{
	struct fetch_buffer b = { 0 };
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *easy;
	CURLcode cr;
	long status = 0;

	easy = curl_easy_init();
	if (!easy)
		return -ENOMEM;
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_NOPROXY, "169.254.169.254,169.254.170.2,127.0.0.1,localhost,::1");
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
	if (aws_curl_set_ca_bundle(easy) < 0) {
		curl_easy_cleanup(easy);
		return -ENOMEM;
	}
	if (body) {
		curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	} else if (streq(method, "PUT")) {
		curl_easy_setopt(easy, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, 0L);
	}
	cr = curl_easy_perform(easy);
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(easy);
	if (cr != CURLE_OK) {
		free(b.data);
		if (b.too_big) {
			aws_set_why(ret_why, "%s answered more than %d bytes", url, AWS_CREDENTIALS_MAX_BODY);
			return -E2BIG;
		}
		aws_set_why(ret_why, "%s: %s", url, *errbuf ? errbuf : curl_easy_strerror(cr));
		return cr == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
	}
	if (!b.data) {
		b.data = strdup("");
		if (!b.data)
			return -ENOMEM;
	}
	*ret_status = status;
	*ret_body = b.data;
	if (ret_len)
		*ret_len = b.len;
	return 0;
}

int aws_imds_endpoint(char **ret, char **ret_why)
{
	const char *e = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	size_t len;

	if (aws_env_true("AWS_EC2_METADATA_DISABLED")) {
		aws_set_why(ret_why, "disabled by AWS_EC2_METADATA_DISABLED");
		return -ENOENT;
	}
	if (!e || !*e)
		e = AWS_IMDS_DEFAULT_ENDPOINT;
	*ret = strdup(e);
	if (!*ret)
		return -ENOMEM;
	len = strlen(*ret);
	while (len > 0 && (*ret)[len - 1] == '/')
		(*ret)[--len] = '\0';
	return 0;
}

int aws_imds_get(const char *endpoint, const char *path, long timeout_ms,
		 char **ret_body, char **ret_why)
{
	_cleanup_free_ char *url = NULL, *token = NULL, *auth = NULL, *body = NULL;
	struct curl_slist *headers = NULL, *h;
	char ttl[64];
	long status = 0;
	int r;

	/* IMDSv2: PUT a session token, then send it with every GET */
	if (asprintf(&url, "%s/latest/api/token", endpoint) < 0)
		return -ENOMEM;
	snprintf(ttl, sizeof(ttl), "X-aws-ec2-metadata-token-ttl-seconds: %d", AWS_IMDS_TOKEN_TTL_SEC);
	headers = curl_slist_append(NULL, ttl);
	if (!headers)
		return -ENOMEM;
	r = aws_http_fetch("PUT", url, headers, NULL, timeout_ms, &status, &token, NULL, ret_why);
	curl_slist_free_all(headers);
	if (r < 0)
		return r;
	if (status != 200 || !*token) {
		aws_set_why(ret_why, "IMDSv2 token request to %s answered HTTP %ld", url, status);
		return -EACCES;
	}
	free(url);
	url = NULL;
	if (asprintf(&url, "%s%s", endpoint, path) < 0 ||
	    asprintf(&auth, "X-aws-ec2-metadata-token: %s", token) < 0)
		return -ENOMEM;
	h = curl_slist_append(NULL, auth);
	if (!h)
		return -ENOMEM;
	r = aws_http_fetch("GET", url, h, NULL, timeout_ms, &status, &body, NULL, ret_why);
	curl_slist_free_all(h);
	if (r < 0)
		return r;
	if (status != 200) {
		aws_set_why(ret_why, "%s answered HTTP %ld", url, status);
		return status == 404 ? -ENOENT : -EACCES;
	}
	*ret_body = TAKE_PTR(body);
	return 0;
}
