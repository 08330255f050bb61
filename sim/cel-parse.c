/*
 * CEL's parser, for the subset the shipped CRDs' x-kubernetes-validations
 * use (the tokens come from cel-lex.c): literals (int, string, bool, null, lists), self and oldSelf, field
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

struct cel_node *cel_parse_fail(struct cel_parser *ps, const char *at, const char *fmt, ...)
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

struct cel_node *cel_parse_oom(struct cel_parser *ps)
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

static struct cel_node *node(struct cel_parser *ps, enum cel_op op)
{
	struct cel_node *n = calloc(1, sizeof(*n));

	if (!n)
		return cel_parse_oom(ps);
	n->op = op;
	return n;
}

/* Appends kid to n; on failure frees both. */
static struct cel_node *add(struct cel_parser *ps, struct cel_node *n, struct cel_node *kid)
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
		return cel_parse_oom(ps);
	}
	n->kids = k;
	n->kids[n->nkids++] = kid;
	return n;
}

static bool accept(struct cel_parser *ps, enum cel_tok t)
{
	if (ps->error || ps->tok != t)
		return false;
	cel_lex_next(ps);
	return !ps->error;
}

static bool expect(struct cel_parser *ps, enum cel_tok t, const char *what)
{
	if (accept(ps, t))
		return true;
	cel_parse_fail(ps, ps->tok_start, "expected %s", what);
	return false;
}

static struct cel_node *expr(struct cel_parser *ps);

/* ( args ) after a function or method name; kids already hold the receiver. */
static struct cel_node *args(struct cel_parser *ps, struct cel_node *n, size_t want, const char *name)
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
		return cel_parse_fail(ps, ps->tok_start, "%s() takes %zu argument(s), not %zu", name, want, have);
	}
	return n;
}

/* recv.all(x, p), exists, filter: the variable is in scope in p only. */
static struct cel_node *macro(struct cel_parser *ps, struct cel_node *recv, enum cel_op op,
			      const char *name, const char *at)
{
	struct cel_node *n = add(ps, node(ps, op), recv);

	if (!n)
		return NULL;
	if (ps->tok != T_IDENT) {
		cel_node_free(n);
		return cel_parse_fail(ps, at, "%s() needs a variable name first", name);
	}
	if (ps->nscope == CEL_MAX_SCOPE) {
		cel_node_free(n);
		return cel_parse_fail(ps, at, "macros nested too deep");
	}
	n->str = ps->text;
	ps->text = NULL;
	cel_lex_next(ps);
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

static struct cel_node *method(struct cel_parser *ps, struct cel_node *recv, const char *at)
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
	cel_lex_next(ps);
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
				n = cel_parse_fail(ps, at, "%s() needs a string literal pattern", name);
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
	cel_parse_fail(ps, at, "function '%s' is not supported", name);
	free(name);
	return NULL;
}

static struct cel_node *global_call(struct cel_parser *ps, char *name, const char *at)
{
	struct cel_node *n;

	cel_lex_next(ps); /* the '(' */
	if (!strcmp(name, "has")) {
		struct cel_node *arg = expr(ps);

		if (arg && arg->op != CEL_SELECT) {
			cel_node_free(arg);
			arg = cel_parse_fail(ps, at, "has() needs a field selection, like has(self.field)");
		}
		if (!arg || !expect(ps, T_RPAREN, "')'")) {
			cel_node_free(arg);
			return NULL;
		}
		arg->op = CEL_HAS;
		return arg;
	}
	if (strcmp(name, "size") && strcmp(name, "int"))
		return cel_parse_fail(ps, at, "function '%s' is not supported", name);
	n = node(ps, CEL_CALL);
	if (n)
		n->fn = name[0] == 's' ? CEL_FN_SIZE : CEL_FN_INT;
	return args(ps, n, 1, name);
}

