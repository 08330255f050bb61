/* The credential chain, source by source: environment, shared files with
 * profiles, and web identity (STS), container credentials and IMDSv2
 * against a local libmicrohttpd server; the "no credentials" message. */
#include <criterion/criterion.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/aws.h"
#include "sim/tls.h"

#define IMDS_TOKEN "AQAEAKanna-imds-v2-token=="
#define POD_IDENTITY_TOKEN "kanna-pod-identity-token"
#define WEB_IDENTITY_TOKEN "eyJhbGciOiJSUzI1NiJ9.kanna-test.sig"
#define ROLE_ARN "arn:aws:iam::123456789012:role/KarpenterControllerRole"
#define MAX_BODY 8192

static const char imds_credentials[] =
	"{\"Code\":\"Success\",\"LastUpdated\":\"2026-11-22T22:00:00Z\",\"Type\":\"AWS-HMAC\","
	"\"AccessKeyId\":\"ASIAIMDSEXAMPLE\",\"SecretAccessKey\":\"imds-secret\","
	"\"Token\":\"imds-session\",\"Expiration\":\"2036-11-23T04:00:00Z\"}";
static const char container_credentials[] =
	"{\"AccessKeyId\":\"ASIAPODEXAMPLE\",\"SecretAccessKey\":\"pod-secret\","
	"\"Token\":\"pod-session\",\"Expiration\":\"2036-11-23T01:00:00Z\"}";
static const char sts_success[] =
	"<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
	"  <AssumeRoleWithWebIdentityResult>\n"
	"    <SubjectFromWebIdentityToken>system:serviceaccount:kube-system:kanna</SubjectFromWebIdentityToken>\n"
	"    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/KarpenterControllerRole/s</Arn>"
	"<AssumedRoleId>AROAEXAMPLE:s</AssumedRoleId></AssumedRoleUser>\n"
	"    <Credentials>\n"
	"      <SessionToken>sts-session</SessionToken>\n"
	"      <SecretAccessKey>sts-secret</SecretAccessKey>\n"
	"      <Expiration>2036-11-23T01:00:00Z</Expiration>\n"
	"      <AccessKeyId>ASIASTSEXAMPLE</AccessKeyId>\n"
	"    </Credentials>\n"
	"    <Audience>sts.amazonaws.com</Audience>\n"
	"  </AssumeRoleWithWebIdentityResult>\n"
	"  <ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId></ResponseMetadata>\n"
	"</AssumeRoleWithWebIdentityResponse>\n";
static const char sts_error[] =
	"<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type>"
	"<Code>InvalidIdentityToken</Code><Message>Couldn't retrieve verification key from your identity "
	"provider</Message></Error><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ErrorResponse>";

/* The fake metadata service / container agent / STS. */
static struct {
	struct MHD_Daemon *daemon;
	unsigned port;
	pthread_mutex_t lock;
	int token_puts;
	int gets_without_token;
	int sts_calls;
	char sts_body[MAX_BODY];
} fake;

