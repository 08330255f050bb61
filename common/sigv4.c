/*
 * AWS Signature Version 4 on OpenSSL (HMAC-SHA256, SHA-256): the canonical
 * request (path normalisation and double encoding, sorted query, trimmed and
 * joined headers), string to sign, signing key, Authorization header and
 * presigned query, plus the server-side parse and verify kanna-sim uses.
 * Called by common/aws*.c and sim/. Pure: never reads the clock, the
 * environment or the network. Strings are built with open_memstream().
 * Cleanup style: _cleanup_ attributes.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "common/sigv4.h"
#include "common/util.h"

/* Path and query components never come close; bounds a hostile request. */
#define SIGV4_MAX_PATH_SEGMENTS 1024
#define SIGV4_MAX_QUERY_PARAMS 4096

static void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Finish a memstream into *ret; the caller's cleanup frees on failure. */
static int memstream_take(FILE **f, char **buf, char **ret)
{
	if (ferror(*f) || fclose(*f) != 0) {
		*f = NULL;
		return -ENOMEM;
	}
	*f = NULL;
	*ret = TAKE_PTR(*buf);
	return 0;
}

static bool is_unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * n] = '\0';
}

/* RFC 3986 encoding as AWS does it: unreserved kept, the rest %XX upper. */
static void uri_encode(FILE *f, const char *s, size_t n, bool keep_slash,
		       bool keep_escapes)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (is_unreserved(c) || (keep_slash && c == '/'))
			fputc(c, f);
		else if (keep_escapes && c == '%' && i + 2 < n &&
			 hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0)
			fputc(c, f);
		else
			fprintf(f, "%%%02X", c);
	}
}

int sigv4_sha256_hex(const void *data, size_t len, char out[65])
{
	uint8_t md[SHA256_DIGEST_LENGTH];

	if (!SHA256(data, len, md))
		return -EIO;
	hex_encode(md, sizeof(md), out);
	return 0;
}

int sigv4_format_amz_date(time_t t, char out[SIGV4_AMZ_DATE_LEN + 1])
{
	struct tm tm;

	if (!gmtime_r(&t, &tm))
		return -ERANGE;
	if (strftime(out, SIGV4_AMZ_DATE_LEN + 1, "%Y%m%dT%H%M%SZ", &tm) !=
	    SIGV4_AMZ_DATE_LEN)
		return -ERANGE;
	return 0;
}

int sigv4_parse_amz_date(const char *amz_date, time_t *ret)
{
	struct tm tm = { 0 };
	const char *end;

	if (!amz_date || strlen(amz_date) != SIGV4_AMZ_DATE_LEN)
		return -EINVAL;
	end = strptime(amz_date, "%Y%m%dT%H%M%SZ", &tm);
	if (!end || *end != '\0')
		return -EINVAL;
	*ret = timegm(&tm);
	return 0;
}

/* Canonical URI: remove "." / ".." / empty segments unless literal, then
 * encode every segment (which double-encodes an already-encoded path). */
static int write_canonical_path(FILE *f, const char *path, bool literal)
{
	const char *seg[SIGV4_MAX_PATH_SEGMENTS];
	size_t seglen[SIGV4_MAX_PATH_SEGMENTS];
	size_t n = 0, len;
	bool trailing;

	if (!path || !*path) {
		fputc('/', f);
		return 0;
	}
	if (literal) {
		uri_encode(f, path, strlen(path), true, true);
		return 0;
	}
	trailing = false;
	for (const char *p = path; *p;) {
		const char *slash = strchr(p, '/');

		len = slash ? (size_t)(slash - p) : strlen(p);
		trailing = slash != NULL;
		if (len == 0 || (len == 1 && p[0] == '.')) {
			trailing = true;
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (n > 0)
				n--;
			trailing = true;
		} else {
			if (n == SIGV4_MAX_PATH_SEGMENTS)
				return -E2BIG;
			seg[n] = p;
			seglen[n++] = len;
		}
		p += len + (slash ? 1 : 0);
	}
	for (size_t i = 0; i < n; i++) {
		fputc('/', f);
		uri_encode(f, seg[i], seglen[i], false, false);
	}
	if (n == 0 || trailing)
		fputc('/', f);
	return 0;
}

