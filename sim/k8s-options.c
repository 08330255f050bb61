/*
 * The options of kanna-sim's API writes as kube-apiserver decodes and
 * validates them: CreateOptions, UpdateOptions and PatchOptions from the
 * query (dryRun, fieldManager, fieldValidation, force), DeleteOptions from
 * the body or else the query, and whether an answer is pretty-printed.
 * Refusals are upstream's, word for word: 422 Invalid
 * `<Kind>.meta.k8s.io "" is invalid: <field errors>` with one cause per
 * field error (apimachinery pkg/apis/meta/v1/validation/validation.go,
 * pkg/api/errors NewInvalid, pkg/util/validation/field errors.go, all as
 * of v1.32, the version kanna-sim reports). Called by k8s-api.c and
 * k8s-subresource.c; holds no state.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "sim/k8s-api.h"

/* validation.go FieldManagerMaxLength. */
#define K8S_FIELD_MANAGER_MAX 128
/* Values of one repeated query parameter kept (dryRun=All&dryRun=All...). */
#define K8S_QUERY_VALUES_MAX 8

/* ---- field errors, as field.ErrorList and errors.NewInvalid ------------- */

struct field_errors {
	json_t *causes;
	size_t n;
	char text[sizeof(((struct k8s_error *)0)->message)]; /* "f: body, f: body" */
};

/* Adds one error: field, its CauseType (reason) and its ErrorBody. */
static void field_error(struct field_errors *fe, const char *field, const char *reason,
			const char *fmt, ...) _printf_(4, 5);
static void field_error(struct field_errors *fe, const char *field, const char *reason,
			const char *fmt, ...)
{
	size_t len = strlen(fe->text);
	char body[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	if (!fe->causes)
		fe->causes = json_array();
	json_array_append_new(fe->causes, json_pack("{s:s, s:s, s:s}", "reason", reason,
						    "message", body, "field", field));
	snprintf(fe->text + len, sizeof(fe->text) - len, "%s%s: %s", len ? ", " : "", field, body);
	fe->n++;
}

/* 0 when there were none, else upstream's 422 for options kind
 * ("CreateOptions"): one error as is, several as "[a, b]" (utilerrors
 * aggregate), details {group meta.k8s.io, kind, causes}. */
static int field_errors_finish(struct field_errors *fe, const char *kind, struct k8s_error *err)
{
	if (fe->n == 0) {
		json_decref(fe->causes);
		return 0;
	}
	k8s_error_set(err, 422, "Invalid", "%s.meta.k8s.io \"\" is invalid: %s%s%s", kind,
		      fe->n > 1 ? "[" : "", fe->text, fe->n > 1 ? "]" : "");
	if (err) {
		json_decref(err->details);
		err->details = json_pack("{s:s, s:s, s:o}", "group", "meta.k8s.io", "kind", kind,
					 "causes", fe->causes);
	} else
		json_decref(fe->causes);
	return -EINVAL;
}

/* Decodes one UTF-8 sequence at s (n bytes left): its length, or 0 when
 * invalid (Go then reads utf8.RuneError, U+FFFD, for one byte). */
static size_t utf8_decode(const unsigned char *s, size_t n, unsigned *rune)
{
	size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	unsigned min = len == 4 ? 0x10000 : len == 3 ? 0x800 : 0x80;

	if (s[0] > 0xf4 || len == 0 || len > n)
		return 0;
	*rune = s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*rune = (*rune << 6) | (s[i] & 0x3f);
	}
	if (*rune < min || *rune > 0x10ffff || (*rune >= 0xd800 && *rune <= 0xdfff))
		return 0;
	return len;
}

/*
 * Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and
 * the ASCII space. Exact for ASCII; beyond it, the control, format,
 * separator and private-use ranges are refused (Cc, Cf, Zs but U+0020,
 * Zl, Zp, Co, and the noncharacters). Unassigned code points, which Go
 * also refuses, pass: kanna-sim carries no Unicode tables.
 */
