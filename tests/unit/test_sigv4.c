/* SigV4: every vector of ../shared/data/sigv4 (both layouts) signed, and its
 * signed request verified by the server side and refused with one byte
 * tampered; presigning, Authorization parsing and verification errors. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/sigv4.h"
#include "common/util.h"

#define VECTOR_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define VECTOR_DATE "20150830T123600Z"
#define SHORT_TOKEN "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
#define CLASSIC_CASES 34
#define CRT_CASES 38
#define MAX_TEST_HEADERS 32

/* A raw HTTP request of the test suite, split into signer input. */
struct raw_request {
	char *text;
	char method[16];
	char *path;
	char *query;
	struct sigv4_header headers[MAX_TEST_HEADERS];
	size_t n_headers;
	const char *body;
	size_t body_len;
	char payload_hash[65];
};

static const char *vector_root(void)
{
	static char path[4096];
	const char *shared = getenv("KANNA_SHARED_DIR");
	const char *src = getenv("KANNA_SRCDIR");
	struct stat st;

	if (shared && *shared)
		snprintf(path, sizeof(path), "%s/data/sigv4", shared);
	else
		snprintf(path, sizeof(path), "%s/../shared/data/sigv4", src ? src : KANNA_SRCDIR);
	cr_assert(stat(path, &st) == 0 && S_ISDIR(st.st_mode),
		  "SigV4 vectors missing at %s", path);
	return path;
}

/* Whole file, '\r' stripped; NULL if absent. */
static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *out;
	size_t size = 0, n = 0;
	int c;

	if (!f)
		return NULL;
	FILE *m = open_memstream(&buf, &size);
	while ((c = fgetc(f)) != EOF)
		if (c != '\r') {
			fputc(c, m);
			n++;
		}
	fclose(f);
	fclose(m);
	out = buf;
	return out;
}

static char *read_case_file(const char *dir, const char *name)
{
	_cleanup_free_ char *path = NULL;

	cr_assert(asprintf(&path, "%s/%s", dir, name) >= 0);
	return read_text(path);
}

/* Request line "METHOD TARGET HTTP/1.1" (target may contain spaces),
 * "Name:value" headers with folded continuation lines, blank line, body. */
static void parse_raw_request(char *text, struct raw_request *r)
{
	char *line_end = strchr(text, '\n');
	char *sp1, *sp2, *p;

	memset(r, 0, sizeof(*r));
	r->text = text;
	if (line_end)
		*line_end = '\0';
	sp1 = strchr(text, ' ');
	sp2 = strrchr(text, ' ');
	cr_assert(sp1 && sp2 && sp2 > sp1, "bad request line: %s", text);
	snprintf(r->method, sizeof(r->method), "%.*s", (int)(sp1 - text), text);
	*sp2 = '\0';
	r->path = sp1 + 1;
	r->query = strchr(r->path, '?');
	if (r->query)
		*r->query++ = '\0';
	p = line_end ? line_end + 1 : text + strlen(text);
	while (*p) {
		char *end = strchr(p, '\n');

		if (end)
			*end = '\0';
		if (*p == '\0') {
			r->body = end ? end + 1 : p;
			break;
		}
		if ((*p == ' ' || *p == '\t') && r->n_headers > 0) {
			/* folded line: join to the previous value (the signer
			 * collapses the whitespace) */
			char *prev = (char *)r->headers[r->n_headers - 1].value;
			prev[strlen(prev)] = ' ';
		} else {
			char *colon = strchr(p, ':');
			cr_assert(colon, "bad header line: %s", p);
			cr_assert(r->n_headers < MAX_TEST_HEADERS);
			*colon = '\0';
			r->headers[r->n_headers].name = p;
			r->headers[r->n_headers].value = colon + 1;
			r->n_headers++;
		}
		if (!end)
			break;
		p = end + 1;
	}
	r->body_len = r->body ? strlen(r->body) : 0;
	sigv4_sha256_hex(r->body ? r->body : "", r->body_len, r->payload_hash);
}

