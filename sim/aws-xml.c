/*
 * Response rendering for kanna-sim's AWS side: a tiny XML writer (escaping
 * only; responses are written, never parsed, so expat has no job here), the
 * per-service error shapes (EC2 <Response><Errors>, STS/query <ErrorResponse>,
 * JSON {"__type","message"}), and EC2 pagination tokens. Called by every
 * action handler; it never touches the simulated cloud's state.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <time.h>

#include "sim/aws-internal.h"

static void xml_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		/* A raw CR would reach the client as LF (XML 1.0 §2.11
		 * end-of-line handling) and spoil an SQS body's MD5. */
		case '\r': fputs("&#xD;", f); break;
		default:
			/* XML 1.0 cannot carry most control characters. */
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				fputs("&#xFFFD;", f);
			else
				fputc(*s, f);
		}
	}
}

int xml_begin(struct xml *x, const char *root, const char *xmlns)
{
	*x = (struct xml){ 0 };
	x->f = open_memstream(&x->buf, &x->len);
	if (!x->f)
		return -ENOMEM;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", x->f);
	if (xmlns)
		fprintf(x->f, "<%s xmlns=\"%s\">", root, xmlns);
	else
		fprintf(x->f, "<%s>", root);
	return 0;
}

void xml_open(struct xml *x, const char *tag)
{
	fprintf(x->f, "<%s>", tag);
}

void xml_close(struct xml *x, const char *tag)
{
	fprintf(x->f, "</%s>", tag);
}

void xml_leaf(struct xml *x, const char *tag, const char *text)
{
	fprintf(x->f, "<%s>", tag);
	xml_escape(x->f, text);
	fprintf(x->f, "</%s>", tag);
}

void xml_leaff(struct xml *x, const char *tag, const char *fmt, ...)
{
	_cleanup_free_ char *s = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0) {
		/* The document then fails at xml_finish() rather than lie. */
		x->failed = true;
		return;
	}
	xml_leaf(x, tag, s);
}

void xml_leaf_bool(struct xml *x, const char *tag, bool v)
{
	xml_leaf(x, tag, v ? "true" : "false");
}

void xml_empty(struct xml *x, const char *tag)
{
	fprintf(x->f, "<%s/>", tag);
}

void xml_tags(struct xml *x, const char *set_tag, const struct sim_aws_tag *tags, size_t n)
{
	xml_open(x, set_tag);
	for (size_t i = 0; i < n; i++) {
		xml_open(x, "item");
		xml_leaf(x, "key", tags[i].key);
		xml_leaf(x, "value", tags[i].value);
		xml_close(x, "item");
	}
	xml_close(x, set_tag);
}

void xml_abort(struct xml *x)
{
	if (x->f)
		fclose(x->f);
	free(x->buf);
	*x = (struct xml){ 0 };
}

int xml_fragment_begin(struct xml *x)
{
	*x = (struct xml){ 0 };
	x->f = open_memstream(&x->buf, &x->len);
	return x->f ? 0 : -ENOMEM;
}

int xml_fragment_end(struct xml *x, char **ret)
{
	bool failed = x->failed || fflush(x->f) != 0 || ferror(x->f);

	if (fclose(x->f) != 0)
		failed = true;
	if (failed) {
		free(x->buf);
		*x = (struct xml){ 0 };
		return -ENOMEM;
	}
	*ret = x->buf;
	*x = (struct xml){ 0 };
	return 0;
}

void xml_raw(struct xml *x, const char *s)
{
	fputs(s, x->f);
}

int xml_finish(struct xml *x, const char *root, struct aws_response *resp)
{
	bool failed;

	fprintf(x->f, "</%s>\n", root);
	failed = x->failed || fflush(x->f) != 0 || ferror(x->f);
	if (fclose(x->f) != 0)
		failed = true;
	x->f = NULL;
	if (failed) {
		free(x->buf);
		*x = (struct xml){ 0 };
		return -ENOMEM;
	}
	free(resp->body);
	resp->body = x->buf;
	resp->len = x->len;
	resp->status = resp->status ?: 200;
	resp->content_type = "text/xml;charset=UTF-8";
	*x = (struct xml){ 0 };
	return 0;
}

