/*
 * AWS XML responses: expat builds a small generic element tree (name, text,
 * children) under named bounds on size, depth and element count, and typed
 * accessors pick what kanna needs; aws_error_parse() reads the EC2, STS/SQS
 * and JSON-protocol error shapes. Called by the AWS client and credential
 * sources on bytes from the network, so it must never trust them: every
 * allocation is checked and every limit enforced (fuzz_aws_xml).
 */
#include "config.h"

#include <errno.h>
#include <expat.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "common/aws.h"

struct xml_builder {
	XML_Parser parser;
	struct aws_xml_node *root;
	struct aws_xml_node *current;
	unsigned depth;
	size_t elements;
	int error;
};

static void xml_node_free_one(struct aws_xml_node *n)
{
	free(n->name);
	free(n->text);
	free(n->children);
	free(n);
}

void aws_xml_free(struct aws_xml_node *n)
{
	struct aws_xml_node *top = n;

	/* iterative post-order walk: a deep document must not blow the stack */
	while (n) {
		struct aws_xml_node *parent;

		if (n->n_children > 0) {
			n = n->children[--n->n_children];
			continue;
		}
		parent = n == top ? NULL : n->parent;
		xml_node_free_one(n);
		n = parent;
	}
}

static void builder_fail(struct xml_builder *b, int error)
{
	if (!b->error)
		b->error = error;
	XML_StopParser(b->parser, XML_FALSE);
}