static struct sigv4_request to_sigv4(const struct raw_request *r)
{
	return (struct sigv4_request){
		.method = r->method, .path = r->path, .query = r->query,
		.headers = r->headers, .n_headers = r->n_headers,
		.payload_sha256_hex = r->payload_hash,
	};
}

#define VECTOR_NOW 1440938160

/* Offset of the first byte of header name's value in a raw request, or -1. */
static long header_value_offset(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = strchr(text, '\n'); p && p[1] && p[1] != '\n'; p = strchr(p + 1, '\n'))
		if (strncasecmp(p + 1, name, n) == 0 && p[1 + n] == ':') {
			const char *v = p + 2 + n;

			while (*v == ' ')
				v++;
			return v - text;
		}
	return -1;
}

/* sigv4_verify() of a raw signed request (Authorization among its headers). */
static int verify_raw(const char *text, bool path_literal, char *err, size_t errlen)
{
	_cleanup_free_ char *copy = strdup(text);
	struct sigv4_credentials key = { "AKIDEXAMPLE", VECTOR_SECRET, NULL };
	struct raw_request raw;
	struct sigv4_request req;
	const char *authorization = NULL;

	cr_assert(copy);
	parse_raw_request(copy, &raw);
	for (size_t i = 0; i < raw.n_headers; i++)
		if (strcasecmp(raw.headers[i].name, "Authorization") == 0) {
			authorization = raw.headers[i].value;
			while (*authorization == ' ')
				authorization++;
			raw.headers[i] = raw.headers[--raw.n_headers];
			break;
		}
	cr_assert(authorization, "no Authorization in %.60s", text);
	req = to_sigv4(&raw);
	req.path_literal = path_literal;
	return sigv4_verify(&req, authorization, &key, 1, VECTOR_NOW, NULL, err, errlen);
}

/*
 * A vector's signed request as sent (.sreq, header-signed-request.txt)
 * through the server-side verifier: accepted as it is, and refused as a
 * signature mismatch with one byte of the method, the Host value, the
 * X-Amz-Date (a second later, inside the allowed skew) or the body bumped.
 * Returns failures.
 */
static int verify_signed_vector(const char *name, const char *signed_text, bool path_literal)
{
	const char *body = strstr(signed_text, "\n\n");
	long date = header_value_offset(signed_text, "X-Amz-Date");
	long tampered[4] = { 0, header_value_offset(signed_text, "Host"), date < 0 ? -1 : date + 14,
			     body && body[2] ? body + 2 - signed_text : -1 };
	char err[256] = "";
	int failures = 0, r;

	cr_assert(tampered[1] >= 0 && date >= 0, "%s: Host or X-Amz-Date missing", name);
	r = verify_raw(signed_text, path_literal, err, sizeof(err));
	cr_expect_eq(r, 0, "%s: verify refused the vector: %s", name, err);
	failures += r != 0;
	for (size_t i = 0; i < ARRAY_SIZE(tampered); i++) {
		_cleanup_free_ char *bad = strdup(signed_text);

		if (tampered[i] < 0)
			continue;
		cr_assert(bad);
		bad[tampered[i]]++;
		r = verify_raw(bad, path_literal, err, sizeof(err));
		cr_expect_eq(r, SIGV4_ERR_MISMATCH, "%s: byte %ld tampered: verify gave %d (%s)", name,
			     tampered[i], r, err);
		failures += r != SIGV4_ERR_MISMATCH;
	}
	return failures;
}

/*
 * The .sreq with the .authz as its Authorization value: the .authz is what
 * the suite signs against, and get-vanilla-with-session-token.sreq carries
 * get-vanilla's signature instead of its own.
 */
