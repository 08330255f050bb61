/*
 * CEL's parser, for the subset the shipped CRDs' x-kubernetes-validations
 * use (listed in cel.h's callers' rules, doc in README's sim section):
 * literals (int, string, bool, null, lists), self and oldSelf, field
 * selection, indexing, ! && || ?:, == != < <= > >= in, the has() all()
 * exists() filter() macros and the functions size int startsWith endsWith
 * matches find split. The grammar follows cel-spec's langdef.md; anything
 * else (arithmetic, doubles, maps, other functions, raw or bytes strings)
 * is refused with the construct and its column, never guessed at.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cel-internal.h"
#include "sim/cel.h"

/* cel-go's parser refuses deeper nesting too (its maxRecursionDepth). */
#define CEL_MAX_DEPTH 100
/* Macro variables in scope at once; the CRDs nest two (x, y). */
#define CEL_MAX_SCOPE 8

enum tok {
	T_EOF, T_IDENT, T_INT, T_STRING,
	T_LPAREN, T_RPAREN, T_LBRACKET, T_RBRACKET, T_DOT, T_COMMA, T_QUESTION, T_COLON,
	T_NOT, T_AND, T_OR, T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
};

struct parser {
	const char *src, *p;
	enum tok tok;
	const char *tok_start;
	char *text; /* T_IDENT, T_STRING: the (unescaped) text */
	size_t text_len;
	json_int_t ival;
	int depth;
	const char *scope[CEL_MAX_SCOPE];
	int nscope;
	bool uses_old_self;
	int error; /* -EINVAL or -ENOMEM once failed */
	char *err;
	size_t errlen;
};

static struct cel_node *fail(struct parser *ps, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static struct cel_node *fail(struct parser *ps, const char *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->error)
		return NULL;
	ps->error = -EINVAL;
	n = snprintf(ps->err, ps->errlen, "column %d: ", (int)(at - ps->src) + 1);
	if (n < 0 || (size_t)n >= ps->errlen)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return NULL;
}

static struct cel_node *oom(struct parser *ps)
{
	if (!ps->error) {
		ps->error = -ENOMEM;
		snprintf(ps->err, ps->errlen, "out of memory");
	}
	return NULL;
}

void cel_node_free(struct cel_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nkids; i++)
		cel_node_free(n->kids[i]);
	free(n->kids);
	free(n->str);
	cel_regex_free(n->re);
	free(n);
}

static struct cel_node *node(struct parser *ps, enum cel_op op)
{
	struct cel_node *n = calloc(1, sizeof(*n));

	if (!n)
		return oom(ps);
	n->op = op;
	return n;
}

/* Appends kid to n; on failure frees both. */
static struct cel_node *add(struct parser *ps, struct cel_node *n, struct cel_node *kid)
{
	struct cel_node **k;

	if (!n || !kid) {
		cel_node_free(n);
		cel_node_free(kid);
		return NULL;
	}
	k = realloc(n->kids, (n->nkids + 1) * sizeof(*k));
	if (!k) {
		cel_node_free(n);
		cel_node_free(kid);
		return oom(ps);
	}
	n->kids = k;
	n->kids[n->nkids++] = kid;
	return n;
}

static bool is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const char *const reserved[] = {
	"as", "break", "const", "continue", "else", "for", "function", "if", "import",
	"let", "loop", "package", "namespace", "return", "var", "void", "while",
};

/* A quoted string (single or double quotes) with cel-spec's simple escapes. */
static int lex_string(struct parser *ps)
{
	char quote = *ps->p++;
	char *buf;
	size_t n = 0;

	if (ps->p[0] == quote && ps->p[1] == quote)
		return fail(ps, ps->tok_start, "triple-quoted strings are not supported"), -EINVAL;
	buf = malloc(strlen(ps->p) + 1);
	if (!buf)
		return oom(ps), -ENOMEM;
	for (;;) {
		char c = *ps->p;

		if (c == '\0' || c == '\n' || c == '\r') {
			free(buf);
			return fail(ps, ps->tok_start, "unterminated string literal"), -EINVAL;
		}
		ps->p++;
		if (c == quote)
			break;
		if (c == '\\') {
			static const char from[] = "abfnrtv\\'\"`?", to[] = "\a\b\f\n\r\t\v\\'\"`?";
			const char *e = *ps->p ? strchr(from, *ps->p) : NULL;

			if (!e) {
				free(buf);
				return fail(ps, ps->p - 1, "escape sequence \\%c is not supported",
					    *ps->p ? *ps->p : ' '), -EINVAL;
			}
			c = to[e - from];
			ps->p++;
		}
		buf[n++] = c;
	}
	buf[n] = '\0';
	ps->text = buf;
	ps->text_len = n;
	return 0;
}

