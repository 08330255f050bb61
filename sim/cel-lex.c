/*
 * CEL's lexer, for cel-parse.c: identifiers, decimal int literals, quoted
 * strings with cel-spec's simple escapes, and the punctuation of the
 * subset. Doubles, unsigned and hexadecimal literals, raw, bytes and
 * triple-quoted strings, octal/hex/unicode escapes, arithmetic operators,
 * map literals and comments are refused by name.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cel-internal.h"

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
static int lex_string(struct cel_parser *ps)
{
	char quote = *ps->p++;
	char *buf;
	size_t n = 0;

	if (ps->p[0] == quote && ps->p[1] == quote)
		return cel_parse_fail(ps, ps->tok_start, "triple-quoted strings are not supported"), -EINVAL;
	buf = malloc(strlen(ps->p) + 1);
	if (!buf)
		return cel_parse_oom(ps), -ENOMEM;
	for (;;) {
		char c = *ps->p;

		if (c == '\0' || c == '\n' || c == '\r') {
			free(buf);
			return cel_parse_fail(ps, ps->tok_start, "unterminated string literal"), -EINVAL;
		}
		ps->p++;
		if (c == quote)
			break;
		if (c == '\\') {
			static const char from[] = "abfnrtv\\'\"`?", to[] = "\a\b\f\n\r\t\v\\'\"`?";
			const char *e = *ps->p ? strchr(from, *ps->p) : NULL;

			if (!e) {
				free(buf);
				return cel_parse_fail(ps, ps->p - 1, "escape sequence \\%c is not supported",
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

int cel_lex_next(struct cel_parser *ps)
{
	static const struct {
		const char *text;
		enum cel_tok tok;
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
		return cel_parse_fail(ps, ps->p, "comments are not supported"), -EINVAL;
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
			return cel_parse_fail(ps, s, "raw and bytes string literals are not supported"), -EINVAL;
		for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
			if (strlen(reserved[i]) == (size_t)(ps->p - s) &&
			    !memcmp(reserved[i], s, (size_t)(ps->p - s)))
				return cel_parse_fail(ps, s, "reserved identifier '%s'", reserved[i]), -EINVAL;
		ps->text = strndup(s, (size_t)(ps->p - s));
		if (!ps->text)
			return cel_parse_oom(ps), -ENOMEM;
		ps->text_len = (size_t)(ps->p - s);
		ps->tok = T_IDENT;
		return 0;
	}
	if (is_digit(*ps->p)) {
		json_int_t v = 0;

		if (ps->p[0] == '0' && (ps->p[1] == 'x' || ps->p[1] == 'X'))
			return cel_parse_fail(ps, ps->p, "hexadecimal literals are not supported"), -EINVAL;
		while (is_digit(*ps->p)) {
			if (v > (LLONG_MAX - (*ps->p - '0')) / 10)
				return cel_parse_fail(ps, ps->tok_start, "integer literal out of range"), -EINVAL;
			v = v * 10 + (*ps->p++ - '0');
		}
		if (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E')
			return cel_parse_fail(ps, ps->tok_start, "double literals are not supported"), -EINVAL;
		if (*ps->p == 'u' || *ps->p == 'U')
			return cel_parse_fail(ps, ps->tok_start, "unsigned literals are not supported"), -EINVAL;
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
		return cel_parse_fail(ps, ps->p, "arithmetic operator '%c' is not supported", *ps->p), -EINVAL;
	if (*ps->p == '{')
		return cel_parse_fail(ps, ps->p, "map and message literals are not supported"), -EINVAL;
	return cel_parse_fail(ps, ps->p, "character '%c' is not supported", *ps->p), -EINVAL;
}