static bool go_is_print(unsigned r)
{
	static const unsigned not_print[][2] = {
		{ 0x7f, 0xa0 }, { 0xad, 0xad }, { 0x600, 0x605 }, { 0x61c, 0x61c },
		{ 0x6dd, 0x6dd }, { 0x70f, 0x70f }, { 0x890, 0x891 }, { 0x8e2, 0x8e2 },
		{ 0x1680, 0x1680 }, { 0x180e, 0x180e }, { 0x2000, 0x200f }, { 0x2028, 0x202f },
		{ 0x205f, 0x2064 }, { 0x2066, 0x206f }, { 0x3000, 0x3000 }, { 0xe000, 0xf8ff },
		{ 0xfdd0, 0xfdef }, { 0xfeff, 0xfeff }, { 0xfff9, 0xfffb }, { 0x110bd, 0x110bd },
		{ 0x110cd, 0x110cd }, { 0x13430, 0x1343f }, { 0x1bca0, 0x1bca3 },
		{ 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f },
		{ 0xf0000, 0x10ffff },
	};

	if (r < 0x20)
		return false;
	if ((r & 0xfffe) == 0xfffe)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(not_print); i++)
		if (r >= not_print[i][0] && r <= not_print[i][1])
			return false;
	return true;
}

/* s as Go's %q (strconv.Quote) writes it, cut to fit size. */
static void go_quote(char *out, size_t size, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), o = 0;

#define PUT(...) (o += (size_t)snprintf(out + MIN(o, size), size - MIN(o, size), __VA_ARGS__))
	PUT("\"");
	while (n > 0 && o < size) {
		static const char named[] = "\a" "a" "\b" "b" "\f" "f" "\n" "n" "\r" "r" "\t" "t" "\v" "v";
		const char *e = *p && *p < 0x20 ? memchr(named, *p, sizeof(named) - 1) : NULL;
		unsigned rune;
		size_t len;

		if (*p == '"' || *p == '\\')
			PUT("\\%c", *p);
		else if (e && (e - named) % 2 == 0)
			PUT("\\%c", e[1]);
		else if (*p < 0x80 && go_is_print(*p))
			PUT("%c", *p);
		else if (*p < 0x80 || !(len = utf8_decode(p, n, &rune)))
			PUT("\\x%02x", *p);
		else {
			if (go_is_print(rune))
				PUT("%.*s", (int)len, (const char *)p);
			else if (rune <= 0xffff)
				PUT("\\u%04x", rune);
			else
				PUT("\\U%08x", rune);
			p += len - 1;
			n -= len - 1;
		}
		p++;
		n--;
	}
	PUT("\"");
#undef PUT
	if (o >= size && size > 0)
		out[size - 1] = '\0';
}

/* ---- query parameters --------------------------------------------------- */

static const char *arg(const struct k8s_request *req, const char *name)
{
	return req->arg ? req->arg(req->arg_cls, name) : NULL;
}

/* Every value of a repeated parameter, as Go's url.Values holds them. */
static size_t arg_values(const struct k8s_request *req, const char *name, const char **values,
			 size_t max)
{
	const char *v;

	if (req->arg_values)
		return req->arg_values(req->arg_cls, name, values, max);
	v = arg(req, name);
	if (v && max > 0)
		values[0] = v;
	return v ? 1 : 0;
}

int k8s_query_int(const struct k8s_request *req, const char *name, long long *ret,
		  struct k8s_error *err)
{
	const char *v = arg(req, name);
	char *end;

	*ret = 0;
	if (!v)
		return 0;
	errno = 0;
	*ret = strtoll(v, &end, 10);
	if (!*v || *end || errno == ERANGE || strchr(" \t\n\v\f\r", *v)) {
		k8s_error_set(err, 400, "BadRequest", "strconv.ParseInt: parsing \"%.64s\": %s", v,
			      errno == ERANGE ? "value out of range" : "invalid syntax");
		return -EINVAL;
	}
	return 0;
}

/* strconv.ParseBool: 1 or 0, -1 when v is none of its words. */
static int go_parse_bool(const char *v)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (streq(v, yes[i]))
			return 1;
		if (streq(v, no[i]))
			return 0;
	}
	return -1;
}

/* The Accept clause the API server answers JSON for asks pretty=1
 * (negotiation acceptMediaTypeOptions: `options.Pretty = v == "1"`). */
