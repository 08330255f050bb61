/*
 * The AWS client the launcher and the reaper share: credentials (the
 * standard provider chain), region and endpoints (with the AWS_ENDPOINT_URL
 * overrides that point kanna at kanna-sim), query- and JSON-protocol
 * requests signed with SigV4 (common/sigv4.h), responses parsed by expat
 * into a small bounded element tree, AWS errors surfaced by code and
 * message, retries with full-jitter exponential backoff and a client-side
 * token bucket. Requests run asynchronously on the process's event loop.
 */
#ifndef KANNA_COMMON_AWS_H
#define KANNA_COMMON_AWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/util.h"

struct loop;

/* ---- credentials --------------------------------------------------------- */

struct aws_credentials {
	char *access_key_id;
	char *secret_access_key;
	char *session_token; /* NULL for long-term keys */
	time_t expiration;   /* 0: does not expire */
	char *source;        /* "environment", "web identity", "shared files", ... */
};

/* Temporary credentials are refreshed this long before they expire (the
 * AWS SDKs use 5 to 15 minutes; a launch in flight must not see them go). */
#define AWS_CREDENTIALS_REFRESH_BEFORE_SEC (10 * 60)
/* IMDS and the container agent are local: an answer takes milliseconds,
 * and off EC2 we must fail fast (the SDKs use 1 s as well). */
#define AWS_LOCAL_HTTP_TIMEOUT_MS 1000
/* STS is a remote regional endpoint. */
#define AWS_STS_HTTP_TIMEOUT_MS 10000
/* Biggest credential/metadata document we accept. */
#define AWS_CREDENTIALS_MAX_BODY (64 * 1024)
/* IMDSv2 session token lifetime we ask for (the maximum, 6 hours). */
#define AWS_IMDS_TOKEN_TTL_SEC 21600
#define AWS_IMDS_DEFAULT_ENDPOINT "http://169.254.169.254"
#define AWS_CONTAINER_DEFAULT_HOST "http://169.254.170.2"

struct aws_credentials_options {
	const char *profile; /* NULL: $AWS_PROFILE, else "default" */
	/* 0 = AWS_LOCAL_HTTP_TIMEOUT_MS / AWS_STS_HTTP_TIMEOUT_MS */
	long local_timeout_ms;
	long sts_timeout_ms;
	const char *region; /* for the STS endpoint of web identity; may be NULL */
	/*
	 * Keys found in the environment are taken out of it (issue 19): the
	 * three variables unset and their text zeroed where it was, so neither
	 * a child nor /proc/<pid>/environ shows them again. For daemons; the
	 * keys then live only in the client (and a resolve cannot find them
	 * twice).
	 */
	bool take_env;
};

void aws_credentials_free(struct aws_credentials *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct aws_credentials *, aws_credentials_free);
int aws_credentials_dup(const struct aws_credentials *c, struct aws_credentials **ret);
/* True when c expires within AWS_CREDENTIALS_REFRESH_BEFORE_SEC of now. */
bool aws_credentials_need_refresh(const struct aws_credentials *c, time_t now);

/*
 * Walks the chain: environment, web identity, shared files, container,
 * EC2 instance metadata (IMDSv2). Blocking (short timeouts): call at start;
 * aws_client refreshes on a worker thread. -ENOKEY when no source gave credentials;
 * then *ret_error (if not NULL) names every source tried and why it failed.
 */
int aws_credentials_resolve(const struct aws_credentials_options *opts,
			    struct aws_credentials **ret, char **ret_error);

/* The individual sources (each -ENOENT when it is not configured). *ret_why
 * must be NULL (or malloc'd, it is replaced) and gets the reason on failure. */
int aws_credentials_from_env(struct aws_credentials **ret, char **ret_why);
int aws_credentials_from_shared_files(const char *profile,
				      struct aws_credentials **ret,
				      char **ret_why);
int aws_credentials_from_web_identity(const struct aws_credentials_options *opts,
				      struct aws_credentials **ret,
				      char **ret_why);
int aws_credentials_from_container(const struct aws_credentials_options *opts,
				   struct aws_credentials **ret, char **ret_why);