void format_iso8601(uint64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		snprintf(out, 32, "1970-01-01T00:00:00.000Z");
		return;
	}
	/* The modulos only tell the compiler the widths; real dates fit. */
	snprintf(out, 32, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ",
		 (unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)(tm.tm_mon + 1) % 100u,
		 (unsigned)tm.tm_mday % 100u, (unsigned)tm.tm_hour % 100u,
		 (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u, (unsigned)(ms % 1000));
}

void aws_response_clear(struct aws_response *resp)
{
	free(resp->body);
	*resp = (struct aws_response){ 0 };
}

int aws_json_reply(struct aws_response *resp, json_t *body)
{
	char *s;

	if (!body)
		return -ENOMEM;
	s = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!s)
		return -ENOMEM;
	free(resp->body);
	resp->body = s;
	resp->len = strlen(s);
	resp->status = resp->status ?: 200;
	resp->content_type = "application/x-amz-json-1.1";
	return 0;
}

static int error_xml(struct aws_response *resp, const struct aws_request *req,
		     const char *code, const char *msg)
{
	struct xml x;
	int r;

	if (req->service == AWS_SERVICE_EC2) {
		r = xml_begin(&x, "Response", NULL);
		if (r < 0)
			return r;
		xml_open(&x, "Errors");
		xml_open(&x, "Error");
		xml_leaf(&x, "Code", code);
		xml_leaf(&x, "Message", msg);
		xml_close(&x, "Error");
		xml_close(&x, "Errors");
		xml_leaf(&x, "RequestID", req->request_id);
		return xml_finish(&x, "Response", resp);
	}
	/* Query protocol (STS, SQS, IAM): Sender for 4xx, Receiver for 5xx. */
	r = xml_begin(&x, "ErrorResponse", req->service == AWS_SERVICE_SQS ? SQS_XMLNS :
					   req->service == AWS_SERVICE_IAM ? IAM_XMLNS : STS_XMLNS);
	if (r < 0)
		return r;
	xml_open(&x, "Error");
	xml_leaf(&x, "Type", resp->status >= 500 ? "Receiver" : "Sender");
	xml_leaf(&x, "Code", code);
	xml_leaf(&x, "Message", msg);
	xml_close(&x, "Error");
	xml_leaf(&x, "RequestId", req->request_id);
	return xml_finish(&x, "ErrorResponse", resp);
}

int aws_error(struct aws_response *resp, const struct aws_request *req, unsigned status,
	      const char *code, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;

	resp->status = status;
	if (req->json_protocol) {
		r = aws_json_reply(resp, json_pack("{s:s, s:s}", "__type", code, "message", msg));
		if (r >= 0 && req->service == AWS_SERVICE_SQS)
			resp->content_type = "application/x-amz-json-1.0";
		return r;
	}
	return error_xml(resp, req, code, msg);
}

int aws_error_missing(struct aws_response *resp, const struct aws_request *req,
		      const char *param)
{
	return aws_error(resp, req, 400, "MissingParameter",
			 "The request must contain the parameter %s", param);
}

/* Page tokens are the decimal start index: opaque to clients, checked here. */
int aws_page_parse(const struct aws_request *req, struct aws_response *resp,
		   unsigned long min, unsigned long max, unsigned long dflt,
		   size_t *ret_start, size_t *ret_limit, bool *handled)
{
	const char *s;
	unsigned long v;

	*handled = false;
	*ret_start = 0;
	*ret_limit = dflt;
	s = aws_params_get(req->params, "MaxResults");
	if (s) {
		if (aws_parse_uint(s, ULONG_MAX, &v) < 0 || v < min || v > max) {
			*handled = true;
			return aws_error(resp, req, 400, "InvalidParameterValue",
					 "Value (%s) for parameter MaxResults is invalid. Expecting a value between %lu and %lu.",
					 s, min, max);
		}
		*ret_limit = v;
	}
	s = aws_params_get(req->params, "NextToken");
	if (s && *s) {
		if (strncmp(s, "sim-", 4) != 0 || aws_parse_uint(s + 4, SIZE_MAX, &v) < 0) {
			*handled = true;
			return aws_error(resp, req, 400, "InvalidParameterValue",
					 "Value (%s) for parameter NextToken is invalid.", s);
		}
		*ret_start = v;
	}
	return 0;
}

void aws_page_next_token(struct xml *x, size_t next)
{
	xml_leaff(x, "nextToken", "sim-%zu", next);
}