static int next(struct parser *ps)
{
	static const struct {
		const char *text;
		enum tok tok;
	} punct[] = {
		{ "&&", T_AND }, { "||", T_OR }, { "==", T_EQ }, { "!=", T_NE }, { "<=", T_LE },
		{ ">=", T_GE }, { "(", T_LPAREN }, { ")", T_RPAREN }, { "[", T_LBRACKET },
		{ "]", T_RBRACKET }, { ".", T_DOT }, { ",", T_COMMA }, { "?", T_QUESTION },
		{ ":", T_COLON }, { "!", T_NOT }, { "<", T_LT }, { ">", T_GT },
	};

	free(ps->text);
	ps->text = NULL;
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\f')
		ps->p++;
	if (ps->p[0] == '/' && ps->p[1] == '/')
		return fail(ps, ps->p, "comments are not supported"), -EINVAL;
	ps->tok_start = ps->p;
	if (*ps->p == '\0') {
		ps->tok = T_EOF;
		return 0;
	}
	if (*ps->p == '"' || *ps->p == '\'') {
		ps->tok = T_STRING;
		return lex_string(ps);
	}
	if (is_ident_start(*ps->p)) {
		const char *s = ps->p;

		while (is_ident_start(*ps->p) || is_digit(*ps->p))
			ps->p++;
		if ((ps->p - s == 1 && (*s == 'r' || *s == 'R' || *s == 'b' || *s == 'B')) &&
		    (*ps->p == '"' || *ps->p == '\''))
			return fail(ps, s, "raw and bytes string literals are not supported"), -EINVAL;
		for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
			if (strlen(reserved[i]) == (size_t)(ps->p - s) &&
			    !memcmp(reserved[i], s, (size_t)(ps->p - s)))
				return fail(ps, s, "reserved identifier '%s'", reserved[i]), -EINVAL;
		ps->text = strndup(s, (size_t)(ps->p - s));
		if (!ps->text)
			return oom(ps), -ENOMEM;
		ps->text_len = (size_t)(ps->p - s);
		ps->tok = T_IDENT;
		return 0;
	}
	if (is_digit(*ps->p)) {
		json_int_t v = 0;

		if (ps->p[0] == '0' && (ps->p[1] == 'x' || ps->p[1] == 'X'))
			return fail(ps, ps->p, "hexadecimal literals are not supported"), -EINVAL;
		while (is_digit(*ps->p)) {
			if (v > (LLONG_MAX - (*ps->p - '0')) / 10)
				return fail(ps, ps->tok_start, "integer literal out of range"), -EINVAL;
			v = v * 10 + (*ps->p++ - '0');
		}
		if (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E')
			return fail(ps, ps->tok_start, "double literals are not supported"), -EINVAL;
		if (*ps->p == 'u' || *ps->p == 'U')
			return fail(ps, ps->tok_start, "unsigned literals are not supported"), -EINVAL;
		ps->ival = v;
		ps->tok = T_INT;
		return 0;
	}
	for (size_t i = 0; i < sizeof(punct) / sizeof(punct[0]); i++) {
		size_t n = strlen(punct[i].text);

		if (!strncmp(ps->p, punct[i].text, n)) {
			ps->p += n;
			ps->tok = punct[i].tok;
			return 0;
		}
	}
	if (strchr("+-*/%", *ps->p))
		return fail(ps, ps->p, "arithmetic operator '%c' is not supported", *ps->p), -EINVAL;
	if (*ps->p == '{')
		return fail(ps, ps->p, "map and message literals are not supported"), -EINVAL;
	return fail(ps, ps->p, "character '%c' is not supported", *ps->p), -EINVAL;
}

static bool accept(struct parser *ps, enum tok t)
{
	if (ps->error || ps->tok != t)
		return false;
	next(ps);
	return !ps->error;
}

static bool expect(struct parser *ps, enum tok t, const char *what)
{
	if (accept(ps, t))
		return true;
	fail(ps, ps->tok_start, "expected %s", what);
	return false;
}

static struct cel_node *expr(struct parser *ps);

/* ( args ) after a function or method name; kids already hold the receiver. */
static struct cel_node *args(struct parser *ps, struct cel_node *n, size_t want, const char *name)
{
	size_t have = 0;

	if (!n)
		return NULL;
	if (!accept(ps, T_RPAREN)) {
		do {
			n = add(ps, n, expr(ps));
			have++;
		} while (n && accept(ps, T_COMMA));
		if (n && !expect(ps, T_RPAREN, "')'")) {
			cel_node_free(n);
			return NULL;
		}
	}
	if (n && have != want) {
		cel_node_free(n);
		return fail(ps, ps->tok_start, "%s() takes %zu argument(s), not %zu", name, want, have);
	}
	return n;
}

/* recv.all(x, p), exists, filter: the variable is in scope in p only. */
static struct cel_node *macro(struct parser *ps, struct cel_node *recv, enum cel_op op,
			      const char *name, const char *at)
{
	struct cel_node *n = add(ps, node(ps, op), recv);

	if (!n)
		return NULL;
	if (ps->tok != T_IDENT) {
		cel_node_free(n);
		return fail(ps, at, "%s() needs a variable name first", name);
	}
	if (ps->nscope == CEL_MAX_SCOPE) {
		cel_node_free(n);
		return fail(ps, at, "macros nested too deep");
	}
	n->str = ps->text;
	ps->text = NULL;
	next(ps);
	if (!expect(ps, T_COMMA, "','")) {
		cel_node_free(n);
		return NULL;
	}
	ps->scope[ps->nscope++] = n->str;
	n = add(ps, n, expr(ps));
	ps->nscope--;
	if (n && !expect(ps, T_RPAREN, "')'")) {
		cel_node_free(n);
		return NULL;
	}
	return n;
}

static struct cel_node *method(struct parser *ps, struct cel_node *recv, const char *at)
{
	static const struct {
		const char *name;
		enum cel_fn fn;
		size_t args;
	} methods[] = {
		{ "size", CEL_FN_SIZE, 0 },		{ "startsWith", CEL_FN_STARTS_WITH, 1 },
		{ "endsWith", CEL_FN_ENDS_WITH, 1 },	{ "matches", CEL_FN_MATCHES, 1 },
		{ "find", CEL_FN_FIND, 1 },		{ "split", CEL_FN_SPLIT, 1 },
	};
	char *name = ps->text;
	struct cel_node *n = NULL;

	ps->text = NULL;
	next(ps);
	if (!expect(ps, T_LPAREN, "'('")) {
		cel_node_free(recv);
		free(name);
		return NULL;
	}
	if (!strcmp(name, "all") || !strcmp(name, "exists") || !strcmp(name, "filter")) {
		n = macro(ps, recv, name[0] == 'a' ? CEL_ALL : name[0] == 'e' ? CEL_EXISTS : CEL_FILTER,
			  name, at);
		free(name);
		return n;
	}
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (strcmp(name, methods[i].name))
			continue;
		n = node(ps, CEL_CALL);
		if (n)
			n->fn = methods[i].fn;
		n = args(ps, add(ps, n, recv), methods[i].args, name);
		if (n && (n->fn == CEL_FN_MATCHES || n->fn == CEL_FN_FIND)) {
			struct cel_node *pat = n->kids[1];
			int r;

			/* Compiled once here: the rules use literal patterns only. */
			if (pat->op != CEL_STRING) {
				cel_node_free(n);
				n = fail(ps, at, "%s() needs a string literal pattern", name);
			} else if ((r = cel_regex_compile(pat->str, pat->len, n->fn == CEL_FN_FIND, &n->re, ps->err,
							  ps->errlen)) < 0) {
				cel_node_free(n);
				n = NULL;
				ps->error = r;
			}
		}
		free(name);
		return n;
	}
	cel_node_free(recv);
	fail(ps, at, "function '%s' is not supported", name);
	free(name);
	return NULL;
}