struct upload {
	char data[MAX_BODY];
	size_t len;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *body)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret = MHD_queue_response(conn, status, r);

	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result route(struct MHD_Connection *conn, const char *url, const char *method,
			     const struct upload *up)
{
	const char *token = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-aws-ec2-metadata-token");
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");

	if (streq(method, "PUT") && streq(url, "/latest/api/token")) {
		if (!MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-aws-ec2-metadata-token-ttl-seconds"))
			return reply(conn, 400, "missing ttl");
		pthread_mutex_lock(&fake.lock);
		fake.token_puts++;
		pthread_mutex_unlock(&fake.lock);
		return reply(conn, 200, IMDS_TOKEN);
	}
	if (strncmp(url, "/latest/meta-data/", 18) == 0) {
		if (!token || !streq(token, IMDS_TOKEN)) {
			pthread_mutex_lock(&fake.lock);
			fake.gets_without_token++;
			pthread_mutex_unlock(&fake.lock);
			return reply(conn, 401, "IMDSv2 token required");
		}
		if (streq(url, "/latest/meta-data/iam/security-credentials/"))
			return reply(conn, 200, "kanna-node-role");
		if (streq(url, "/latest/meta-data/iam/security-credentials/kanna-node-role"))
			return reply(conn, 200, imds_credentials);
		if (streq(url, "/latest/meta-data/placement/region"))
			return reply(conn, 200, "eu-north-1");
		return reply(conn, 404, "not found");
	}
	if (streq(url, "/container/creds")) {
		if (!auth || !streq(auth, POD_IDENTITY_TOKEN))
			return reply(conn, 401, "{\"message\":\"unauthorized\"}");
		return reply(conn, 200, container_credentials);
	}
	if (streq(method, "POST") && streq(url, "/")) {
		pthread_mutex_lock(&fake.lock);
		fake.sts_calls++;
		snprintf(fake.sts_body, sizeof(fake.sts_body), "%.*s", (int)up->len, up->data);
		pthread_mutex_unlock(&fake.lock);
		if (!strstr(up->data, "Action=AssumeRoleWithWebIdentity") ||
		    !strstr(up->data, "WebIdentityToken=" WEB_IDENTITY_TOKEN))
			return reply(conn, 400, sts_error);
		return reply(conn, 200, sts_success);
	}
	return reply(conn, 404, "not found");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct upload *up = *con_cls;

	if (!up) {
		up = calloc(1, sizeof(*up));
		*con_cls = up;
		return up ? MHD_YES : MHD_NO;
	}
	if (*upload_data_size > 0) {
		size_t n = MIN(*upload_data_size, sizeof(up->data) - 1 - up->len);

		memcpy(up->data + up->len, upload_data, n);
		up->len += n;
		*upload_data_size = 0;
		return MHD_YES;
	}
	return route(conn, url, method, up);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	free(*con_cls);
	*con_cls = NULL;
}

static char tmpdir[64];

static void setup(void)
{
	static const char *const vars[] = {
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
		"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_DISABLED",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_CA_BUNDLE",
	};
	char endpoint[64];

	for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kanna-aws-creds-XXXXXX");
	cr_assert(mkdtemp(tmpdir));
	setenv("HOME", tmpdir, 1); /* no ~/.aws */
	pthread_mutex_init(&fake.lock, NULL);
	fake.daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				       on_request, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
				       MHD_OPTION_END);
	cr_assert(fake.daemon);
	fake.port = MHD_get_daemon_info(fake.daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
	/* IMDS always points at the fake so no test reaches a real one */
	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u", fake.port);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", endpoint, 1);
}

static void teardown(void)
{
	char cmd[128];

	MHD_stop_daemon(fake.daemon);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(aws_credentials, .init = setup, .fini = teardown);

static char *write_file(const char *name, const char *content)
{
	char *path = NULL;
	FILE *f;

	cr_assert(asprintf(&path, "%s/%s", tmpdir, name) > 0);
	f = fopen(path, "w");
	cr_assert(f);
	fputs(content, f);
	fclose(f);
	return path;
}

static void point_imds_at_closed_port(void)
{
	/* port 9 (discard) on loopback: refused at once */
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9", 1);
}

Test(aws_credentials, environment_comes_first_with_session_token)
{
	struct aws_credentials *c = NULL;
	char *err = NULL;

	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
	setenv("AWS_SESSION_TOKEN", "env-token", 1);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/never", 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(c->access_key_id, "AKIDENV");
	cr_assert_str_eq(c->secret_access_key, "env-secret");
	cr_assert_str_eq(c->session_token, "env-token");
	cr_assert_str_eq(c->source, "environment");
	cr_assert_eq(c->expiration, 0);
	cr_assert_not(aws_credentials_need_refresh(c, time(NULL)));
	aws_credentials_free(c);
}

/* A daemon takes the keys out of its environment once read (issue 19):
 * unset, and their text zeroed where it was. */
Test(aws_credentials, keys_taken_from_the_environment_are_gone_from_it)
{
	struct aws_credentials_options o = { .take_env = true };
	struct aws_credentials *c = NULL;
	char *err = NULL, *entry = NULL;
	extern char **environ;

	setenv("AWS_ACCESS_KEY_ID", "AKIDTAKEN", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "taken-secret", 1);
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, "AWS_SECRET_ACCESS_KEY=", 22))
			entry = *e;
	cr_assert_not_null(entry);
	cr_assert_eq(aws_credentials_resolve(&o, &c, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(c->secret_access_key, "taken-secret");
	cr_assert_null(getenv("AWS_ACCESS_KEY_ID"));
	cr_assert_null(getenv("AWS_SECRET_ACCESS_KEY"));
	cr_assert_eq(entry[0], '\0', "the secret's text is still where it was");
	aws_credentials_free(c);
}

Test(aws_credentials, environment_key_without_secret_stops_the_chain)
{
	struct aws_credentials *c = NULL;
	char *err = NULL;

	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), -EINVAL);
	cr_assert(strstr(err, "AWS_SECRET_ACCESS_KEY"), "%s", err);
	free(err);
}