/*
 * The container credentials URL: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI on
 * the ECS agent, else AWS_CONTAINER_CREDENTIALS_FULL_URI, parsed as curl
 * fetches it: never with user information; https to any host, plain http
 * only to loopback or the ECS / EKS Pod Identity agent (169.254.170.2,
 * 169.254.170.23, fd00:ec2::23), as the SDKs allow. -EPERM otherwise.
 */
int aws_container_credentials_url(char **ret, char **ret_why);
int aws_credentials_from_imds(const struct aws_credentials_options *opts,
			      struct aws_credentials **ret, char **ret_why);

/* Parsers of the sources' documents (pure; also fuzzed/tested alone). */
int aws_credentials_parse_sts_xml(const char *body, size_t len,
				  struct aws_credentials **ret);
int aws_credentials_parse_json(const char *body, size_t len,
			       struct aws_credentials **ret);
/* ISO 8601 "2026-11-22T23:00:00Z" (fraction allowed) to time_t. */
int aws_parse_iso8601(const char *s, time_t *ret);

/* ---- shared config files (INI) -------------------------------------------- */

/* Path of ~/.aws/credentials or ~/.aws/config after the env overrides. */
int aws_shared_file_path(bool config_file, char **ret);
/*
 * Value of key in profile of an INI file. In the config file profiles are
 * "[profile NAME]" (and "[default]"); in the credentials file "[NAME]".
 * -ENOENT if the file, profile or key is absent; -EBADMSG on a syntax
 * error (*ret_line gets the line when not NULL).
 */
int aws_ini_lookup(const char *path, bool config_file, const char *profile,
		   const char *key, char **ret, unsigned *ret_line);

/* ---- region and endpoints -------------------------------------------------- */

/*
 * Region: explicit (flag/config) → AWS_REGION → AWS_DEFAULT_REGION →
 * region of the profile in the config file → IMDS placement/region
 * (unless AWS_EC2_METADATA_DISABLED). -ENOENT with a message otherwise.
 */
int aws_region_resolve(const char *explicit_region, const char *profile,
		       char **ret, char **ret_error);

/*
 * Endpoint URL of a service ("ec2", "ssm", "sts", "sqs", "pricing", "iam"):
 * AWS_ENDPOINT_URL_<SERVICE> → AWS_ENDPOINT_URL → https://<host> by region.
 * No trailing slash.
 */
int aws_endpoint_url(const char *service, const char *region, char **ret);
/*
 * Calls warn() for every endpoint override (AWS_ENDPOINT_URL,
 * AWS_ENDPOINT_URL_<SERVICE>) that is plain http to a host other than
 * loopback: what is signed there (the session token, the requests) crosses
 * the network readable and replayable. Returns how many there are.
 */
typedef void (*aws_endpoint_warn_fn)(const char *variable, const char *url, void *userdata);
unsigned aws_endpoint_overrides_check(aws_endpoint_warn_fn warn, void *userdata);
/* The region requests to service are signed for: region itself, except for
 * global services (IAM signs for us-east-1 in the aws partition). */
const char *aws_signing_region(const char *service, const char *region);

/* ---- query protocol -------------------------------------------------------- */

struct aws_query;
/* Action and Version first, then parameters in the order added. */
int aws_query_new(const char *action, const char *version, struct aws_query **ret);
void aws_query_free(struct aws_query *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct aws_query *, aws_query_free);
/* Name built printf-style for the EC2 list conventions:
 * aws_query_add(q, "m5.large", "LaunchTemplateConfigs.%u.Overrides.%u.InstanceType", 1, 2) */
int aws_query_add(struct aws_query *q, const char *value, const char *name_fmt, ...)
	_printf_(3, 4);
int aws_query_add_int(struct aws_query *q, long long value, const char *name_fmt, ...)
	_printf_(3, 4);
/* EC2 list flattening: prefix.1=values[0] ... prefix.n=values[n-1]
 * ("InstanceId", "SecurityGroupId.1.Value"...). */
int aws_query_add_list(struct aws_query *q, const char *prefix, const char *const *values,
		       size_t n);
/* Filter.<index>.Name=name, Filter.<index>.Value.1..n=values (index from 1). */
int aws_query_add_filter(struct aws_query *q, unsigned index, const char *name,
			 const char *const *values, size_t n);
/* application/x-www-form-urlencoded body (RFC 3986 encoding). */
int aws_query_encode(const struct aws_query *q, char **ret);
const char *aws_query_action(const struct aws_query *q);