static bool accept_pretty(const char *accept)
{
	char buf[512], *save = NULL, *clause;

	snprintf(buf, sizeof(buf), "%s", accept ? accept : "");
	for (clause = strtok_r(buf, ",", &save); clause; clause = strtok_r(NULL, ",", &save)) {
		char *psave = NULL, *type = strtok_r(clause, ";", &psave), *param;
		bool pretty = false;

		type += strspn(type, " \t");
		type[strcspn(type, " \t")] = '\0';
		if (!streq(type, "application/json") && !streq(type, "application/*") &&
		    !streq(type, "*/*"))
			continue;
		while ((param = strtok_r(NULL, ";", &psave))) {
			param += strspn(param, " \t");
			if (strncmp(param, "pretty=", 7) == 0)
				pretty = streq(param + 7, "1");
		}
		return pretty;
	}
	return false;
}

bool k8s_request_pretty(const struct k8s_request *req)
{
	const char *v = arg(req, "pretty");

	/*
	 * negotiation NegotiateOutputMediaType and isPrettyPrint: pretty=1 in
	 * the chosen Accept clause, else a non-empty pretty parameter read by
	 * strconv.ParseBool (a word it does not know is false, not an error).
	 * Upstream also pretty-prints for User-Agents starting "curl", "Wget"
	 * or "Mozilla/5.0"; kanna-sim does not, so that the tests that read
	 * its answers with curl see one layout whatever asks.
	 */
	if (accept_pretty(req->accept))
		return true;
	return v && *v && go_parse_bool(v) == 1;
}

int k8s_response_pretty(struct k8s_response *resp)
{
	json_t *doc;
	char *pretty;

	if (!resp->body)
		return 0;
	doc = json_loadb(resp->body, resp->len, 0, NULL);
	if (!json_is_object(doc) && !json_is_array(doc)) {
		json_decref(doc);
		return 0;
	}
	/* The serializer's pretty form: json.MarshalIndent(obj, "", "  "). */
	pretty = json_dumps(doc, JSON_INDENT(2));
	json_decref(doc);
	if (!pretty)
		return -ENOMEM;
	free(resp->body);
	resp->body = pretty;
	resp->len = strlen(pretty);
	return 0;
}

/* ---- the option checks of validation.go --------------------------------- */

/* ValidateFieldManager: at most 128 bytes, printable characters only. */
static void check_field_manager(struct field_errors *fe, const char *manager)
{
	const unsigned char *p = (const unsigned char *)manager;
	size_t n = strlen(manager);
	char quoted[400];

	if (n > K8S_FIELD_MANAGER_MAX)
		field_error(fe, "fieldManager", "FieldValueTooLong",
			    "Too long: may not be more than %d bytes", K8S_FIELD_MANAGER_MAX);
	go_quote(quoted, sizeof(quoted), manager);
	/* for i, r := range fieldManager: i is a byte offset. */
	for (size_t i = 0; i < n;) {
		const unsigned char *c = p + i;
		unsigned rune = *c;
		size_t len = 1;

		if (*c >= 0x80 && !(len = utf8_decode(c, n - i, &rune))) {
			rune = 0xfffd; /* utf8.RuneError, which is printable */
			len = 1;
		}
		if (!go_is_print(rune))
			field_error(fe, "fieldManager", "FieldValueInvalid",
				    "Invalid value: %s: invalid character U+%04X (at position %zu)",
				    quoted, rune, i);
		i += len;
	}
}

/* ValidateDryRun: every value must be "All"; the value shown is the
 * []string as Go's %#v prints it. */
static void check_dry_run(struct field_errors *fe, const char *const *values, size_t n)
{
	char shown[400] = "[]string{";
	bool bad = false;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(shown);

		bad = bad || !streq(values[i], "All");
		if (i < K8S_QUERY_VALUES_MAX && len < sizeof(shown)) {
			snprintf(shown + len, sizeof(shown) - len, "%s", i ? ", " : "");
			len = strlen(shown);
			go_quote(shown + len, sizeof(shown) - len, values[i]);
		}
	}
	if (bad)
		field_error(fe, "dryRun", "FieldValueNotSupported",
			    "Unsupported value: %s}: supported values: \"All\"", shown);
}