Test(aws_credentials, shared_credentials_file_with_profiles)
{
	struct aws_credentials *c = NULL;
	char *err = NULL;
	char *path = write_file("credentials",
				"# kanna test\n"
				"[default]\n"
				"aws_access_key_id = AKIDDEFAULT\n"
				"aws_secret_access_key = default-secret\n"
				"\n"
				"; the launcher's own profile\n"
				"[kanna]\n"
				"aws_access_key_id=AKIDKANNA\n"
				"aws_secret_access_key=kanna-secret\n"
				"aws_session_token = kanna-token\n"
				"s3 =\n"
				"    max_concurrent_requests = 20\n");

	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	point_imds_at_closed_port();
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(c->access_key_id, "AKIDDEFAULT");
	cr_assert_null(c->session_token);
	cr_assert(strstr(c->source, "profile default"));
	aws_credentials_free(c);
	setenv("AWS_PROFILE", "kanna", 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(c->access_key_id, "AKIDKANNA");
	cr_assert_str_eq(c->session_token, "kanna-token");
	aws_credentials_free(c);
	/* an explicit option beats AWS_PROFILE */
	struct aws_credentials_options o = { .profile = "default" };
	cr_assert_eq(aws_credentials_resolve(&o, &c, &err), 0);
	cr_assert_str_eq(c->access_key_id, "AKIDDEFAULT");
	aws_credentials_free(c);
	free(path);
}

Test(aws_credentials, config_file_profile_section_holds_keys_too)
{
	struct aws_credentials *c = NULL;
	char *err = NULL;
	char *path = write_file("config",
				"[default]\nregion = us-west-2\n"
				"[profile ops]\nregion = eu-west-1\naws_access_key_id = AKIDOPS\n"
				"aws_secret_access_key = ops-secret\n"
				"[ops]\naws_access_key_id = AKIDWRONG\naws_secret_access_key = wrong\n");

	setenv("AWS_CONFIG_FILE", path, 1);
	setenv("AWS_PROFILE", "ops", 1);
	cr_assert_eq(aws_credentials_from_shared_files(NULL, &c, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(c->access_key_id, "AKIDOPS");
	aws_credentials_free(c);
	free(path);
}

Test(aws_credentials, ini_reports_syntax_errors_with_line)
{
	char *path = write_file("config", "[default]\nregion = us-west-2\nthis is not ini\n");
	char *value = NULL;
	unsigned line = 0;

	cr_assert_eq(aws_ini_lookup(path, true, "default", "output", &value, &line), -EBADMSG);
	cr_assert_eq(line, 3);
	cr_assert_eq(aws_ini_lookup(path, true, "default", "region", &value, &line), 0);
	cr_assert_str_eq(value, "us-west-2");
	free(value);
	cr_assert_eq(aws_ini_lookup(path, true, "nobody", "region", &value, &line), -EBADMSG);
	free(path);
}

Test(aws_credentials, web_identity_exchanges_the_token_at_sts)
{
	struct aws_credentials *c = NULL;
	char *err = NULL, url[64];
	char *token = write_file("token", WEB_IDENTITY_TOKEN "\n");

	snprintf(url, sizeof(url), "http://127.0.0.1:%u", fake.port);
	setenv("AWS_ENDPOINT_URL_STS", url, 1);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token, 1);
	setenv("AWS_ROLE_ARN", ROLE_ARN, 1);
	setenv("AWS_ROLE_SESSION_NAME", "kanna-launcher", 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(c->access_key_id, "ASIASTSEXAMPLE");
	cr_assert_str_eq(c->secret_access_key, "sts-secret");
	cr_assert_str_eq(c->session_token, "sts-session");
	cr_assert_gt(c->expiration, time(NULL));
	cr_assert(strstr(c->source, "web identity"));
	cr_assert(strstr(c->source, ROLE_ARN));
	cr_assert_eq(fake.sts_calls, 1);
	cr_assert(strstr(fake.sts_body, "RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2FKarpenterControllerRole"),
		  "%s", fake.sts_body);
	cr_assert(strstr(fake.sts_body, "RoleSessionName=kanna-launcher"), "%s", fake.sts_body);
	cr_assert(strstr(fake.sts_body, "Version=2011-06-15"));
	/* refreshed ahead of expiry: needed once within the refresh window */
	cr_assert_not(aws_credentials_need_refresh(c, time(NULL)));
	cr_assert(aws_credentials_need_refresh(c, c->expiration - AWS_CREDENTIALS_REFRESH_BEFORE_SEC));
	aws_credentials_free(c);
	free(token);
}

Test(aws_credentials, web_identity_surfaces_the_sts_error)
{
	struct aws_credentials *c = NULL;
	char *err = NULL, url[64];
	char *token = write_file("token", "not-the-token");

	snprintf(url, sizeof(url), "http://127.0.0.1:%u", fake.port);
	setenv("AWS_ENDPOINT_URL", url, 1);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token, 1);
	setenv("AWS_ROLE_ARN", ROLE_ARN, 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), -EACCES);
	cr_assert(strstr(err, "web identity: STS AssumeRoleWithWebIdentity"), "%s", err);
	cr_assert(strstr(err, "InvalidIdentityToken: Couldn't retrieve verification key"), "%s", err);
	free(err);
	free(token);
}

Test(aws_credentials, web_identity_needs_the_role_arn)
{
	struct aws_credentials *c = NULL;
	char *why = NULL;
	struct aws_credentials_options o = { 0 };

	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent", 1);
	cr_assert_eq(aws_credentials_from_web_identity(&o, &c, &why), -EINVAL);
	cr_assert(strstr(why, "AWS_ROLE_ARN"), "%s", why);
	free(why);
}

Test(aws_credentials, container_credentials_with_token_file)
{
	struct aws_credentials *c = NULL;
	char *err = NULL, url[96];
	char *token = write_file("pod-token", POD_IDENTITY_TOKEN "\n");

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/container/creds", fake.port);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ignored-when-the-file-is-set", 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(c->access_key_id, "ASIAPODEXAMPLE");
	cr_assert_str_eq(c->session_token, "pod-session");
	cr_assert_str_eq(c->source, "container");
	cr_assert_gt(c->expiration, 0);
	aws_credentials_free(c);
	free(token);
}

Test(aws_credentials, container_credentials_with_token_variable_and_wrong_token)
{
	struct aws_credentials *c = NULL;
	char *err = NULL, url[96];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/container/creds", fake.port);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", POD_IDENTITY_TOKEN, 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), 0, "%s", err ? err : "");
	aws_credentials_free(c);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrong", 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), -EACCES);
	cr_assert(strstr(err, "container:"), "%s", err);
	cr_assert(strstr(err, "HTTP 401"), "%s", err);
	free(err);
}