struct query_param {
	char *key; /* encoded */
	char *value; /* encoded */
};

static int query_param_compare(const void *a, const void *b)
{
	const struct query_param *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : strcmp(x->value, y->value);
}

/* Percent-decode s[0..n) and re-encode it the canonical way. */
static char *query_component_normalize(const char *s, size_t n)
{
	_cleanup_free_ char *raw = malloc(n + 1), *buf = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	size_t len = 0, size = 0;
	char *ret;

	if (!raw)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n &&
		    hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
			raw[len++] = (char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
			i += 2;
		} else {
			raw[len++] = s[i];
		}
	}
	f = open_memstream(&buf, &size);
	if (!f)
		return NULL;
	uri_encode(f, raw, len, false, false);
	if (memstream_take(&f, &buf, &ret) < 0)
		return NULL;
	return ret;
}

struct query_params {
	struct query_param *v;
	size_t n;
};

static void query_params_done(struct query_params *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].key);
		free(p->v[i].value);
	}
	free(p->v);
}

static int write_canonical_query(FILE *f, const char *query)
{
	_cleanup_(query_params_done) struct query_params params = { 0 };
	size_t cap = 1;

	if (!query || !*query)
		return 0;
	for (const char *p = query; *p; p++)
		cap += *p == '&';
	if (cap > SIGV4_MAX_QUERY_PARAMS)
		return -E2BIG;
	params.v = calloc(cap, sizeof(*params.v));
	if (!params.v)
		return -ENOMEM;
	for (const char *p = query; *p;) {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t klen = eq ? (size_t)(eq - p) : len;

		if (len > 0) {
			struct query_param *qp = &params.v[params.n++];

			qp->key = query_component_normalize(p, klen);
			qp->value = eq ? query_component_normalize(eq + 1, len - klen - 1) : strdup("");
			if (!qp->key || !qp->value)
				return -ENOMEM;
		}
		p += len + (amp ? 1 : 0);
	}
	qsort(params.v, params.n, sizeof(*params.v), query_param_compare);
	for (size_t i = 0; i < params.n; i++)
		fprintf(f, "%s%s=%s", i ? "&" : "", params.v[i].key, params.v[i].value);
	return 0;
}

/* Write "name:v1,v2\n" for one lowercase name: trimmed values, inner
 * whitespace runs collapsed, duplicates joined in request order. */
static int write_canonical_header(FILE *f, const struct sigv4_request *req,
				  const char *name, size_t name_len)
{
	bool found = false;

	fprintf(f, "%.*s:", (int)name_len, name);
	for (size_t i = 0; i < req->n_headers; i++) {
		const char *v = req->headers[i].value ? req->headers[i].value : "";
		bool pending_space = false;

		if (strlen(req->headers[i].name) != name_len ||
		    strncasecmp(req->headers[i].name, name, name_len) != 0)
			continue;
		if (found)
			fputc(',', f);
		found = true;
		while (is_space(*v))
			v++;
		for (; *v; v++) {
			if (is_space(*v)) {
				pending_space = true;
				continue;
			}
			if (pending_space)
				fputc(' ', f);
			pending_space = false;
			fputc(*v, f);
		}
	}
	fputc('\n', f);
	return found ? 0 : -ENOENT;
}