/* ValidateFieldValidation: "", Ignore, Strict or Warn. What an unknown
 * field of a custom resource gets is k8s-custom.c's; built-in kinds are
 * decoded as Ignore decodes them. */
static void check_field_validation(struct field_errors *fe, const char *v)
{
	char quoted[300];

	if (!v || !*v || streq(v, "Ignore") || streq(v, "Strict") || streq(v, "Warn"))
		return;
	go_quote(quoted, sizeof(quoted), v);
	field_error(fe, "fieldValidation", "FieldValueNotSupported",
		    "Unsupported value: %s: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
		    quoted);
}

int k8s_write_options_parse(const struct k8s_request *req, enum k8s_options_kind kind,
			    struct k8s_write_options *opts, struct k8s_error *err)
{
	static const char *const kinds[] = {
		[K8S_OPTIONS_CREATE] = "CreateOptions", [K8S_OPTIONS_UPDATE] = "UpdateOptions",
		[K8S_OPTIONS_PATCH] = "PatchOptions", [K8S_OPTIONS_APPLY] = "PatchOptions",
	};
	const char *dry_run[K8S_QUERY_VALUES_MAX];
	const char *manager = arg(req, "fieldManager");
	struct field_errors fe = {};
	size_t n;

	memset(opts, 0, sizeof(*opts));
	/* ValidatePatchOptions: force only with apply, which needs a manager. */
	if (kind == K8S_OPTIONS_PATCH && arg(req, "force"))
		field_error(&fe, "force", "FieldValueForbidden",
			    "Forbidden: may not be specified for non-apply patch");
	if (kind == K8S_OPTIONS_APPLY && (!manager || !*manager))
		field_error(&fe, "fieldManager", "FieldValueRequired",
			    "Required value: is required for apply patch");
	/* Managers are checked and otherwise unused: kanna-sim keeps no
	 * managedFields, and invents none. */
	if (manager)
		check_field_manager(&fe, manager);
	n = arg_values(req, "dryRun", dry_run, ARRAY_SIZE(dry_run));
	check_dry_run(&fe, dry_run, MIN(n, ARRAY_SIZE(dry_run)));
	check_field_validation(&fe, arg(req, "fieldValidation"));
	/* dryrun.IsDryRun: any value at all; validation allowed only "All". */
	opts->dry_run = n > 0;
	/* handlers/rest.go fieldValidation: none given is Warn. */
	opts->field_validation = streq_ptr(arg(req, "fieldValidation"), "Strict") ? K8S_FIELD_VALIDATION_STRICT
				 : streq_ptr(arg(req, "fieldValidation"), "Ignore") ? K8S_FIELD_VALIDATION_IGNORE
										 : K8S_FIELD_VALIDATION_WARN;
	return field_errors_finish(&fe, kinds[kind], err);
}

/* ---- DeleteOptions ------------------------------------------------------ */

void k8s_delete_options_init(struct k8s_delete_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->propagation = K8S_PROPAGATE_BACKGROUND;
	opts->grace_period_seconds = -1;
}

/* The DeleteOptions fields ValidateDeleteOptions looks at, as decoded. */
struct delete_fields {
	const char *propagation; /* NULL: unset */
	int orphan;              /* -1: unset */
	const char *dry_run[K8S_QUERY_VALUES_MAX];
	size_t n_dry_run;
};

/* ValidateDeleteOptions, then opts from what passed. */
static int delete_fields_apply(const struct delete_fields *d, struct k8s_delete_options *opts,
			       struct k8s_error *err)
{
	struct field_errors fe = {};
	char quoted[300] = "";
	int r;

