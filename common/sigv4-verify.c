/*
 * Server side of SigV4: parse an Authorization header and verify a signed
 * request against known keys and the server clock, with distinct errors
 * for a malformed header, an unknown key, a skewed date and a mismatch.
 * kanna-sim calls it for every request; the signature itself is computed
 * by common/sigv4.c so signer and verifier can never disagree.
 * Never logs: the caller turns the error into an AWS error response.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "common/sigv4.h"
#include "common/util.h"

/* Copy s[0..n) into a bounded field; -EINVAL if it is empty or too long. */
static int copy_field(char *dst, size_t dst_size, const char *s, size_t n)
{
	if (n == 0 || n >= dst_size)
		return -EINVAL;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

static int parse_credential(const char *s, size_t n, struct sigv4_authorization *a)
{
	const char *parts[5];
	size_t lens[5], k = 0;
	const char *p = s, *end = s + n;

	while (k < 5) {
		const char *slash = memchr(p, '/', (size_t)(end - p));

		parts[k] = p;
		lens[k] = slash ? (size_t)(slash - p) : (size_t)(end - p);
		k++;
		if (!slash)
			break;
		p = slash + 1;
	}
	if (k != 5 || parts[4] + lens[4] != end || lens[1] != 8 ||
	    lens[4] != strlen(SIGV4_TERMINATOR) ||
	    memcmp(parts[4], SIGV4_TERMINATOR, lens[4]) != 0)
		return -EINVAL;
	for (size_t i = 0; i < 8; i++)
		if (!isdigit((unsigned char)parts[1][i]))
			return -EINVAL;
	if (copy_field(a->access_key_id, sizeof(a->access_key_id), parts[0], lens[0]) < 0 ||
	    copy_field(a->date, sizeof(a->date), parts[1], lens[1]) < 0 ||
	    copy_field(a->region, sizeof(a->region), parts[2], lens[2]) < 0 ||
	    copy_field(a->service, sizeof(a->service), parts[3], lens[3]) < 0)
		return -EINVAL;
	return 0;
}

int sigv4_parse_authorization(const char *header, struct sigv4_authorization *ret)
{
	struct sigv4_authorization a = { 0 };
	bool have_cred = false, have_sh = false, have_sig = false;
	const char *p;

	if (!header || !ret)
		return -EINVAL;
	if (strncmp(header, SIGV4_ALGORITHM " ", strlen(SIGV4_ALGORITHM) + 1) != 0)
		return -EINVAL;
	p = header + strlen(SIGV4_ALGORITHM) + 1;
	while (*p) {
		const char *comma, *eq;
		size_t len, vlen;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		while (len > 0 && p[len - 1] == ' ')
			len--;
		eq = memchr(p, '=', len);
		if (!eq)
			return -EINVAL;
		vlen = len - (size_t)(eq + 1 - p);
		if (strncmp(p, "Credential=", 11) == 0 && !have_cred) {
			if (parse_credential(eq + 1, vlen, &a) < 0)
				return -EINVAL;
			have_cred = true;
		} else if (strncmp(p, "SignedHeaders=", 14) == 0 && !have_sh) {
			if (copy_field(a.signed_headers, sizeof(a.signed_headers), eq + 1, vlen) < 0)
				return -EINVAL;
			have_sh = true;
		} else if (strncmp(p, "Signature=", 10) == 0 && !have_sig) {
			if (vlen != 64 || copy_field(a.signature, sizeof(a.signature), eq + 1, vlen) < 0)
				return -EINVAL;
			for (size_t i = 0; i < 64; i++)
				if (!isxdigit((unsigned char)a.signature[i]))
					return -EINVAL;
			have_sig = true;
		} else {
			return -EINVAL;
		}
		p += len;
	}
	if (!have_cred || !have_sh || !have_sig)
		return -EINVAL;
	*ret = a;
	return 0;
}

static const char *request_header(const struct sigv4_request *req, const char *name)
{
	for (size_t i = 0; i < req->n_headers; i++)
		if (strcasecmp(req->headers[i].name, name) == 0)
			return req->headers[i].value;
	return NULL;
}

static bool signed_headers_contain(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		const char *semi = strchr(p, ';');
		size_t len = semi ? (size_t)(semi - p) : strlen(p);

		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p += len + (semi ? 1 : 0);
	}
	return false;
}

