/*
 * aws_start (aws-start.h): credentials → client → STS check, each retried
 * on its own timer until it works. Owns nothing but its retry timer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws-start.h"
#include "common/log.h"

struct aws_start {
	struct loop *loop;
	struct health_server *health;
	struct aws_client_options ao;
	struct aws_start_hooks h;
	struct aws_client **client;
	sd_event_source *retry;
	bool created;
};

static int aws_start_step(struct loop *loop, void *userdata);

static void aws_start_later(struct aws_start *s, const char *why)
{
	health_server_set_ready(s->health, false, why);
	sd_event_source_disable_unref(s->retry);
	s->retry = NULL;
	if (loop_add_timer(s->loop, AWS_START_RETRY_USEC, aws_start_step, s, &s->retry) < 0)
		log_error("Failed to schedule another AWS start-up attempt: out of memory");
}

static void on_caller_identity(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct aws_start *s = userdata;
	const struct aws_credentials *creds = aws_client_credentials(c);
	const char *source = creds && creds->source ? creds->source : "the credential chain";

	if (resp->result < 0) {
		log_error("AWS refused the credentials from %s: %s; retrying every %llu s", source,
			  aws_response_strerror(resp), AWS_START_RETRY_USEC / 1000000);
		aws_start_later(s, "AWS credentials refused");
		return;
	}
	log_info("AWS credentials from %s accepted: account %s, %s", source,
		 aws_xml_text(resp->xml, "GetCallerIdentityResult/Account") ?: "?",
		 aws_xml_text(resp->xml, "GetCallerIdentityResult/Arn") ?: "?");
	if (s->h.verified)
		s->h.verified(c, s->h.userdata);
}

static int aws_start_client(struct aws_start *s)
{
	struct aws_credentials_options co = { .region = s->ao.region, .take_env = true };
	struct aws_credentials *creds = NULL;
	char *error = NULL;
	int r;

	r = aws_credentials_resolve(&co, &creds, &error);
	if (r < 0) {
		log_error("No AWS credentials: %s", error ?: strerror(-r));
		free(error);
		return r;
	}
	r = aws_client_new(s->loop, &s->ao, creds, s->client);
	aws_credentials_free(creds);
	if (r < 0)
		return log_error_errno(r, "Failed to create the AWS client: %m");
	return 0;
}

static int aws_start_step(struct loop *loop, void *userdata)
{
	struct aws_start *s = userdata;
	struct aws_query *q = NULL;
	int r;

	(void)loop;
	if (!*s->client && aws_start_client(s) < 0) {
		aws_start_later(s, "no AWS credentials");
		return 0;
	}
	if (!s->created) {
		s->created = true;
		if (s->h.created && s->h.created(*s->client, s->h.userdata) < 0) {
			loop_exit(s->loop, 1);
			return 0;
		}
	}
	if ((r = aws_query_new("GetCallerIdentity", "2011-06-15", &q)) < 0 ||
	    (r = aws_call_query(*s->client, "sts", q, on_caller_identity, s)) < 0) {
		log_error_errno(r, "Failed to call STS GetCallerIdentity: %m");
		aws_start_later(s, "AWS credentials not verified");
	}
	return 0;
}

static void warn_plain_http_endpoint(const char *variable, const char *url, void *userdata)
{
	(void)userdata;
	log_warn("%s=%s sends signed AWS requests (and the session token) over plain http to "
		 "another machine: anyone on the path can read and replay them; use https",
		 variable, url);
}

int aws_start_new(struct aws_start **ret, struct loop *loop, struct health_server *health,
		  const struct aws_client_options *ao, const struct aws_start_hooks *h,
		  struct aws_client **ret_client)
{
	struct aws_start *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	*s = (struct aws_start){ .loop = loop, .health = health, .ao = *ao, .h = *h,
				 .client = ret_client };
	*ret = s;
	aws_endpoint_overrides_check(warn_plain_http_endpoint, NULL);
	aws_start_step(loop, s);
	return 0;
}

struct aws_start *aws_start_free(struct aws_start *s)
{
	if (!s)
		return NULL;
	sd_event_source_disable_unref(s->retry);
	free(s);
	return NULL;
}