static char *with_authorization(const char *sreq, const char *authz)
{
	long at = header_value_offset(sreq, "Authorization");
	const char *end;
	char *out = NULL;

	cr_assert(at >= 0, "no Authorization in %.60s", sreq);
	end = strchr(sreq + at, '\n');
	cr_assert(asprintf(&out, "%.*s%s%s", (int)at, sreq, authz, end ? end : "") >= 0);
	return out;
}

/* One classic case: <dir>/<name>.{req,creq,sts,authz,sreq}: signing,
 * then verifying the signed request. Returns failures. */
static int run_classic_case(const char *dir, const char *name)
{
	char file[512];
	_cleanup_free_ char *req_text = NULL, *creq = NULL, *sts = NULL, *authz = NULL, *sreq = NULL;
	_cleanup_free_ char *got_creq = NULL, *got_sts = NULL, *got_authz = NULL, *signed_req = NULL;
	struct raw_request raw;
	struct sigv4_request req;
	struct sigv4_credentials creds = { "AKIDEXAMPLE", VECTOR_SECRET, NULL };

	snprintf(file, sizeof(file), "%s.req", name);
	req_text = read_case_file(dir, file);
	snprintf(file, sizeof(file), "%s.creq", name);
	creq = read_case_file(dir, file);
	snprintf(file, sizeof(file), "%s.sts", name);
	sts = read_case_file(dir, file);
	snprintf(file, sizeof(file), "%s.authz", name);
	authz = read_case_file(dir, file);
	snprintf(file, sizeof(file), "%s.sreq", name);
	sreq = read_case_file(dir, file);
	cr_assert(req_text && creq && sts && authz && sreq, "%s: vector files missing", name);
	parse_raw_request(req_text, &raw);
	/* README: this case signs with a session token that the .req lacks;
	 * the signer's caller adds the header, as the AWS client does */
	if (streq(name, "get-vanilla-with-session-token"))
		raw.headers[raw.n_headers++] = (struct sigv4_header){ "X-Amz-Security-Token", SHORT_TOKEN };
	req = to_sigv4(&raw);
	cr_assert_eq(sigv4_canonical_request(&req, NULL, &got_creq), 0, "%s", name);
	cr_assert_eq(sigv4_string_to_sign(VECTOR_DATE, "us-east-1", "service", got_creq, &got_sts), 0);
	cr_assert_eq(sigv4_sign(&req, &creds, "us-east-1", "service", VECTOR_DATE, &got_authz), 0);
	cr_expect_str_eq(got_creq, creq, "%s: canonical request differs", name);
	cr_expect_str_eq(got_sts, sts, "%s: string to sign differs", name);
	cr_expect_str_eq(got_authz, authz, "%s: authorization differs", name);
	signed_req = with_authorization(sreq, authz);
	return !streq(got_creq, creq) + !streq(got_sts, sts) + !streq(got_authz, authz) +
	       verify_signed_vector(name, signed_req, false);
}