static int header_name_compare(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct name_list {
	char **v;
	size_t n;
};

static void name_list_done(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

int sigv4_signed_headers(const struct sigv4_request *req, char **ret)
{
	_cleanup_(name_list_done) struct name_list names = { 0 };
	_cleanup_free_ char *buf = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	size_t size = 0;

	names.v = calloc(req->n_headers + 1, sizeof(*names.v));
	if (!names.v)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_headers; i++) {
		char *name = strdup(req->headers[i].name);

		if (!name)
			return -ENOMEM;
		for (char *c = name; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		names.v[names.n++] = name;
	}
	qsort(names.v, names.n, sizeof(*names.v), header_name_compare);
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < names.n; i++)
		if (i == 0 || !streq(names.v[i], names.v[i - 1]))
			fprintf(f, "%s%s", i ? ";" : "", names.v[i]);
	return memstream_take(&f, &buf, ret);
}

int sigv4_canonical_request(const struct sigv4_request *req,
			    const char *signed_headers, char **ret)
{
	_cleanup_free_ char *all = NULL, *buf = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	size_t size = 0;
	int r;

	if (!req || !req->method || !req->payload_sha256_hex || !ret)
		return -EINVAL;
	if (!signed_headers) {
		r = sigv4_signed_headers(req, &all);
		if (r < 0)
			return r;
		signed_headers = all;
	}
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "%s\n", req->method);
	r = write_canonical_path(f, req->path, req->path_literal);
	if (r < 0)
		return r;
	fputc('\n', f);
	r = write_canonical_query(f, req->query);
	if (r < 0)
		return r;
	fputc('\n', f);
	for (const char *p = signed_headers; *p;) {
		const char *semi = strchr(p, ';');
		size_t len = semi ? (size_t)(semi - p) : strlen(p);

		if (len == 0)
			return -EINVAL;
		r = write_canonical_header(f, req, p, len);
		if (r < 0)
			return r;
		p += len + (semi ? 1 : 0);
	}
	fprintf(f, "\n%s\n%s", signed_headers, req->payload_sha256_hex);
	return memstream_take(&f, &buf, ret);
}

int sigv4_string_to_sign(const char *amz_date, const char *region,
			 const char *service, const char *canonical_request,
			 char **ret)
{
	char hash[65];
	int r;

	if (!amz_date || strlen(amz_date) != SIGV4_AMZ_DATE_LEN)
		return -EINVAL;
	r = sigv4_sha256_hex(canonical_request, strlen(canonical_request), hash);
	if (r < 0)
		return r;
	if (asprintf(ret, SIGV4_ALGORITHM "\n%s\n%.8s/%s/%s/" SIGV4_TERMINATOR "\n%s",
		     amz_date, amz_date, region, service, hash) < 0)
		return -ENOMEM;
	return 0;
}

static int hmac_sha256(const void *key, size_t key_len, const char *data,
		       uint8_t out[32])
{
	unsigned int len = 32;

	if (!HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)data,
		  strlen(data), out, &len) || len != 32)
		return -EIO;
	return 0;
}

int sigv4_signing_key(const char *secret_access_key, const char *date8,
		      const char *region, const char *service, uint8_t out[32])
{
	_cleanup_free_ char *k_secret = NULL;
	uint8_t k[32];
	int r;

	if (asprintf(&k_secret, "AWS4%s", secret_access_key) < 0)
		return -ENOMEM;
	r = hmac_sha256(k_secret, strlen(k_secret), date8, k);
	if (r >= 0)
		r = hmac_sha256(k, sizeof(k), region, k);
	if (r >= 0)
		r = hmac_sha256(k, sizeof(k), service, k);
	if (r >= 0)
		r = hmac_sha256(k, sizeof(k), SIGV4_TERMINATOR, out);
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(k_secret, strlen(k_secret));
	return r;
}

int sigv4_signature(const struct sigv4_request *req,
		    const char *signed_headers, const char *secret_access_key,
		    const char *amz_date, const char *region,
		    const char *service, char out_hex[65])
{
	_cleanup_free_ char *creq = NULL, *sts = NULL;
	uint8_t key[32], sig[32];
	char date8[9];
	int r;

	if (!secret_access_key || !amz_date || !region || !service)
		return -EINVAL;
	r = sigv4_canonical_request(req, signed_headers, &creq);
	if (r < 0)
		return r;
	r = sigv4_string_to_sign(amz_date, region, service, creq, &sts);
	if (r < 0)
		return r;
	memcpy(date8, amz_date, 8);
	date8[8] = '\0';
	r = sigv4_signing_key(secret_access_key, date8, region, service, key);
	if (r >= 0)
		r = hmac_sha256(key, sizeof(key), sts, sig);
	OPENSSL_cleanse(key, sizeof(key));
	if (r < 0)
		return r;
	hex_encode(sig, sizeof(sig), out_hex);
	return 0;
}