Test(aws_credentials, container_full_uri_must_be_local_or_https)
{
	struct aws_credentials *c = NULL;
	char *err = NULL;

	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.169.254.evil.example/creds", 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), -EPERM);
	cr_assert(strstr(err, "neither https nor"), "%s", err);
	free(err);
}

static int container_url(const char *full, const char *relative, char **ret, char **why)
{
	if (full)
		setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", full, 1);
	else
		unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	if (relative)
		setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", relative, 1);
	else
		unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	free(*ret);
	*ret = NULL;
	return aws_container_credentials_url(ret, why);
}

/* What a prefix comparison let through: user information that hides the
 * real host, and hosts that only start like loopback. */
Test(aws_credentials, container_url_with_a_disguised_host_is_refused)
{
	static const char *const refused[] = {
		"http://127.0.0.1:80@attacker.example/creds",
		"http://localhost@attacker.example/creds",
		"https://user:secret@creds.example/creds",
		"http://127.0.0.1.attacker.example/creds",
		"http://127.attacker.example/creds",
		"http://169.254.170.2.attacker.example/creds",
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://[fd00:ec2::24]/v1/credentials",
		"ftp://127.0.0.1/creds",
	};
	char *url = NULL, *why = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		int r = container_url(refused[i], NULL, &url, &why);

		cr_assert(r == -EPERM || r == -EINVAL, "%s accepted as %s", refused[i], url);
		cr_assert_null(url);
	}
	cr_assert_eq(container_url("http://127.0.0.1:80@attacker.example/", NULL, &url, &why), -EPERM);
	cr_assert(strstr(why, "user information"), "%s", why);
	free(why);
}