	if (d->propagation)
		go_quote(quoted, sizeof(quoted), d->propagation);
	if (d->orphan >= 0 && d->propagation)
		field_error(&fe, "propagationPolicy", "FieldValueInvalid",
			    "Invalid value: %s: orphanDependents and deletionPropagation cannot be both set",
			    quoted);
	if (d->propagation && !streq(d->propagation, "Foreground") &&
	    !streq(d->propagation, "Background") && !streq(d->propagation, "Orphan"))
		field_error(&fe, "propagationPolicy", "FieldValueNotSupported",
			    "Unsupported value: %s: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
			    quoted);
	check_dry_run(&fe, d->dry_run, MIN(d->n_dry_run, ARRAY_SIZE(d->dry_run)));
	r = field_errors_finish(&fe, "DeleteOptions", err);
	if (r < 0)
		return r;
	if (d->orphan >= 0)
		opts->propagation = d->orphan ? K8S_PROPAGATE_ORPHAN : K8S_PROPAGATE_BACKGROUND;
	if (d->propagation)
		opts->propagation = streq(d->propagation, "Foreground") ? K8S_PROPAGATE_FOREGROUND
				    : streq(d->propagation, "Orphan")   ? K8S_PROPAGATE_ORPHAN
									: K8S_PROPAGATE_BACKGROUND;
	opts->dry_run = d->n_dry_run > 0;
	return 0;
}

int k8s_delete_options_from_json(struct k8s_delete_options *opts, const json_t *body,
				 struct k8s_error *err)
{
	struct delete_fields d = { .orphan = -1 };
	const json_t *pre, *grace, *orphan, *dry_run, *v;
	size_t i;

	if (!body || json_is_null(body))
		return 0;
	if (!json_is_object(body)) {
		k8s_error_set(err, 400, "BadRequest", "DeleteOptions must be an object");
		return -EINVAL;
	}
	d.propagation = json_string_value(json_object_get(body, "propagationPolicy"));
	orphan = json_object_get(body, "orphanDependents");
	if (json_is_boolean(orphan))
		d.orphan = json_is_true(orphan);
	dry_run = json_object_get(body, "dryRun");
	if (dry_run && !json_is_null(dry_run) && !json_is_array(dry_run)) {
		/* The body decoder's own error, which DeleteResource passes on
		 * as it is: a 500 with no reason (handlers/delete.go). */
		k8s_error_set(err, 500, NULL,
			      "json: cannot unmarshal %s into Go struct field DeleteOptions.dryRun of type []string",
			      json_is_string(dry_run) ? "string" : json_is_object(dry_run) ? "object"
				      : json_is_boolean(dry_run) ? "bool" : "number");
		return -EINVAL;
	}
	json_array_foreach(dry_run, i, v) {
		if (!json_is_string(v)) {
			k8s_error_set(err, 500, NULL,
				      "json: cannot unmarshal %s into Go struct field DeleteOptions.dryRun of type string",
				      json_is_object(v) ? "object" : json_is_array(v) ? "array"
				      : json_is_boolean(v) ? "bool" : "number");
			return -EINVAL;
		}
		if (d.n_dry_run < ARRAY_SIZE(d.dry_run))
			d.dry_run[d.n_dry_run] = json_string_value(v);
		d.n_dry_run++;
	}
	grace = json_object_get(body, "gracePeriodSeconds");
	if (json_is_integer(grace))
		opts->grace_period_seconds = (long)json_integer_value(grace);
	pre = json_object_get(body, "preconditions");
	opts->precondition_uid = json_string_value(json_object_get(pre, "uid"));
	opts->precondition_rv = json_string_value(json_object_get(pre, "resourceVersion"));
	return delete_fields_apply(&d, opts, err);
}

int k8s_delete_options_parse(const struct k8s_request *req, const json_t *body,
			     struct k8s_delete_options *opts, struct k8s_error *err)
{
	struct delete_fields d = { .orphan = -1 };
	const char *orphan = arg(req, "orphanDependents");
	long long grace;
	int r;

	k8s_delete_options_init(opts);
	/* A body is all the options there are; the query counts only
	 * without one (handlers/delete.go DeleteResource). */
	if (body)
		return k8s_delete_options_from_json(opts, body, err);
	r = k8s_query_int(req, "gracePeriodSeconds", &grace, err);
	if (r < 0)
		return r;
	if (arg(req, "gracePeriodSeconds"))
		opts->grace_period_seconds = (long)grace;
	d.propagation = arg(req, "propagationPolicy");
	/* Convert_Slice_string_To_Pointer_bool: "", or anything but "0"
	 * and "false" in any case, is true. */
	if (orphan)
		d.orphan = k8s_query_bool(orphan);
	d.n_dry_run = arg_values(req, "dryRun", d.dry_run, ARRAY_SIZE(d.dry_run));
	return delete_fields_apply(&d, opts, err);
}
