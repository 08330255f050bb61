/*
 * Bottlerocket user data: the user's TOML with kanna's [settings.kubernetes]
 * merged in, as Karpenter does — cluster-name, api-server,
 * cluster-certificate, cluster-dns-ip and max-pods are ours; node-labels
 * are the user's plus ours (ours win); node-taints are ours only.
 *
 * No TOML library ships with the distribution, so this works on lines: it
 * recognises table headers, keys (bare, quoted, dotted) and where a value
 * ends (strings, multi-line strings, arrays and inline tables may span
 * lines), drops the user's lines that set what we own and writes ours at
 * the matching table (or at the end). The user's other lines pass through
 * byte for byte. Forms it cannot merge safely (settings.kubernetes as dotted
 * keys or inline tables) are refused with a reason, never guessed at.
 * Called by userdata.c; pure.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "launcher/userdata.h"

#define TOML_KEY_MAX 512
#define K8S_TABLE "settings.kubernetes"
#define LABELS_TABLE "settings.kubernetes.node-labels"
#define TAINTS_TABLE "settings.kubernetes.node-taints"

/* Scanner state carried across lines of one value. */
struct toml_scan {
	bool in_ml_basic, in_ml_literal;
	int depth; /* open [ and { */
};

static bool scan_done(const struct toml_scan *t)
{
	return !t->in_ml_basic && !t->in_ml_literal && t->depth == 0;
}

/* Advances t over one line of value text; -EINVAL on an unterminated
 * single-line string or unbalanced brackets. */
static int scan_value(struct toml_scan *t, const char *s)
{
	for (; *s && *s != '\n'; s++) {
		if (t->in_ml_basic) {
			if (*s == '\\' && s[1] && s[1] != '\n')
				s++;
			else if (strncmp(s, "\"\"\"", 3) == 0) {
				t->in_ml_basic = false;
				s += 2;
			}
			continue;
		}
		if (t->in_ml_literal) {
			if (strncmp(s, "'''", 3) == 0) {
				t->in_ml_literal = false;
				s += 2;
			}
			continue;
		}
		switch (*s) {
		case '#':
			return 0;
		case '"':
			if (strncmp(s, "\"\"\"", 3) == 0) {
				t->in_ml_basic = true;
				s += 2;
				break;
			}
			for (s++; *s && *s != '"' && *s != '\n'; s++)
				if (*s == '\\' && s[1] && s[1] != '\n')
					s++;
			if (*s != '"')
				return -EINVAL;
			break;
		case '\'':
			if (strncmp(s, "'''", 3) == 0) {
				t->in_ml_literal = true;
				s += 2;
				break;
			}
			for (s++; *s && *s != '\'' && *s != '\n'; s++)
				;
			if (*s != '\'')
				return -EINVAL;
			break;
		case '[':
		case '{':
			t->depth++;
			break;
		case ']':
		case '}':
			if (--t->depth < 0)
				return -EINVAL;
			break;
		}
	}
	return 0;
}

/* Reads a dotted key ("a.\"b.c\".d") at *s into out with the quotes
 * removed, up to stop ('=' or ']'); *s is left on stop. -EINVAL if malformed. */
static int read_key(const char **s, char stop, char out[TOML_KEY_MAX])
{
	const char *p = *s;
	size_t n = 0;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '"' || *p == '\'') {
			char q = *p++;

			while (*p && *p != q && *p != '\n' && n < TOML_KEY_MAX - 1) {
				if (q == '"' && *p == '\\' && p[1])
					p++;
				out[n++] = *p++;
			}
			if (*p != q)
				return -EINVAL;
			p++;
		} else {
			size_t start = n;

			while ((isalnum((unsigned char)*p) || *p == '_' || *p == '-') && n < TOML_KEY_MAX - 1)
				out[n++] = *p++;
			if (n == start)
				return -EINVAL;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == stop)
			break;
		if (*p != '.' || n >= TOML_KEY_MAX - 2)
			return -EINVAL;
		out[n++] = *p++;
	}
	out[n] = '\0';
	*s = p;
	return 0;
}

static bool starts_with_path(const char *key, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(key, prefix, n) == 0 && (key[n] == '\0' || key[n] == '.');
}

/* A TOML basic string. */
static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static bool is_our_label(const struct userdata_options *o, const char *key)
{
	for (size_t i = 0; i < o->n_labels; i++)
		if (streq(o->labels[i].key, key))
			return true;
	return false;
}

