/*
 * AWS credentials: the value type, the standard provider chain
 * (environment, web identity, shared files, container, instance metadata)
 * and the pure sources and parsers (environment, shared files, the STS XML
 * and container/IMDS JSON documents). The HTTP sources live in
 * aws-credentials-http.c. Called by daemons at start and by aws_client to
 * refresh. Never logs secrets; "no credentials" names every source tried.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/aws-internal.h"

static void free_secret(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

void aws_credentials_free(struct aws_credentials *c)
{
	if (!c)
		return;
	free_secret(c->access_key_id);
	free_secret(c->secret_access_key);
	free_secret(c->session_token);
	free(c->source);
	free(c);
}

/* New credentials from borrowed strings; token may be NULL or "". */
static int credentials_new(const char *key_id, const char *secret, const char *token,
			   time_t expiration, const char *source, struct aws_credentials **ret)
{
	_cleanup_(aws_credentials_freep) struct aws_credentials *c = NULL;

	if (!key_id || !*key_id || !secret || !*secret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->access_key_id = strdup(key_id);
	c->secret_access_key = strdup(secret);
	c->source = strdup(source ? source : "unknown");
	if (token && *token)
		c->session_token = strdup(token);
	if (!c->access_key_id || !c->secret_access_key || !c->source ||
	    (token && *token && !c->session_token))
		return -ENOMEM;
	c->expiration = expiration;
	*ret = TAKE_PTR(c);
	return 0;
}

int aws_credentials_dup(const struct aws_credentials *c, struct aws_credentials **ret)
{
	if (!c)
		return -EINVAL;
	return credentials_new(c->access_key_id, c->secret_access_key, c->session_token,
			       c->expiration, c->source, ret);
}

bool aws_credentials_need_refresh(const struct aws_credentials *c, time_t now)
{
	return c && c->expiration != 0 && now + AWS_CREDENTIALS_REFRESH_BEFORE_SEC >= c->expiration;
}

int aws_parse_iso8601(const char *s, time_t *ret)
{
	struct tm tm = { 0 };
	const char *p;

	if (!s)
		return -EINVAL;
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -EINVAL;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (!streq(p, "Z") && !streq(p, "+00:00") && !streq(p, "+0000"))
		return -EINVAL;
	*ret = timegm(&tm);
	return 0;
}

int aws_credentials_from_env(struct aws_credentials **ret, char **ret_why)
{
	const char *id = getenv("AWS_ACCESS_KEY_ID");
	const char *secret = getenv("AWS_SECRET_ACCESS_KEY");

	if (!id || !*id) {
		aws_set_why(ret_why, "AWS_ACCESS_KEY_ID not set");
		return -ENOENT;
	}
	if (!secret || !*secret) {
		aws_set_why(ret_why, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
		return -EINVAL;
	}
	return credentials_new(id, secret, getenv("AWS_SESSION_TOKEN"), 0, "environment", ret);
}

/* Keys of profile in one shared file; -ENOENT if absent there. */
static int credentials_from_file(const char *path, bool config_file, const char *profile,
				 struct aws_credentials **ret, char **ret_why)
{
	_cleanup_free_ char *id = NULL, *secret = NULL, *token = NULL, *source = NULL;
	unsigned line = 0;
	int r;

	r = aws_ini_lookup(path, config_file, profile, "aws_access_key_id", &id, &line);
	if (r == -EBADMSG) {
		aws_set_why(ret_why, "%s:%u: syntax error", path, line);
		return r;
	}
	if (r < 0) {
		aws_set_why(ret_why, "%s: %s", path,
			    r == -ENOENT && access(path, R_OK) == 0 ? "profile has no aws_access_key_id"
								     : strerror(-r));
		return r == -ENOMEM ? r : -ENOENT;
	}
	r = aws_ini_lookup(path, config_file, profile, "aws_secret_access_key", &secret, &line);
	if (r < 0) {
		aws_set_why(ret_why, "%s: profile %s has aws_access_key_id but no aws_secret_access_key",
			    path, profile);
		return r == -ENOMEM ? r : -EINVAL;
	}
	r = aws_ini_lookup(path, config_file, profile, "aws_session_token", &token, &line);
	if (r < 0 && r != -ENOENT)
		return r;
	if (asprintf(&source, "shared file %s (profile %s)", path, profile) < 0)
		return -ENOMEM;
	return credentials_new(id, secret, token, 0, source, ret);
}

int aws_credentials_from_shared_files(const char *profile, struct aws_credentials **ret,
				      char **ret_why)
{
	_cleanup_free_ char *cred_path = NULL, *config_path = NULL, *why1 = NULL, *why2 = NULL;
	int r;

	if (!profile || !*profile)
		profile = getenv("AWS_PROFILE");
	if (!profile || !*profile)
		profile = "default";
	r = aws_shared_file_path(false, &cred_path);
	if (r == -ENOMEM)
		return r;
	if (r >= 0) {
		r = credentials_from_file(cred_path, false, profile, ret, &why1);
		if (r != -ENOENT) {
			if (r < 0 && ret_why)
				*ret_why = TAKE_PTR(why1);
			return r;
		}
	}
	r = aws_shared_file_path(true, &config_path);
	if (r == -ENOMEM)
		return r;
	if (r >= 0) {
		r = credentials_from_file(config_path, true, profile, ret, &why2);
		if (r != -ENOENT) {
			if (r < 0 && ret_why)
				*ret_why = TAKE_PTR(why2);
			return r;
		}
	}
	aws_set_why(ret_why, "profile %s: %s; %s", profile,
		    why1 ? why1 : "no credentials file (HOME unset)",
		    why2 ? why2 : "no config file (HOME unset)");
	return -ENOENT;
}

int aws_credentials_parse_sts_xml(const char *body, size_t len, struct aws_credentials **ret)
{
	_cleanup_(aws_xml_freep) struct aws_xml_node *root = NULL;
	const struct aws_xml_node *c;
	time_t expiration = 0;
	int r;

	r = aws_xml_parse(body, len, &root);
	if (r < 0)
		return r;
	/* <AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials> */
	if (root->n_children == 0)
		return -EBADMSG;
	c = NULL;
	for (size_t i = 0; i < root->n_children && !c; i++)
		c = aws_xml_child(root->children[i], "Credentials");
	if (!c)
		return -EBADMSG;
	if (aws_parse_iso8601(aws_xml_text(c, "Expiration"), &expiration) < 0)
		return -EBADMSG;
	r = credentials_new(aws_xml_text(c, "AccessKeyId"), aws_xml_text(c, "SecretAccessKey"),
			    aws_xml_text(c, "SessionToken"), expiration, "web identity", ret);
	return r == -EINVAL ? -EBADMSG : r;
}

int aws_credentials_parse_json(const char *body, size_t len, struct aws_credentials **ret)
{
	json_t *j = json_loadb(body, len, 0, NULL);
	const char *code, *expiration_s;
	time_t expiration = 0;
	int r;

	if (!j || !json_is_object(j)) {
		json_decref(j);
		return -EBADMSG;
	}
	code = json_string_value(json_object_get(j, "Code"));
	expiration_s = json_string_value(json_object_get(j, "Expiration"));
	if ((code && !streq(code, "Success")) ||
	    (expiration_s && aws_parse_iso8601(expiration_s, &expiration) < 0)) {
		json_decref(j);
		return -EBADMSG;
	}
	r = credentials_new(json_string_value(json_object_get(j, "AccessKeyId")),
			    json_string_value(json_object_get(j, "SecretAccessKey")),
			    json_string_value(json_object_get(j, "Token")), expiration, "http", ret);
	json_decref(j);
	return r == -EINVAL ? -EBADMSG : r;
}

typedef int (*source_fn)(const struct aws_credentials_options *opts,
			 struct aws_credentials **ret, char **ret_why);

/*
 * Unsets name and zeroes its "NAME=value" text where it was: the initial
 * environment, on the stack, is what /proc/<pid>/environ shows, and
 * unsetenv() only unlinks it.
 */
static void env_take(const char *name)
{
	size_t len = strlen(name);

	for (char **e = environ; e && *e; e++) {
		char *entry = *e;

		if (strncmp(entry, name, len) == 0 && entry[len] == '=') {
			unsetenv(name);
			OPENSSL_cleanse(entry, strlen(entry));
			return;
		}
	}
}

static int source_env(const struct aws_credentials_options *opts, struct aws_credentials **ret,
		      char **ret_why)
{
	int r = aws_credentials_from_env(ret, ret_why);

	if (r >= 0 && opts->take_env) {
		env_take("AWS_ACCESS_KEY_ID");
		env_take("AWS_SECRET_ACCESS_KEY");
		env_take("AWS_SESSION_TOKEN");
	}
	return r;
}

static int source_shared_files(const struct aws_credentials_options *opts,
			       struct aws_credentials **ret, char **ret_why)
{
	return aws_credentials_from_shared_files(opts->profile, ret, ret_why);
}

static const struct {
	const char *name;
	source_fn fn;
} chain[] = {
	{ "environment", source_env },
	{ "web identity", aws_credentials_from_web_identity },
	{ "shared files", source_shared_files },
	{ "container", aws_credentials_from_container },
	{ "instance metadata", aws_credentials_from_imds },
};

int aws_credentials_resolve(const struct aws_credentials_options *opts,
			    struct aws_credentials **ret, char **ret_error)
{
	static const struct aws_credentials_options no_opts = { 0 };
	_cleanup_free_ char *tried = NULL;
	size_t size = 0;
	FILE *f;
	int r = -ENOKEY;

	if (!opts)
		opts = &no_opts;
	f = open_memstream(&tried, &size);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(chain); i++) {
		_cleanup_free_ char *why = NULL;

		r = chain[i].fn(opts, ret, &why);
		if (r >= 0)
			break;
		fprintf(f, "%s%s: %s", i ? "; " : "", chain[i].name, why ? why : strerror(-r));
		if (r != -ENOENT)
			break; /* a configured source that fails stops the chain */
		r = -ENOKEY;
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	if (r < 0 && ret_error)
		*ret_error = TAKE_PTR(tried);
	return r;
}