/* ---- XML responses ---------------------------------------------------------- */

/* Bounds on a response document: a DescribeInstanceTypes page is ~1 MiB
 * with ~40k elements; anything far beyond is hostile or broken. */
#define AWS_XML_MAX_BYTES (32u * 1024 * 1024)
#define AWS_XML_MAX_DEPTH 64
#define AWS_XML_MAX_ELEMENTS 1000000u
#define AWS_XML_MAX_NAME 256

struct aws_xml_node {
	char *name;   /* local name as in the document (no namespace handling) */
	char *text;   /* concatenated character data, never NULL */
	size_t text_len;
	struct aws_xml_node *parent;
	struct aws_xml_node **children;
	size_t n_children;
	size_t children_cap;
};

/* -EBADMSG on malformed XML, -E2BIG past a limit. */
int aws_xml_parse(const char *data, size_t len, struct aws_xml_node **ret);
/* Frees a whole document (pass the root). */
void aws_xml_free(struct aws_xml_node *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct aws_xml_node *, aws_xml_free);
/* First child named name, or NULL. */
const struct aws_xml_node *aws_xml_child(const struct aws_xml_node *n, const char *name);
/* Descend "a/b/c" by first matching child at each step; NULL if absent. */
const struct aws_xml_node *aws_xml_find(const struct aws_xml_node *n, const char *path);
/* Text of the node at path, or NULL. */
const char *aws_xml_text(const struct aws_xml_node *n, const char *path);
/* Iterate children named name: for (c = aws_xml_first(n, "item"); c; c = aws_xml_next(c)) */
const struct aws_xml_node *aws_xml_first(const struct aws_xml_node *n, const char *name);
const struct aws_xml_node *aws_xml_next(const struct aws_xml_node *n);

/* ---- errors ------------------------------------------------------------------- */

#define AWS_ERROR_CODE_MAX 128
#define AWS_ERROR_MESSAGE_MAX 1024
#define AWS_REQUEST_ID_MAX 128

struct aws_error {
	long http_status;
	char code[AWS_ERROR_CODE_MAX];       /* "InsufficientInstanceCapacity" */
	char message[AWS_ERROR_MESSAGE_MAX];
	char request_id[AWS_REQUEST_ID_MAX];
};

/*
 * Fill *ret from an error body: EC2 <Response><Errors><Error>, STS/SQS
 * <ErrorResponse><Error>, JSON {"__type": "...#Code", "message": ...}.
 * -EBADMSG when the body is not a recognised error document (then code is
 * derived from the HTTP status, e.g. "HTTP503").
 */
int aws_error_parse(const char *body, size_t len, long http_status, struct aws_error *ret);

/* ---- retries ------------------------------------------------------------------ */

/* Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"):
 * sleep = random(0, min(cap, base * 2^attempt)). Base and cap as in the
 * AWS SDKs' standard mode for throttling; 8 attempts ride out a throttling
 * storm of ~40 s without giving up a launch. */
#define AWS_RETRY_BASE_USEC (200ULL * 1000)
#define AWS_RETRY_CAP_USEC (20ULL * 1000 * 1000)
#define AWS_RETRY_MAX_ATTEMPTS 8

enum aws_retry_class {
	AWS_RETRY_NONE,      /* success or a final error */
	AWS_RETRY_THROTTLE,  /* throttling error code or HTTP 429 */
	AWS_RETRY_TRANSIENT, /* HTTP 5xx, network error, timeout */
};

struct aws_retry_policy {
	unsigned max_attempts; /* including the first */
	uint64_t base_usec;
	uint64_t cap_usec;
};

/* Random source for jitter: returns a uniformly distributed 64-bit value. */
typedef uint64_t (*aws_rng_fn)(void *userdata);

void aws_retry_policy_default(struct aws_retry_policy *p);
bool aws_error_code_is_throttling(const char *code);
enum aws_retry_class aws_retry_classify(CURLcode transport, long http_status,
					const char *error_code);
/* failed_attempts >= 1: attempts made so far. True if one more is allowed. */
bool aws_retry_should_retry(const struct aws_retry_policy *p, enum aws_retry_class c,
			    unsigned failed_attempts);