static int walk_classic(const char *dir, int *cases)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int failures = 0;

	cr_assert(d, "cannot open %s", dir);
	while ((e = readdir(d))) {
		char sub[4096], req[4096 + 512];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		if (stat(sub, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(req, sizeof(req), "%s/%s.req", sub, e->d_name);
		if (stat(req, &st) == 0) {
			failures += run_classic_case(sub, e->d_name);
			(*cases)++;
		} else {
			failures += walk_classic(sub, cases);
		}
	}
	closedir(d);
	return failures;
}

Test(sigv4, signs_every_classic_aws4_testsuite_vector_and_verifies_it_unless_tampered)
{
	char dir[4096];
	int cases = 0, failures;

	snprintf(dir, sizeof(dir), "%s/aws4_testsuite", vector_root());
	failures = walk_classic(dir, &cases);
	cr_assert_eq(failures, 0, "%d mismatches", failures);
	cr_assert_eq(cases, CLASSIC_CASES, "ran %d classic cases", cases);
}

/* One aws-c-auth case: header signing and presigned query signing. */
static int run_crt_case(const char *dir, const char *name)
{
	_cleanup_free_ char *req_text = NULL, *ctx_text = NULL;
	_cleanup_free_ char *hcreq = NULL, *hsts = NULL, *hsig = NULL;
	_cleanup_free_ char *qcreq = NULL, *qsts = NULL, *qsig = NULL, *hsigned = NULL;
	_cleanup_free_ char *got = NULL, *got_sts = NULL, *query = NULL, *presigned = NULL;
	struct raw_request raw;
	struct sigv4_request req;
	struct sigv4_header headers[MAX_TEST_HEADERS + 3];
	char sig[65], amz_date[SIGV4_AMZ_DATE_LEN + 1], needle[100];
	json_t *ctx;
	json_error_t jerr;
	const char *token = NULL;
	int omit = 0, normalize = 1, sign_body = 0, expires = 0, failures = 0;
	size_t n;

	req_text = read_case_file(dir, "request.txt");
	ctx_text = read_case_file(dir, "context.json");
	hcreq = read_case_file(dir, "header-canonical-request.txt");
	hsts = read_case_file(dir, "header-string-to-sign.txt");
	hsig = read_case_file(dir, "header-signature.txt");
	qcreq = read_case_file(dir, "query-canonical-request.txt");
	qsts = read_case_file(dir, "query-string-to-sign.txt");
	qsig = read_case_file(dir, "query-signature.txt");
	hsigned = read_case_file(dir, "header-signed-request.txt");
	cr_assert(req_text && ctx_text && hcreq && hsts && hsig && qcreq && qsts && qsig && hsigned,
		  "%s: vector files missing", name);
	ctx = json_loads(ctx_text, 0, &jerr);
	cr_assert(ctx, "%s: context.json: %s", name, jerr.text);
	cr_assert_eq(json_unpack(ctx, "{s:{s?s}, s?b, s?b, s?b, s:i}", "credentials", "token", &token,
				 "normalize", &normalize, "sign_body", &sign_body,
				 "omit_session_token", &omit, "expiration_in_seconds", &expires), 0);
	struct sigv4_credentials creds = { "AKIDEXAMPLE", VECTOR_SECRET, token };
	cr_assert_str_eq(json_string_value(json_object_get(ctx, "timestamp")), "2015-08-30T12:36:00Z");
	snprintf(amz_date, sizeof(amz_date), VECTOR_DATE);

	parse_raw_request(req_text, &raw);
	/* header signing: the signer's caller adds X-Amz-Date, the token and
	 * (sign_body) x-amz-content-sha256 */
	n = raw.n_headers;
	memcpy(headers, raw.headers, n * sizeof(*headers));
	headers[n++] = (struct sigv4_header){ "X-Amz-Date", amz_date };
	if (token && !omit)
		headers[n++] = (struct sigv4_header){ "X-Amz-Security-Token", token };
	if (sign_body)
		headers[n++] = (struct sigv4_header){ "x-amz-content-sha256", raw.payload_hash };
	req = to_sigv4(&raw);
	req.headers = headers;
	req.n_headers = n;
	req.path_literal = !normalize;
	cr_assert_eq(sigv4_canonical_request(&req, NULL, &got), 0);
	cr_assert_eq(sigv4_string_to_sign(amz_date, "us-east-1", "service", got, &got_sts), 0);
	cr_assert_eq(sigv4_signature(&req, NULL, VECTOR_SECRET, amz_date, "us-east-1", "service", sig), 0);
	cr_expect_str_eq(got, hcreq, "%s: header canonical request differs", name);
	cr_expect_str_eq(got_sts, hsts, "%s: header string to sign differs", name);
	cr_expect_str_eq(sig, hsig, "%s: header signature differs", name);
	failures += !streq(got, hcreq) + !streq(got_sts, hsts) + !streq(sig, hsig);
	free(got);
	free(got_sts);
	got = got_sts = NULL;

	/* presigned query: only the request's own headers are signed */
	req = to_sigv4(&raw);
	req.path_literal = !normalize;
	cr_assert_eq(sigv4_presign_unsigned_query(&req, &creds, "us-east-1", "service", amz_date,
						  (unsigned)expires, !omit, &query), 0);
	cr_assert_eq(sigv4_presign(&req, &creds, "us-east-1", "service", amz_date,
				   (unsigned)expires, !omit, &presigned), 0);
	req.query = query;
	cr_assert_eq(sigv4_canonical_request(&req, NULL, &got), 0);
	cr_assert_eq(sigv4_string_to_sign(amz_date, "us-east-1", "service", got, &got_sts), 0);
	cr_assert_eq(sigv4_signature(&req, NULL, VECTOR_SECRET, amz_date, "us-east-1", "service", sig), 0);
	snprintf(needle, sizeof(needle), "X-Amz-Signature=%s", qsig);
	cr_expect_str_eq(got, qcreq, "%s: query canonical request differs", name);
	cr_expect_str_eq(got_sts, qsts, "%s: query string to sign differs", name);
	cr_expect_str_eq(sig, qsig, "%s: query signature differs", name);
	cr_expect(strstr(presigned, needle), "%s: presigned query lacks %s", name, needle);
	failures += !streq(got, qcreq) + !streq(got_sts, qsts) + !streq(sig, qsig) + !strstr(presigned, needle);
	failures += verify_signed_vector(name, hsigned, !normalize);
	json_decref(ctx);
	return failures;
}

Test(sigv4, signs_every_aws_c_auth_vector_in_header_and_query_and_verifies_the_header_form_unless_tampered)
{
	const char *root = vector_root();
	DIR *d = opendir(root);
	struct dirent *e;
	int cases = 0, failures = 0;

	cr_assert(d);
	while ((e = readdir(d))) {
		char sub[4096], ctx[4096 + 32];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", root, e->d_name);
		snprintf(ctx, sizeof(ctx), "%s/context.json", sub);
		if (stat(ctx, &st) < 0)
			continue;
		failures += run_crt_case(sub, e->d_name);
		cases++;
	}
	closedir(d);
	cr_assert_eq(failures, 0, "%d mismatches", failures);
	cr_assert_eq(cases, CRT_CASES, "ran %d aws-c-auth cases", cases);
}

Test(sigv4, amz_date_round_trips_and_rejects_garbage)
{
	char out[SIGV4_AMZ_DATE_LEN + 1];
	time_t t;

	cr_assert_eq(sigv4_parse_amz_date(VECTOR_DATE, &t), 0);
	cr_assert_eq(t, 1440938160);
	cr_assert_eq(sigv4_format_amz_date(t, out), 0);
	cr_assert_str_eq(out, VECTOR_DATE);
	cr_assert_eq(sigv4_parse_amz_date("20150830T123600", &t), -EINVAL);
	cr_assert_eq(sigv4_parse_amz_date("2015-08-30T12:36Z", &t), -EINVAL);
	cr_assert_eq(sigv4_parse_amz_date("20151330T123600Z", &t), -EINVAL);
}

Test(sigv4, parses_authorization_header_fields)
{
	struct sigv4_authorization a;

	cr_assert_eq(sigv4_parse_authorization(
			     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/ec2/aws4_request, "
			     "SignedHeaders=host;x-amz-date, Signature="
			     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31", &a), 0);
	cr_assert_str_eq(a.access_key_id, "AKIDEXAMPLE");
	cr_assert_str_eq(a.date, "20150830");
	cr_assert_str_eq(a.region, "us-east-1");
	cr_assert_str_eq(a.service, "ec2");
	cr_assert_str_eq(a.signed_headers, "host;x-amz-date");
	cr_assert_str_eq(a.signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

Test(sigv4, rejects_malformed_authorization_headers)
{
	static const char *const bad[] = {
		"",
		"AWS4-HMAC-SHA1 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, Signature=00",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host",
		"AWS4-HMAC-SHA256 Credential=A/2015083/r/s/aws4_request, SignedHeaders=host, Signature="
		"5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws5_request, SignedHeaders=host, Signature="
		"5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, Signature=xyz",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, Signature="
		"zfa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, Bogus=1, SignedHeaders=host, Signature="
		"5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	};
	struct sigv4_authorization a;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		cr_expect_eq(sigv4_parse_authorization(bad[i], &a), -EINVAL, "accepted: %s", bad[i]);
}

/* An EC2 query request as the AWS client sends it. */
struct signed_fixture {
	struct sigv4_header headers[4];
	struct sigv4_request req;
	char payload_hash[65];
	char *authorization;
};

#define EC2_BODY "Action=DescribeInstances&Version=2016-11-15"
static const struct sigv4_credentials fixture_keys[] = {
	{ "AKIDSIM", "sim-secret", NULL },
	{ "AKIDOTHER", "other-secret", NULL },
};

static void sign_fixture(struct signed_fixture *f, const char *key_id, const char *secret)
{
	struct sigv4_credentials creds = { key_id, secret, NULL };

	f->headers[0] = (struct sigv4_header){ "Host", "127.0.0.1:8443" };
	f->headers[1] = (struct sigv4_header){ "Content-Type", "application/x-www-form-urlencoded; charset=utf-8" };
	f->headers[2] = (struct sigv4_header){ "X-Amz-Date", VECTOR_DATE };
	sigv4_sha256_hex(EC2_BODY, strlen(EC2_BODY), f->payload_hash);
	f->req = (struct sigv4_request){ .method = "POST", .path = "/", .query = NULL,
					 .headers = f->headers, .n_headers = 3,
					 .payload_sha256_hex = f->payload_hash };
	cr_assert_eq(sigv4_sign(&f->req, &creds, "us-west-2", "ec2", VECTOR_DATE, &f->authorization), 0);
}

Test(sigv4, verify_accepts_a_correctly_signed_request)
{
	struct signed_fixture f;
	struct sigv4_authorization a;
	char err[256] = "";

	sign_fixture(&f, "AKIDSIM", "sim-secret");
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2, VECTOR_NOW + 60, &a,
				  err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(a.region, "us-west-2");
	cr_assert_str_eq(a.service, "ec2");
	free(f.authorization);
}

Test(sigv4, verify_reports_unknown_access_key)
{
	struct signed_fixture f;
	char err[256] = "";

	sign_fixture(&f, "AKIDNOBODY", "sim-secret");
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2, VECTOR_NOW, NULL,
				  err, sizeof(err)), SIGV4_ERR_UNKNOWN_KEY);
	cr_assert(strstr(err, "AKIDNOBODY"), "%s", err);
	cr_assert_str_eq(sigv4_error_to_aws_code(SIGV4_ERR_UNKNOWN_KEY), "AuthFailure");
	free(f.authorization);
}

Test(sigv4, verify_reports_wrong_secret_as_signature_mismatch)
{
	struct signed_fixture f;
	char err[256] = "";

	sign_fixture(&f, "AKIDSIM", "not-the-secret");
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2, VECTOR_NOW, NULL,
				  err, sizeof(err)), SIGV4_ERR_MISMATCH);
	cr_assert_str_eq(sigv4_error_to_aws_code(SIGV4_ERR_MISMATCH), "SignatureDoesNotMatch");
	free(f.authorization);
}

Test(sigv4, verify_reports_clock_skew_beyond_fifteen_minutes)
{
	struct signed_fixture f;
	char err[256] = "";

	sign_fixture(&f, "AKIDSIM", "sim-secret");
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2,
				  VECTOR_NOW + SIGV4_MAX_CLOCK_SKEW_SEC, NULL, err, sizeof(err)), 0);
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2,
				  VECTOR_NOW + SIGV4_MAX_CLOCK_SKEW_SEC + 1, NULL, err, sizeof(err)),
		     SIGV4_ERR_SKEW);
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2,
				  VECTOR_NOW - SIGV4_MAX_CLOCK_SKEW_SEC - 1, NULL, err, sizeof(err)),
		     SIGV4_ERR_SKEW);
	cr_assert_str_eq(sigv4_error_to_aws_code(SIGV4_ERR_SKEW), "RequestExpired");
	free(f.authorization);
}