Test(aws_credentials, container_url_allows_https_loopback_and_the_ecs_and_eks_agents)
{
	static const char *const allowed[][2] = {
		{ "http://127.0.0.1:1/creds", "http://127.0.0.1:1/creds" },
		{ "http://127.0.0.2/creds", "http://127.0.0.2/creds" },
		{ "http://[::1]:8080/creds", "http://[::1]:8080/creds" },
		{ "http://localhost/creds", "http://localhost/creds" },
		{ "http://169.254.170.2/v2/credentials/x", "http://169.254.170.2/v2/credentials/x" },
		{ "http://169.254.170.23/v1/credentials", "http://169.254.170.23/v1/credentials" },
		{ "http://[fd00:ec2::23]/v1/credentials", "http://[fd00:ec2::23]/v1/credentials" },
		{ "https://creds.example/creds", "https://creds.example/creds" },
	};
	char *url = NULL, *why = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(allowed); i++) {
		cr_assert_eq(container_url(allowed[i][0], NULL, &url, &why), 0, "%s: %s", allowed[i][0],
			     why);
		cr_assert_str_eq(url, allowed[i][1]);
	}
	/* The relative URI always goes to the ECS agent, whatever it holds. */
	cr_assert_eq(container_url("https://ignored.example/", "/v2/credentials/abc", &url, &why), 0);
	cr_assert_str_eq(url, "http://169.254.170.2/v2/credentials/abc");
	cr_assert_eq(container_url(NULL, "@attacker.example/creds", &url, &why), 0);
	cr_assert_str_eq(url, "http://169.254.170.2/@attacker.example/creds");
	free(url);
	free(why);
}

/* The container agent behind TLS with a private CA: found through
 * AWS_CA_BUNDLE, as the SDKs find it; unverifiable without it. */
Test(aws_credentials, aws_ca_bundle_verifies_an_https_credentials_endpoint)
{
	struct aws_credentials *c = NULL;
	struct MHD_Daemon *d;
	struct sim_tls tls;
	char *err = NULL, url[96], *ca;

	cr_assert_eq(sim_tls_generate(&tls), 0);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS, 0, NULL, NULL, on_request,
			     NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
			     MHD_OPTION_HTTPS_MEM_KEY, tls.key_pem, MHD_OPTION_HTTPS_MEM_CERT,
			     tls.cert_pem, MHD_OPTION_END);
	cr_assert_not_null(d);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/container/creds",
		 MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", POD_IDENTITY_TOKEN, 1);
	cr_assert_lt(aws_credentials_from_container(&(struct aws_credentials_options){ 0 }, &c, &err), 0);
	cr_assert(strstr(err, "certificate"), "%s", err);
	ca = write_file("private-ca.pem", tls.ca_pem);
	setenv("AWS_CA_BUNDLE", ca, 1);
	cr_assert_eq(aws_credentials_from_container(&(struct aws_credentials_options){ 0 }, &c, &err), 0,
		     "%s", err);
	cr_assert_str_eq(c->access_key_id, "ASIAPODEXAMPLE");
	aws_credentials_free(c);
	unsetenv("AWS_CA_BUNDLE");
	free(ca);
	free(err);
	MHD_stop_daemon(d);
	sim_tls_clear(&tls);
}