static struct cel_node *global_call(struct parser *ps, char *name, const char *at)
{
	struct cel_node *n;

	next(ps); /* the '(' */
	if (!strcmp(name, "has")) {
		struct cel_node *arg = expr(ps);

		if (arg && arg->op != CEL_SELECT) {
			cel_node_free(arg);
			arg = fail(ps, at, "has() needs a field selection, like has(self.field)");
		}
		if (!arg || !expect(ps, T_RPAREN, "')'")) {
			cel_node_free(arg);
			return NULL;
		}
		arg->op = CEL_HAS;
		return arg;
	}
	if (strcmp(name, "size") && strcmp(name, "int"))
		return fail(ps, at, "function '%s' is not supported", name);
	n = node(ps, CEL_CALL);
	if (n)
		n->fn = name[0] == 's' ? CEL_FN_SIZE : CEL_FN_INT;
	return args(ps, n, 1, name);
}

static struct cel_node *primary(struct parser *ps)
{
	const char *at = ps->tok_start;
	struct cel_node *n;

	if (ps->error)
		return NULL;
	switch (ps->tok) {
	case T_INT:
		n = node(ps, CEL_INT);
		if (n)
			n->ival = ps->ival;
		next(ps);
		return n;
	case T_STRING:
		n = node(ps, CEL_STRING);
		if (n) {
			n->str = ps->text;
			n->len = ps->text_len;
			ps->text = NULL;
		}
		next(ps);
		return n;
	case T_LPAREN:
		next(ps);
		n = expr(ps);
		if (n && !expect(ps, T_RPAREN, "')'")) {
			cel_node_free(n);
			return NULL;
		}
		return n;
	case T_LBRACKET:
		next(ps);
		n = node(ps, CEL_LIST);
		if (n && !accept(ps, T_RBRACKET)) {
			do
				n = add(ps, n, expr(ps));
			while (n && accept(ps, T_COMMA));
			if (n && !expect(ps, T_RBRACKET, "']'")) {
				cel_node_free(n);
				return NULL;
			}
		}
		return n;
	case T_IDENT:
		break;
	default:
		return fail(ps, at, "unexpected %s", ps->tok == T_EOF ? "end of rule" : "token");
	}
	if (!strcmp(ps->text, "true") || !strcmp(ps->text, "false")) {
		n = node(ps, CEL_BOOL);
		if (n)
			n->ival = ps->text[0] == 't';
		next(ps);
		return n;
	}
	if (!strcmp(ps->text, "null")) {
		next(ps);
		return node(ps, CEL_NULL);
	}
	if (!strcmp(ps->text, "in"))
		return fail(ps, at, "unexpected 'in'");
	{
		char *name = ps->text;

		ps->text = NULL;
		next(ps);
		if (ps->tok == T_LPAREN) {
			n = global_call(ps, name, at);
			free(name);
			return n;
		}
		for (int i = ps->nscope - 1; i >= 0; i--)
			if (!strcmp(ps->scope[i], name))
				goto bound;
		if (!strcmp(name, "oldSelf"))
			ps->uses_old_self = true;
		else if (strcmp(name, "self")) {
			fail(ps, at, "undeclared reference to '%s'", name);
			free(name);
			return NULL;
		}
bound:
		n = node(ps, CEL_IDENT);
		if (!n) {
			free(name);
			return NULL;
		}
		n->str = name;
		return n;
	}
}