#define VERIFY_FAIL(code, ...)                                                \
	do {                                                                  \
		if (err && errlen)                                            \
			snprintf(err, errlen, __VA_ARGS__);                   \
		return (code);                                                \
	} while (0)

int sigv4_verify(const struct sigv4_request *req, const char *authorization,
		 const struct sigv4_credentials *known_keys,
		 size_t n_known_keys, time_t now,
		 struct sigv4_authorization *ret_auth, char *err, size_t errlen)
{
	struct sigv4_authorization a;
	const struct sigv4_credentials *key = NULL;
	const char *amz_date;
	char expected[65];
	time_t t;
	int r;

	if (!authorization)
		VERIFY_FAIL(SIGV4_ERR_MALFORMED, "Request is missing the Authorization header");
	if (sigv4_parse_authorization(authorization, &a) < 0)
		VERIFY_FAIL(SIGV4_ERR_MALFORMED, "Authorization header is not a valid " SIGV4_ALGORITHM " header");
	if (ret_auth)
		*ret_auth = a;
	if (!signed_headers_contain(a.signed_headers, "host"))
		VERIFY_FAIL(SIGV4_ERR_MALFORMED, "SignedHeaders must include host");
	for (size_t i = 0; i < n_known_keys && !key; i++)
		if (known_keys[i].access_key_id && streq(known_keys[i].access_key_id, a.access_key_id))
			key = &known_keys[i];
	if (!key || !key->secret_access_key)
		VERIFY_FAIL(SIGV4_ERR_UNKNOWN_KEY, "The access key id %s is not known", a.access_key_id);
	amz_date = request_header(req, "x-amz-date");
	if (!amz_date || sigv4_parse_amz_date(amz_date, &t) < 0)
		VERIFY_FAIL(SIGV4_ERR_MALFORMED, "Request has no valid X-Amz-Date header");
	if (strncmp(amz_date, a.date, 8) != 0)
		VERIFY_FAIL(SIGV4_ERR_SKEW, "Credential scope date %s does not match X-Amz-Date %s",
			    a.date, amz_date);
	if (t > now + SIGV4_MAX_CLOCK_SKEW_SEC || t < now - SIGV4_MAX_CLOCK_SKEW_SEC)
		VERIFY_FAIL(SIGV4_ERR_SKEW, "Request time %s is more than %d seconds from the server time",
			    amz_date, SIGV4_MAX_CLOCK_SKEW_SEC);
	r = sigv4_signature(req, a.signed_headers, key->secret_access_key,
			    amz_date, a.region, a.service, expected);
	if (r == -ENOENT)
		VERIFY_FAIL(SIGV4_ERR_MALFORMED, "A header listed in SignedHeaders is missing");
	if (r < 0)
		VERIFY_FAIL(r, "Failed to compute the signature");
	if (CRYPTO_memcmp(expected, a.signature, 64) != 0)
		VERIFY_FAIL(SIGV4_ERR_MISMATCH, "The request signature we calculated does not match the signature you provided");
	return 0;
}

const char *sigv4_error_to_aws_code(int r)
{
	switch (r) {
	case 0:
		return NULL;
	case SIGV4_ERR_UNKNOWN_KEY:
		return "AuthFailure";
	case SIGV4_ERR_SKEW:
		return "RequestExpired";
	case SIGV4_ERR_MISMATCH:
		return "SignatureDoesNotMatch";
	case SIGV4_ERR_MALFORMED:
	default:
		return "IncompleteSignature";
	}
}