int sigv4_sign(const struct sigv4_request *req,
	       const struct sigv4_credentials *creds, const char *region,
	       const char *service, const char *amz_date,
	       char **ret_authorization)
{
	_cleanup_free_ char *signed_headers = NULL;
	char sig[65];
	int r;

	if (!req || !creds || !creds->access_key_id || !creds->secret_access_key)
		return -EINVAL;
	r = sigv4_signed_headers(req, &signed_headers);
	if (r < 0)
		return r;
	r = sigv4_signature(req, signed_headers, creds->secret_access_key,
			    amz_date, region, service, sig);
	if (r < 0)
		return r;
	if (asprintf(ret_authorization,
		     SIGV4_ALGORITHM " Credential=%s/%.8s/%s/%s/" SIGV4_TERMINATOR
		     ", SignedHeaders=%s, Signature=%s",
		     creds->access_key_id, amz_date, region, service,
		     signed_headers, sig) < 0)
		return -ENOMEM;
	return 0;
}

int sigv4_presign_unsigned_query(const struct sigv4_request *req,
				 const struct sigv4_credentials *creds,
				 const char *region, const char *service,
				 const char *amz_date, unsigned expires_sec,
				 bool sign_session_token, char **ret_query)
{
	_cleanup_free_ char *signed_headers = NULL, *credential = NULL, *buf = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	size_t size = 0;
	int r;

	if (!req || !creds || !creds->access_key_id || !amz_date ||
	    strlen(amz_date) != SIGV4_AMZ_DATE_LEN)
		return -EINVAL;
	r = sigv4_signed_headers(req, &signed_headers);
	if (r < 0)
		return r;
	if (asprintf(&credential, "%s/%.8s/%s/%s/" SIGV4_TERMINATOR,
		     creds->access_key_id, amz_date, region, service) < 0)
		return -ENOMEM;
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	if (req->query && *req->query)
		fprintf(f, "%s&", req->query);
	fputs("X-Amz-Algorithm=" SIGV4_ALGORITHM "&X-Amz-Credential=", f);
	uri_encode(f, credential, strlen(credential), false, false);
	fprintf(f, "&X-Amz-Date=%s&X-Amz-SignedHeaders=", amz_date);
	uri_encode(f, signed_headers, strlen(signed_headers), false, false);
	fprintf(f, "&X-Amz-Expires=%u", expires_sec);
	if (creds->session_token && sign_session_token) {
		fputs("&X-Amz-Security-Token=", f);
		uri_encode(f, creds->session_token, strlen(creds->session_token), false, false);
	}
	return memstream_take(&f, &buf, ret_query);
}

int sigv4_presign(const struct sigv4_request *req,
		  const struct sigv4_credentials *creds, const char *region,
		  const char *service, const char *amz_date,
		  unsigned expires_sec, bool sign_session_token,
		  char **ret_query)
{
	_cleanup_free_ char *query = NULL, *buf = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	struct sigv4_request signed_req;
	size_t size = 0;
	char sig[65];
	int r;

	r = sigv4_presign_unsigned_query(req, creds, region, service, amz_date,
					 expires_sec, sign_session_token, &query);
	if (r < 0)
		return r;
	signed_req = *req;
	signed_req.query = query;
	r = sigv4_signature(&signed_req, NULL, creds->secret_access_key,
			    amz_date, region, service, sig);
	if (r < 0)
		return r;
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "%s&X-Amz-Signature=%s", query, sig);
	if (creds->session_token && !sign_session_token) {
		fputs("&X-Amz-Security-Token=", f);
		uri_encode(f, creds->session_token, strlen(creds->session_token), false, false);
	}
	return memstream_take(&f, &buf, ret_query);
}
