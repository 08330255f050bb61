/*
 * AWS Signature Version 4 (AWS4-HMAC-SHA256) on OpenSSL: canonical request,
 * string to sign, signing key, Authorization header, presigned query, and
 * the server side (parse an Authorization header, verify a request).
 * The AWS client (common/aws*.c) signs with it; kanna-sim verifies every
 * incoming request with the very same code. Pure functions: no I/O, no
 * clock (callers pass amz_date / now), no global state.
 */
#ifndef KANNA_COMMON_SIGV4_H
#define KANNA_COMMON_SIGV4_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SIGV4_TERMINATOR "aws4_request"

/* AWS rejects a request whose X-Amz-Date is more than 15 minutes away from
 * the server's clock (RequestExpired / "Signature expired"). */
#define SIGV4_MAX_CLOCK_SKEW_SEC (15 * 60)

/* Hex SHA-256 of the empty payload. */
#define SIGV4_EMPTY_PAYLOAD_SHA256                                            \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* "YYYYMMDDTHHMMSSZ" + NUL */
#define SIGV4_AMZ_DATE_LEN 16
/* Bounds of a parsed Authorization header (no AWS value comes close). */
#define SIGV4_ACCESS_KEY_ID_MAX 128
#define SIGV4_SCOPE_PART_MAX 64
#define SIGV4_SIGNED_HEADERS_MAX 2048

/* Distinct verification failures (negative errno values). */
#define SIGV4_ERR_MALFORMED (-EINVAL)    /* bad/missing Authorization or X-Amz-Date */
#define SIGV4_ERR_UNKNOWN_KEY (-ENOKEY)  /* access key id not known */
#define SIGV4_ERR_SKEW (-ETIME)          /* X-Amz-Date too far from now, or scope date differs */
#define SIGV4_ERR_MISMATCH (-EBADMSG)    /* signature does not match */

struct sigv4_credentials {
	const char *access_key_id;
	const char *secret_access_key;
	const char *session_token; /* NULL for long-term keys */
};

/* One header as sent; names are matched case-insensitively, duplicates are
 * joined with ',' in the order given (as AWS does). */
struct sigv4_header {
	const char *name;
	const char *value;
};

struct sigv4_request {
	const char *method;  /* "POST" */
	const char *path;    /* request path as sent on the wire, before '?' ("/") */
	const char *query;   /* raw query string after '?', or NULL/"" */
	const struct sigv4_header *headers; /* every header to sign, incl. Host and X-Amz-Date */
	size_t n_headers;
	const char *payload_sha256_hex; /* hex SHA-256 of the body (sigv4_sha256_hex) */
	/* S3 style: do not normalise the path (dot segments, "//") and do not
	 * double-encode it. false (the default) is right for EC2/STS/SQS/SSM. */
	bool path_literal;
};

struct sigv4_authorization {
	char access_key_id[SIGV4_ACCESS_KEY_ID_MAX];
	char date[9]; /* YYYYMMDD */
	char region[SIGV4_SCOPE_PART_MAX];
	char service[SIGV4_SCOPE_PART_MAX];
	char signed_headers[SIGV4_SIGNED_HEADERS_MAX]; /* "host;x-amz-date" */
	char signature[65];
};

/* Hex SHA-256 of a buffer into out (65 bytes incl. NUL). */
int sigv4_sha256_hex(const void *data, size_t len, char out[65]);

/* amz_date "YYYYMMDDTHHMMSSZ" from a time (UTC) and back. */
int sigv4_format_amz_date(time_t t, char out[SIGV4_AMZ_DATE_LEN + 1]);
int sigv4_parse_amz_date(const char *amz_date, time_t *ret);

/*
 * Canonical request. signed_headers is the ';' list of lowercase names to
 * include; NULL means every header of req (sorted), which is what signing
 * does. Newly allocated string in *ret.
 */
int sigv4_canonical_request(const struct sigv4_request *req,
			    const char *signed_headers, char **ret);
/* The sorted, ';'-joined lowercase names of every header of req. */
int sigv4_signed_headers(const struct sigv4_request *req, char **ret);

int sigv4_string_to_sign(const char *amz_date, const char *region,
			 const char *service, const char *canonical_request,
			 char **ret);
int sigv4_signing_key(const char *secret_access_key, const char *date8,
		      const char *region, const char *service,
		      uint8_t out[32]);

/* Hex signature of req over signed_headers (NULL = all headers). */
int sigv4_signature(const struct sigv4_request *req,
		    const char *signed_headers, const char *secret_access_key,
		    const char *amz_date, const char *region,
		    const char *service, char out_hex[65]);

/*
 * Authorization header value ("AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
 * Signature=...") signing every header of req. The caller must already have
 * put X-Amz-Date (= amz_date) and, with a session token, X-Amz-Security-Token
 * in req->headers. Newly allocated string in *ret_authorization.
 */
int sigv4_sign(const struct sigv4_request *req,
	       const struct sigv4_credentials *creds, const char *region,
	       const char *service, const char *amz_date,
	       char **ret_authorization);

/*
 * Presigned URL (query-string signing). *ret_query is req->query plus the
 * X-Amz-Algorithm/Credential/Date/Expires/SignedHeaders (and, if
 * sign_session_token, X-Amz-Security-Token) parameters and finally
 * X-Amz-Signature; with a token and !sign_session_token the token is
 * appended after signing. req->headers must not contain X-Amz-Date.
 */
int sigv4_presign(const struct sigv4_request *req,
		  const struct sigv4_credentials *creds, const char *region,
		  const char *service, const char *amz_date,
		  unsigned expires_sec, bool sign_session_token,
		  char **ret_query);
/* The same query before X-Amz-Signature is appended (what gets signed). */
int sigv4_presign_unsigned_query(const struct sigv4_request *req,
				 const struct sigv4_credentials *creds,
				 const char *region, const char *service,
				 const char *amz_date, unsigned expires_sec,
				 bool sign_session_token, char **ret_query);

/* Parse "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/ec2/aws4_request,
 * SignedHeaders=host;x-amz-date, Signature=<64 hex>". -EINVAL if malformed. */
int sigv4_parse_authorization(const char *header,
			      struct sigv4_authorization *ret);

/*
 * Server-side check of a signed request. known_keys lists the accepted
 * credentials (access key id + secret). Returns 0, or
 *   SIGV4_ERR_MALFORMED    Authorization/X-Amz-Date missing or malformed,
 *                          a signed header absent from the request
 *   SIGV4_ERR_UNKNOWN_KEY  access key id not in known_keys
 *   SIGV4_ERR_SKEW         |X-Amz-Date - now| > SIGV4_MAX_CLOCK_SKEW_SEC or
 *                          the credential scope date differs from X-Amz-Date
 *   SIGV4_ERR_MISMATCH     the signature does not match
 * with a human-readable reason in err (may be NULL). If ret_auth is not
 * NULL it receives the parsed header (e.g. to check region or service).
 */
int sigv4_verify(const struct sigv4_request *req, const char *authorization,
		 const struct sigv4_credentials *known_keys,
		 size_t n_known_keys, time_t now,
		 struct sigv4_authorization *ret_auth, char *err,
		 size_t errlen);

/* The AWS error code a service answers for a sigv4_verify() failure:
 * "IncompleteSignature", "AuthFailure", "RequestExpired",
 * "SignatureDoesNotMatch". */
const char *sigv4_error_to_aws_code(int r);

#endif