Test(sigv4, verify_reports_tampered_body_and_header)
{
	struct signed_fixture f;
	char err[256] = "", other_hash[65];

	sign_fixture(&f, "AKIDSIM", "sim-secret");
	sigv4_sha256_hex(EC2_BODY "&DryRun=true", strlen(EC2_BODY "&DryRun=true"), other_hash);
	f.req.payload_sha256_hex = other_hash;
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2, VECTOR_NOW, NULL,
				  err, sizeof(err)), SIGV4_ERR_MISMATCH);
	f.req.payload_sha256_hex = f.payload_hash;
	f.headers[1].value = "text/plain";
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2, VECTOR_NOW, NULL,
				  err, sizeof(err)), SIGV4_ERR_MISMATCH);
	/* an unsigned header may change freely */
	f.headers[1].value = "application/x-www-form-urlencoded; charset=utf-8";
	f.headers[3] = (struct sigv4_header){ "User-Agent", "kanna" };
	f.req.n_headers = 4;
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2, VECTOR_NOW, NULL,
				  err, sizeof(err)), 0, "%s", err);
	free(f.authorization);
}

Test(sigv4, verify_reports_missing_signed_header_and_date_as_malformed)
{
	struct signed_fixture f;
	char err[256] = "";

	sign_fixture(&f, "AKIDSIM", "sim-secret");
	f.req.n_headers = 2; /* X-Amz-Date dropped */
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2, VECTOR_NOW, NULL,
				  err, sizeof(err)), SIGV4_ERR_MALFORMED);
	f.req.n_headers = 3;
	f.headers[1] = (struct sigv4_header){ "X-Amz-Date", VECTOR_DATE };
	f.headers[2] = (struct sigv4_header){ "Host", "127.0.0.1:8443" };
	f.req.n_headers = 2; /* content-type is signed but absent */
	cr_assert_eq(sigv4_verify(&f.req, f.authorization, fixture_keys, 2, VECTOR_NOW, NULL,
				  err, sizeof(err)), SIGV4_ERR_MALFORMED);
	cr_assert_eq(sigv4_verify(&f.req, NULL, fixture_keys, 2, VECTOR_NOW, NULL, err, sizeof(err)),
		     SIGV4_ERR_MALFORMED);
	cr_assert_str_eq(sigv4_error_to_aws_code(SIGV4_ERR_MALFORMED), "IncompleteSignature");
	free(f.authorization);
}

Test(sigv4, verify_accepts_a_test_suite_request_with_folded_header)
{
	char dir[4096], path[4200];
	_cleanup_free_ char *text = NULL, *authz = NULL;
	struct raw_request raw;
	struct sigv4_request req;
	struct sigv4_credentials key = { "AKIDEXAMPLE", VECTOR_SECRET, NULL };
	char err[256] = "";

	snprintf(dir, sizeof(dir), "%s/aws4_testsuite/get-header-value-multiline", vector_root());
	snprintf(path, sizeof(path), "%s/get-header-value-multiline.req", dir);
	text = read_text(path);
	snprintf(path, sizeof(path), "%s/get-header-value-multiline.authz", dir);
	authz = read_text(path);
	cr_assert(text && authz);
	parse_raw_request(text, &raw);
	req = to_sigv4(&raw);
	cr_assert_eq(sigv4_verify(&req, authz, &key, 1, VECTOR_NOW, NULL, err, sizeof(err)), 0, "%s", err);
}