/* Delay before attempt failed_attempts + 1, full jitter. */
uint64_t aws_retry_backoff_usec(const struct aws_retry_policy *p, unsigned failed_attempts,
				aws_rng_fn rng, void *rng_userdata);

/* ---- client ----------------------------------------------------------------------- */

/* EC2 throttles per account and Region with token buckets (documented
 * default for non-mutating Describe* calls: 100 tokens refilled at 20/s).
 * A client-wide 20/s with a burst of 50 stays under it and leaves room for
 * the other tools of the account; configurable per client. */
#define AWS_CLIENT_DEFAULT_RATE 20.0
#define AWS_CLIENT_DEFAULT_BURST 50
/* Whole-transfer timeout of one attempt. */
#define AWS_CLIENT_TIMEOUT_MS 30000
/* Largest response body accepted (matches the XML parser's bound). */
#define AWS_CLIENT_MAX_BODY AWS_XML_MAX_BYTES

struct aws_client;

struct aws_client_options {
	const char *region;              /* required */
	double rate;                     /* requests/s; 0 = default, < 0 unlimited */
	unsigned burst;                  /* 0 = default */
	struct aws_retry_policy retry;   /* zeros = defaults */
	long timeout_ms;                 /* 0 = AWS_CLIENT_TIMEOUT_MS */
	const char *user_agent;          /* NULL = "kanna/<version>" */
	/* Re-resolution of expiring credentials; NULL = chain with defaults. */
	const struct aws_credentials_options *credentials_options;
	/* Injected jitter source (tests); NULL = seeded xorshift. */
	aws_rng_fn rng;
	void *rng_userdata;
};

enum aws_protocol {
	AWS_PROTOCOL_QUERY, /* EC2, STS, SQS: form body, XML response */
	AWS_PROTOCOL_JSON,  /* SSM, Pricing: awsJson1_1, X-Amz-Target */
};

struct aws_response {
	int result;                 /* 0, -EREMOTEIO (AWS error), other -errno */
	long http_status;
	unsigned attempts;
	char *body;
	size_t body_len;
	struct aws_xml_node *xml;   /* query protocol success */
	json_t *json;               /* JSON protocol success */
	struct aws_error error;     /* result == -EREMOTEIO, or transport text */
	char description[AWS_ERROR_CODE_MAX + AWS_ERROR_MESSAGE_MAX + 8]; /* see aws_response_strerror() */
};

struct aws_client;
/* Called once per aws_call; response is valid during the callback only. */
typedef void (*aws_done_fn)(struct aws_client *client, const struct aws_response *response,
			    void *userdata);

/* creds is copied. */
int aws_client_new(struct loop *loop, const struct aws_client_options *opts,
		   const struct aws_credentials *creds, struct aws_client **ret);
/* Cancels calls in flight (their done() is not called). */
void aws_client_free(struct aws_client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct aws_client *, aws_client_free);
const char *aws_client_region(const struct aws_client *c);
int aws_client_set_credentials(struct aws_client *c, const struct aws_credentials *creds);
/* The credentials requests are signed with now (refreshed in the background
 * AWS_CREDENTIALS_REFRESH_BEFORE_SEC before they expire). */
const struct aws_credentials *aws_client_credentials(const struct aws_client *c);

/* Query protocol (service "ec2", "sts", "sqs", "iam"); q is always consumed. */
int aws_call_query(struct aws_client *c, const char *service, struct aws_query *q,
		   aws_done_fn done, void *userdata);
/* aws_call_query() whose userdata, from malloc(), is the client's from this
 * call on, even when it fails: freed after done() returns, or with the call
 * when aws_client_free() cancels it without calling back. done() must not
 * free it. */
int aws_call_query_owned(struct aws_client *c, const char *service, struct aws_query *q,
			 aws_done_fn done, void *userdata);
/* JSON protocol: target "AmazonSSM.GetParameter"; body is always consumed
 * (reference stolen). */
int aws_call_json(struct aws_client *c, const char *service, const char *target,
		  json_t *body, aws_done_fn done, void *userdata);

/* "InsufficientInstanceCapacity: We currently do not have ..." (or the
 * transport error, "Connection refused: ...") for "Failed to CreateFleet: %s".
 * Valid as long as the response. */
const char *aws_response_strerror(const struct aws_response *r);

#endif