static struct cel_node *primary(struct cel_parser *ps)
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
		cel_lex_next(ps);
		return n;
	case T_STRING:
		n = node(ps, CEL_STRING);
		if (n) {
			n->str = ps->text;
			n->len = ps->text_len;
			ps->text = NULL;
		}
		cel_lex_next(ps);
		return n;
	case T_LPAREN:
		cel_lex_next(ps);
		n = expr(ps);
		if (n && !expect(ps, T_RPAREN, "')'")) {
			cel_node_free(n);
			return NULL;
		}
		return n;
	case T_LBRACKET:
		cel_lex_next(ps);
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
		return cel_parse_fail(ps, at, "unexpected %s", ps->tok == T_EOF ? "end of rule" : "token");
	}
	if (!strcmp(ps->text, "true") || !strcmp(ps->text, "false")) {
		n = node(ps, CEL_BOOL);
		if (n)
			n->ival = ps->text[0] == 't';
		cel_lex_next(ps);
		return n;
	}
	if (!strcmp(ps->text, "null")) {
		cel_lex_next(ps);
		return node(ps, CEL_NULL);
	}
	if (!strcmp(ps->text, "in"))
		return cel_parse_fail(ps, at, "unexpected 'in'");
	{
		char *name = ps->text;

		ps->text = NULL;
		cel_lex_next(ps);
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
			cel_parse_fail(ps, at, "undeclared reference to '%s'", name);
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

static struct cel_node *member(struct cel_parser *ps)
{
	struct cel_node *n = primary(ps);

	while (n && !ps->error) {
		const char *at = ps->tok_start;

		if (accept(ps, T_DOT)) {
			struct cel_node *sel;

			if (ps->tok != T_IDENT) {
				cel_node_free(n);
				return cel_parse_fail(ps, ps->tok_start, "expected a field name after '.'");
			}
			if (ps->p[strspn(ps->p, " \t\n\r\f")] == '(') {
				n = method(ps, n, at);
				continue;
			}
			/* Kubernetes escapes property names for CEL (foo-bar is
			 * foo__dash__bar); no shipped rule needs it. */
			if (strstr(ps->text, "__")) {
				cel_node_free(n);
				return cel_parse_fail(ps, ps->tok_start,
						      "escaped property name '%s' is not supported", ps->text);
			}
			sel = add(ps, node(ps, CEL_SELECT), n);
			if (!sel)
				return NULL;
			sel->str = ps->text;
			ps->text = NULL;
			n = sel;
			cel_lex_next(ps);
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

static struct cel_node *unary(struct cel_parser *ps)
{
	struct cel_node *n;

	if (ps->tok != T_NOT)
		return member(ps);
	if (++ps->depth > CEL_MAX_DEPTH) {
		ps->depth--;
		return cel_parse_fail(ps, ps->tok_start, "expression nested too deep");
	}
	cel_lex_next(ps);
	n = add(ps, node(ps, CEL_NOT), unary(ps));
	ps->depth--;
	return n;
}

static struct cel_node *relation(struct cel_parser *ps)
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
		cel_lex_next(ps);
		n = add(ps, add(ps, node(ps, op), n), unary(ps));
	}
	if (ps->error) {
		cel_node_free(n);
		return NULL;
	}
	return n;
}

static struct cel_node *binary(struct cel_parser *ps, enum cel_tok tok, enum cel_op op,
			       struct cel_node *(*operand)(struct cel_parser *))
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

static struct cel_node *conjunction(struct cel_parser *ps)
{
	return binary(ps, T_AND, CEL_AND, relation);
}

static struct cel_node *disjunction(struct cel_parser *ps)
{
	return binary(ps, T_OR, CEL_OR, conjunction);
}

static struct cel_node *expr(struct cel_parser *ps)
{
	struct cel_node *n;

	if (++ps->depth > CEL_MAX_DEPTH) {
		ps->depth--;
		return cel_parse_fail(ps, ps->tok_start, "expression nested too deep");
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

static bool valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 :
			   (*p & 0xf8) == 0xf0 ? 3 : 4;
		unsigned cp = n == 0 ? *p : *p & (0x3f >> n);

		if (n == 4 || (n == 1 && *p < 0xc2))
			return false;
		for (size_t i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		/* overlong, surrogate or past U+10FFFF */
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

int cel_compile(const char *rule, struct cel_program **out, char *err, size_t errlen)
{
	struct cel_parser ps = { .src = rule, .p = rule, .err = err, .errlen = errlen };
	struct cel_program *prog;
	struct cel_node *root;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	/* A rule arrives in JSON or YAML, so always as UTF-8; the strings
	 * it makes must be too, for jansson. */
	if (!valid_utf8(rule)) {
		snprintf(err, errlen, "the rule is not valid UTF-8");
		return -EINVAL;
	}
	cel_lex_next(&ps);
	root = ps.error ? NULL : expr(&ps);
	if (root && ps.tok != T_EOF)
		cel_parse_fail(&ps, ps.tok_start, "unexpected token after the expression");
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