static const char *const owned_keys[] = {
	"cluster-name", "api-server", "cluster-certificate", "cluster-dns-ip", "max-pods",
};

static void put_kubernetes(FILE *f, const struct userdata_options *o)
{
	fputs("api-server = ", f);
	put_string(f, o->cluster_endpoint);
	if (o->cluster_ca) {
		fputs("\ncluster-certificate = ", f);
		put_string(f, o->cluster_ca);
	}
	if (o->cluster_dns) {
		fputs("\ncluster-dns-ip = ", f);
		put_string(f, o->cluster_dns);
	}
	fputs("\ncluster-name = ", f);
	put_string(f, o->cluster_name);
	if (o->kubelet && o->kubelet->max_pods > 0)
		fprintf(f, "\nmax-pods = %d", o->kubelet->max_pods);
	fputc('\n', f);
}

static int cmp_kv(const void *a, const void *b)
{
	return strcmp(((const struct proto_kv *)a)->key, ((const struct proto_kv *)b)->key);
}

static int cmp_taint(const void *a, const void *b)
{
	return strcmp(((const struct proto_taint *)a)->key, ((const struct proto_taint *)b)->key);
}

static int put_labels(FILE *f, const struct userdata_options *o)
{
	struct proto_kv *v = calloc(o->n_labels + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	memcpy_safe(v, o->labels, o->n_labels * sizeof(*v));
	qsort(v, o->n_labels, sizeof(*v), cmp_kv);
	for (size_t i = 0; i < o->n_labels; i++) {
		if (!userdata_kubelet_may_set_label(v[i].key))
			continue;
		put_string(f, v[i].key);
		fputs(" = ", f);
		put_string(f, v[i].value ?: "");
		fputc('\n', f);
	}
	free(v);
	return 0;
}

/* key = ["value:Effect", ...], one line per key, keys sorted. */
static int put_taints(FILE *f, const struct userdata_options *o)
{
	struct proto_taint *v = calloc(o->n_taints + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	memcpy_safe(v, o->taints, o->n_taints * sizeof(*v));
	qsort(v, o->n_taints, sizeof(*v), cmp_taint);
	for (size_t i = 0; i < o->n_taints; i++) {
		char entry[1024];

		if (i == 0 || !streq(v[i].key, v[i - 1].key)) {
			put_string(f, v[i].key);
			fputs(" = [", f);
		} else {
			fputs(", ", f);
		}
		snprintf(entry, sizeof(entry), "%s:%s", v[i].value ?: "",
			 v[i].effect == PROTO_EFFECT_NO_EXECUTE ? "NoExecute" :
			 v[i].effect == PROTO_EFFECT_PREFER_NO_SCHEDULE ? "PreferNoSchedule" : "NoSchedule");
		put_string(f, entry);
		if (i + 1 == o->n_taints || !streq(v[i].key, v[i + 1].key))
			fputs("]\n", f);
	}
	free(v);
	return 0;
}

struct merge {
	const struct userdata_options *o;
	FILE *out;
	char table[TOML_KEY_MAX];
	bool seen_k8s, seen_labels, seen_taints;
	bool dropping;          /* the current statement is ours: leave it out */
	struct toml_scan value; /* a value continues on the next line */
	unsigned line;
	char *why;
};

static int refuse(struct merge *m, const char *what)
{
	snprintf(m->why, USERDATA_WHY_MAX, "Bottlerocket userData line %u: %s", m->line, what);
	return -EINVAL;
}

static int on_header(struct merge *m, const char *s, const char *line, size_t len)
{
	bool array = s[1] == '[';
	int r;

	s += array ? 2 : 1;
	r = read_key(&s, ']', m->table);
	if (r < 0 || (array && s[1] != ']'))
		return refuse(m, "malformed table header");
	m->dropping = false;
	if (array && starts_with_path(m->table, K8S_TABLE))
		return refuse(m, "settings.kubernetes cannot be an array of tables");
	if (streq(m->table, TAINTS_TABLE))
		m->dropping = true; /* the user's taints are replaced by ours */
	fwrite(line, 1, len, m->out);
	if (streq(m->table, K8S_TABLE)) {
		m->seen_k8s = true;
		put_kubernetes(m->out, m->o);
	} else if (streq(m->table, LABELS_TABLE)) {
		m->seen_labels = true;
		return put_labels(m->out, m->o);
	} else if (streq(m->table, TAINTS_TABLE)) {
		m->seen_taints = true;
		return put_taints(m->out, m->o);
	}
	return 0;
}

/* Whether the key/value statement `key` (in m->table) is ours to set. */
static int statement_is_ours(struct merge *m, const char *key, bool *ret)
{
	char full[2 * TOML_KEY_MAX + 2];

	snprintf(full, sizeof(full), "%s%s%s", m->table, *m->table ? "." : "", key);
	*ret = false;
	if (starts_with_path(m->table, TAINTS_TABLE)) {
		*ret = true;
		return 0;
	}
	if (streq(m->table, LABELS_TABLE)) {
		*ret = is_our_label(m->o, key);
		return 0;
	}
	if (!streq(m->table, K8S_TABLE)) {
		/* settings.kubernetes reached by dotted keys or an inline table
		 * from a parent table: we cannot add ours to it. */
		if (starts_with_path(full, K8S_TABLE) || streq(full, "settings"))
			return refuse(m, "write Bottlerocket's kubernetes settings under a [settings.kubernetes] table so kanna can merge its own");
		return 0;
	}
	if (starts_with_path(key, "node-labels") || starts_with_path(key, "node-taints"))
		return refuse(m, "write node-labels and node-taints as [settings.kubernetes.node-labels] / [settings.kubernetes.node-taints] tables");
	for (size_t i = 0; i < ARRAY_SIZE(owned_keys); i++)
		if (streq(key, owned_keys[i]))
			*ret = true;
	return 0;
}

static int on_line(struct merge *m, const char *line, size_t len)
{
	const char *s = line;
	char key[TOML_KEY_MAX];
	bool ours;
	int r;

	if (!scan_done(&m->value)) {
		/* continuation of a multi-line value */
		if (scan_value(&m->value, line) < 0)
			return refuse(m, "unterminated string or unbalanced brackets");
		if (!m->dropping)
			fwrite(line, 1, len, m->out);
		return 0;
	}
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '\n' || *s == '\0' || *s == '#') {
		if (!starts_with_path(m->table, TAINTS_TABLE))
			fwrite(line, 1, len, m->out);
		return 0;
	}
	if (*s == '[')
		return on_header(m, s, line, len);
	r = read_key(&s, '=', key);
	if (r < 0)
		return refuse(m, "expected a key = value line or a [table] header");
	r = statement_is_ours(m, key, &ours);
	if (r < 0)
		return r;
	m->value = (struct toml_scan){ 0 };
	if (scan_value(&m->value, s + 1) < 0)
		return refuse(m, "unterminated string or unbalanced brackets");
	m->dropping = ours || starts_with_path(m->table, TAINTS_TABLE);
	if (!m->dropping)
		fwrite(line, 1, len, m->out);
	return 0;
}

int bottlerocket_merge(const struct userdata_options *o, const char *user_toml, char **ret,
		       char why[USERDATA_WHY_MAX])
{
	_cleanup_free_ char *buf = NULL;
	struct merge m = { .o = o, .why = why };
	size_t len = 0;
	const char *s = user_toml ?: "";
	int r = 0;

	m.out = open_memstream(&buf, &len);
	if (!m.out)
		return -ENOMEM;
	while (*s && r >= 0) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) + 1 : strlen(s);

		m.line++;
		r = on_line(&m, s, n);
		if (r >= 0 && !nl)
			fputc('\n', m.out);
		s += n;
	}
	if (r >= 0 && !scan_done(&m.value))
		r = refuse(&m, "the last value is not terminated");
	if (r >= 0 && !m.seen_k8s) {
		fputs("[" K8S_TABLE "]\n", m.out);
		put_kubernetes(m.out, o);
	}
	if (r >= 0 && !m.seen_labels && o->n_labels) {
		fputs("\n[" LABELS_TABLE "]\n", m.out);
		r = put_labels(m.out, o);
	}
	if (r >= 0 && !m.seen_taints && o->n_taints) {
		fputs("\n[" TAINTS_TABLE "]\n", m.out);
		r = put_taints(m.out, o);
	}
	if (fclose(m.out) != 0 && r >= 0)
		r = -ENOMEM;
	if (r < 0)
		return r;
	*ret = TAKE_PTR(buf);
	return 0;
}