static struct cel_node *member(struct parser *ps)
{
	struct cel_node *n = primary(ps);

	while (n && !ps->error) {
		const char *at = ps->tok_start;

		if (accept(ps, T_DOT)) {
			struct cel_node *sel;

			if (ps->tok != T_IDENT) {
				cel_node_free(n);
				return fail(ps, ps->tok_start, "expected a field name after '.'");
			}
			if (ps->p[strspn(ps->p, " \t\n\r\f")] == '(') {
				n = method(ps, n, at);
				continue;
			}
			sel = add(ps, node(ps, CEL_SELECT), n);
			if (!sel)
				return NULL;
			sel->str = ps->text;
			ps->text = NULL;
			n = sel;
			next(ps);
		} else if (accept(ps, T_LBRACKET)) {
			n = add(ps, add(ps, node(ps, CEL_INDEX), n), expr(ps));
			if (n && !expect(ps, T_RBRACKET, "']'")) {
				cel_node_free(n);
				return NULL;
			}
		} else {
			break;
		}
	}
	if (ps->error) {
		cel_node_free(n);
		return NULL;
	}
	return n;
}

static struct cel_node *unary(struct parser *ps)
{
	struct cel_node *n;

	if (ps->tok != T_NOT)
		return member(ps);
	if (++ps->depth > CEL_MAX_DEPTH) {
		ps->depth--;
		return fail(ps, ps->tok_start, "expression nested too deep");
	}
	next(ps);
	n = add(ps, node(ps, CEL_NOT), unary(ps));
	ps->depth--;
	return n;
}