Test(aws_credentials, imds_v2_token_then_role_then_credentials)
{
	struct aws_credentials *c = NULL;
	char *err = NULL, *region = NULL;

	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(c->access_key_id, "ASIAIMDSEXAMPLE");
	cr_assert_str_eq(c->session_token, "imds-session");
	cr_assert(strstr(c->source, "role kanna-node-role"), "%s", c->source);
	cr_assert_geq(fake.token_puts, 2);
	cr_assert_eq(fake.gets_without_token, 0);
	aws_credentials_free(c);
	/* the region falls back to instance metadata too */
	cr_assert_eq(aws_region_resolve(NULL, NULL, &region, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(region, "eu-north-1");
	free(region);
}

Test(aws_credentials, imds_can_be_disabled)
{
	struct aws_credentials *c = NULL;
	char *err = NULL;

	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), -ENOKEY);
	cr_assert(strstr(err, "instance metadata: disabled by AWS_EC2_METADATA_DISABLED"), "%s", err);
	cr_assert_eq(fake.token_puts, 0);
	free(err);
}

Test(aws_credentials, no_credentials_names_every_source_and_why)
{
	struct aws_credentials *c = NULL;
	char *err = NULL;

	point_imds_at_closed_port();
	cr_assert_eq(aws_credentials_resolve(NULL, &c, &err), -ENOKEY);
	cr_assert(strstr(err, "environment: AWS_ACCESS_KEY_ID not set"), "%s", err);
	cr_assert(strstr(err, "web identity: AWS_WEB_IDENTITY_TOKEN_FILE not set"), "%s", err);
	cr_assert(strstr(err, "shared files: profile default:"), "%s", err);
	cr_assert(strstr(err, "/.aws/credentials"), "%s", err);
	cr_assert(strstr(err, "container: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI not set"), "%s", err);
	cr_assert(strstr(err, "instance metadata: http://127.0.0.1:9/latest/api/token"), "%s", err);
	free(err);
}

Test(aws_credentials, parses_container_json_and_rejects_failures)
{
	static const char failed[] = "{\"Code\":\"AssumeRoleUnauthorizedAccess\",\"AccessKeyId\":\"A\","
				     "\"SecretAccessKey\":\"S\"}";
	struct aws_credentials *c = NULL;

	cr_assert_eq(aws_credentials_parse_json(container_credentials, strlen(container_credentials), &c), 0);
	cr_assert_str_eq(c->secret_access_key, "pod-secret");
	aws_credentials_free(c);
	cr_assert_eq(aws_credentials_parse_json(failed, strlen(failed), &c), -EBADMSG);
	cr_assert_eq(aws_credentials_parse_json("{}", 2, &c), -EBADMSG);
	cr_assert_eq(aws_credentials_parse_json("[", 1, &c), -EBADMSG);
}

Test(aws_credentials, parses_iso8601_with_fraction_and_offset)
{
	time_t t;

	cr_assert_eq(aws_parse_iso8601("2015-08-30T12:36:00Z", &t), 0);
	cr_assert_eq(t, 1440938160);
	cr_assert_eq(aws_parse_iso8601("2015-08-30T12:36:00.123Z", &t), 0);
	cr_assert_eq(t, 1440938160);
	cr_assert_eq(aws_parse_iso8601("2015-08-30T12:36:00+00:00", &t), 0);
	cr_assert_eq(aws_parse_iso8601("2015-08-30T12:36:00+02:00", &t), -EINVAL);
	cr_assert_eq(aws_parse_iso8601("yesterday", &t), -EINVAL);
}