static int node_add_child(struct aws_xml_node *parent, struct aws_xml_node *child)
{
	if (parent->n_children == parent->children_cap) {
		size_t cap = parent->children_cap ? parent->children_cap * 2 : 4;
		struct aws_xml_node **c = realloc(parent->children, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		parent->children = c;
		parent->children_cap = cap;
	}
	parent->children[parent->n_children++] = child;
	child->parent = parent;
	return 0;
}

static void XMLCALL on_start(void *userdata, const XML_Char *name, const XML_Char **attrs)
{
	struct xml_builder *b = userdata;
	struct aws_xml_node *n;

	if (b->error)
		return;
	if (b->depth >= AWS_XML_MAX_DEPTH || b->elements >= AWS_XML_MAX_ELEMENTS ||
	    strlen(name) > AWS_XML_MAX_NAME)
		return builder_fail(b, -E2BIG);
	n = calloc(1, sizeof(*n));
	if (!n)
		return builder_fail(b, -ENOMEM);
	n->name = strdup(name);
	n->text = strdup("");
	if (!n->name || !n->text) {
		xml_node_free_one(n);
		return builder_fail(b, -ENOMEM);
	}
	if (!b->current) {
		b->root = n;
	} else if (node_add_child(b->current, n) < 0) {
		xml_node_free_one(n);
		return builder_fail(b, -ENOMEM);
	}
	b->current = n;
	b->depth++;
	b->elements++;
}

static void XMLCALL on_end(void *userdata, const XML_Char *name)
{
	struct xml_builder *b = userdata;

	if (b->error || !b->current)
		return;
	b->current = b->current->parent;
	b->depth--;
}

static void XMLCALL on_text(void *userdata, const XML_Char *s, int len)
{
	struct xml_builder *b = userdata;
	struct aws_xml_node *n = b->current;
	char *t;

	if (b->error || !n || len <= 0)
		return;
	t = realloc(n->text, n->text_len + (size_t)len + 1);
	if (!t)
		return builder_fail(b, -ENOMEM);
	memcpy(t + n->text_len, s, (size_t)len);
	n->text_len += (size_t)len;
	t[n->text_len] = '\0';
	n->text = t;
}

/* Entity declarations are how billion-laughs documents start; AWS never
 * sends a DTD, so any declaration stops the parse. */
static void XMLCALL on_entity_decl(void *userdata, const XML_Char *entity_name,
				   int is_parameter_entity, const XML_Char *value,
				   int value_length, const XML_Char *base,
				   const XML_Char *system_id, const XML_Char *public_id,
				   const XML_Char *notation_name)
{
	builder_fail(userdata, -EBADMSG);
}

int aws_xml_parse(const char *data, size_t len, struct aws_xml_node **ret)
{
	struct xml_builder b = { 0 };
	enum XML_Status status;

	if (!data || !ret)
		return -EINVAL;
	if (len > AWS_XML_MAX_BYTES)
		return -E2BIG;
	b.parser = XML_ParserCreate("UTF-8");
	if (!b.parser)
		return -ENOMEM;
	XML_SetUserData(b.parser, &b);
	XML_SetElementHandler(b.parser, on_start, on_end);
	XML_SetCharacterDataHandler(b.parser, on_text);
	XML_SetEntityDeclHandler(b.parser, on_entity_decl);
	status = XML_Parse(b.parser, data, (int)len, XML_TRUE);
	if (status != XML_STATUS_OK && !b.error)
		b.error = -EBADMSG;
	if (!b.error && !b.root)
		b.error = -EBADMSG;
	XML_ParserFree(b.parser);
	if (b.error) {
		/* b.current may point inside the tree; free from the root */
		aws_xml_free(b.root);
		return b.error;
	}
	*ret = b.root;
	return 0;
}

const struct aws_xml_node *aws_xml_child(const struct aws_xml_node *n, const char *name)
{
	if (!n)
		return NULL;
	for (size_t i = 0; i < n->n_children; i++)
		if (streq(n->children[i]->name, name))
			return n->children[i];
	return NULL;
}

const struct aws_xml_node *aws_xml_find(const struct aws_xml_node *n, const char *path)
{
	char step[AWS_XML_MAX_NAME + 1];

	while (n && path && *path) {
		const char *slash = strchr(path, '/');
		size_t len = slash ? (size_t)(slash - path) : strlen(path);

		if (len == 0 || len > AWS_XML_MAX_NAME)
			return NULL;
		memcpy(step, path, len);
		step[len] = '\0';
		n = aws_xml_child(n, step);
		path = slash ? slash + 1 : NULL;
	}
	return n;
}

const char *aws_xml_text(const struct aws_xml_node *n, const char *path)
{
	n = aws_xml_find(n, path);
	return n ? n->text : NULL;
}

const struct aws_xml_node *aws_xml_first(const struct aws_xml_node *n, const char *name)
{
	return aws_xml_child(n, name);
}

const struct aws_xml_node *aws_xml_next(const struct aws_xml_node *n)
{
	const struct aws_xml_node *p;
	size_t i;

	if (!n || !n->parent)
		return NULL;
	p = n->parent;
	for (i = 0; i < p->n_children && p->children[i] != n; i++)
		;
	for (i++; i < p->n_children; i++)
		if (streq(p->children[i]->name, n->name))
			return p->children[i];
	return NULL;
}

static void copy_bounded(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static int error_from_xml(const char *body, size_t len, struct aws_error *ret)
{
	_cleanup_(aws_xml_freep) struct aws_xml_node *root = NULL;
	const struct aws_xml_node *err;
	const char *request_id;

	if (aws_xml_parse(body, len, &root) < 0)
		return -EBADMSG;
	if (streq(root->name, "Response")) {
		/* EC2: <Response><Errors><Error>...</Errors><RequestID> */
		err = aws_xml_find(root, "Errors/Error");
		request_id = aws_xml_text(root, "RequestID");
		if (!request_id)
			request_id = aws_xml_text(root, "RequestId");
	} else if (streq(root->name, "ErrorResponse")) {
		/* STS, SQS, IAM: <ErrorResponse><Error>..</Error><RequestId>;
		 * also met with EC2's list: <ErrorResponse><Errors><Error>. */
		err = aws_xml_child(root, "Error");
		if (!err)
			err = aws_xml_find(root, "Errors/Error");
		request_id = aws_xml_text(root, "RequestId");
	} else if (streq(root->name, "Error")) {
		/* S3 style, also what some proxies answer */
		err = root;
		request_id = aws_xml_text(root, "RequestId");
	} else {
		return -EBADMSG;
	}
	if (!err || !aws_xml_text(err, "Code"))
		return -EBADMSG;
	copy_bounded(ret->code, sizeof(ret->code), aws_xml_text(err, "Code"));
	copy_bounded(ret->message, sizeof(ret->message), aws_xml_text(err, "Message"));
	copy_bounded(ret->request_id, sizeof(ret->request_id), request_id);
	return 0;
}

static int error_from_json(const char *body, size_t len, struct aws_error *ret)
{
	json_t *j = json_loadb(body, len, 0, NULL);
	const char *type, *message, *hash;

	if (!j)
		return -EBADMSG;
	type = json_string_value(json_object_get(j, "__type"));
	if (!type)
		type = json_string_value(json_object_get(j, "code"));
	message = json_string_value(json_object_get(j, "message"));
	if (!message)
		message = json_string_value(json_object_get(j, "Message"));
	if (!type) {
		json_decref(j);
		return -EBADMSG;
	}
	/* "com.amazonaws.ssm#ParameterNotFound" → "ParameterNotFound" */
	hash = strrchr(type, '#');
	copy_bounded(ret->code, sizeof(ret->code), hash ? hash + 1 : type);
	copy_bounded(ret->message, sizeof(ret->message), message);
	json_decref(j);
	return 0;
}

int aws_error_parse(const char *body, size_t len, long http_status, struct aws_error *ret)
{
	size_t i = 0;
	int r = -EBADMSG;

	memset(ret, 0, sizeof(*ret));
	ret->http_status = http_status;
	while (body && i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t'))
		i++;
	if (body && i < len && body[i] == '<')
		r = error_from_xml(body, len, ret);
	else if (body && i < len && body[i] == '{')
		r = error_from_json(body, len, ret);
	if (r < 0) {
		snprintf(ret->code, sizeof(ret->code), "HTTP%ld", http_status);
		snprintf(ret->message, sizeof(ret->message), "unrecognised error response (%zu bytes)", len);
	}
	return r;
}