static struct cel_node *relation(struct parser *ps)
{
	struct cel_node *n = unary(ps);

	for (;;) {
		enum cel_op op;

		if (!n || ps->error)
			break;
		switch (ps->tok) {
		case T_EQ: op = CEL_EQ; break;
		case T_NE: op = CEL_NE; break;
		case T_LT: op = CEL_LT; break;
		case T_LE: op = CEL_LE; break;
		case T_GT: op = CEL_GT; break;
		case T_GE: op = CEL_GE; break;
		case T_IDENT:
			if (!strcmp(ps->text, "in")) {
				op = CEL_IN;
				break;
			}
			/* fall through */
		default:
			return n;
		}
		next(ps);
		n = add(ps, add(ps, node(ps, op), n), unary(ps));
	}
	if (ps->error) {
		cel_node_free(n);
		return NULL;
	}
	return n;
}

static struct cel_node *binary(struct parser *ps, enum tok tok, enum cel_op op,
			       struct cel_node *(*operand)(struct parser *))
{
	struct cel_node *n = operand(ps);

	while (n && accept(ps, tok))
		n = add(ps, add(ps, node(ps, op), n), operand(ps));
	if (ps->error) {
		cel_node_free(n);
		return NULL;
	}
	return n;
}

static struct cel_node *conjunction(struct parser *ps)
{
	return binary(ps, T_AND, CEL_AND, relation);
}

static struct cel_node *disjunction(struct parser *ps)
{
	return binary(ps, T_OR, CEL_OR, conjunction);
}

static struct cel_node *expr(struct parser *ps)
{
	struct cel_node *n;

	if (++ps->depth > CEL_MAX_DEPTH) {
		ps->depth--;
		return fail(ps, ps->tok_start, "expression nested too deep");
	}
	n = disjunction(ps);
	if (n && accept(ps, T_QUESTION)) {
		n = add(ps, add(ps, node(ps, CEL_COND), n), disjunction(ps));
		if (n && !expect(ps, T_COLON, "':'")) {
			cel_node_free(n);
			n = NULL;
		}
		n = add(ps, n, expr(ps));
	}
	ps->depth--;
	if (ps->error) {
		cel_node_free(n);
		return NULL;
	}
	return n;
}

int cel_compile(const char *rule, struct cel_program **out, char *err, size_t errlen)
{
	struct parser ps = { .src = rule, .p = rule, .err = err, .errlen = errlen };
	struct cel_program *prog;
	struct cel_node *root;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	next(&ps);
	root = ps.error ? NULL : expr(&ps);
	if (root && ps.tok != T_EOF)
		fail(&ps, ps.tok_start, "unexpected token after the expression");
	free(ps.text);
	if (ps.error) {
		cel_node_free(root);
		return ps.error;
	}
	prog = calloc(1, sizeof(*prog));
	if (!prog) {
		cel_node_free(root);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	prog->root = root;
	prog->uses_old_self = ps.uses_old_self;
	*out = prog;
	return 0;
}

void cel_program_free(struct cel_program *prog)
{
	if (!prog)
		return;
	cel_node_free(prog->root);
	free(prog);
}

bool cel_program_uses_old_self(const struct cel_program *prog)
{
	return prog->uses_old_self;
}
