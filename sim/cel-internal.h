/*
 * CEL's syntax tree as cel-parse.c builds it and cel-eval.c walks it;
 * private to sim/cel-*.c.
 */
#ifndef KANNA_SIM_CEL_INTERNAL_H
#define KANNA_SIM_CEL_INTERNAL_H

#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

enum cel_op {
	CEL_BOOL,   /* ival */
	CEL_INT,    /* ival */
	CEL_STRING, /* str, len */
	CEL_NULL,
	CEL_LIST,   /* kids: the elements */
	CEL_IDENT,  /* str: self, oldSelf or a macro's variable */
	CEL_SELECT, /* kids[0].str */
	CEL_HAS,    /* has(kids[0].str) */
	CEL_INDEX,  /* kids[0][kids[1]] */
	CEL_NOT,
	CEL_AND,
	CEL_OR,
	CEL_COND,   /* kids[0] ? kids[1] : kids[2] */
	CEL_EQ,
	CEL_NE,
	CEL_LT,
	CEL_LE,
	CEL_GT,
	CEL_GE,
	CEL_IN,
	CEL_CALL,   /* fn over kids (the receiver first for methods) */
	CEL_ALL,    /* kids[0].all(str, kids[1]) */
	CEL_EXISTS,
	CEL_FILTER,
};

enum cel_fn {
	CEL_FN_SIZE,
	CEL_FN_INT,
	CEL_FN_STARTS_WITH,
	CEL_FN_ENDS_WITH,
	CEL_FN_MATCHES,
	CEL_FN_FIND,
	CEL_FN_SPLIT,
};

struct cel_node {
	enum cel_op op;
	enum cel_fn fn;
	size_t nkids;
	struct cel_node **kids;
	char *str;
	size_t len;
	json_int_t ival;
	regex_t *re; /* matches() and find(): the literal pattern, compiled */
};

struct cel_program {
	struct cel_node *root;
	bool uses_old_self;
};

void cel_node_free(struct cel_node *n);
/* RE2 pattern → POSIX ERE, for the patterns whose meaning (and, for
 * find(), whose match) is the same in both; 0 or -EINVAL with the
 * construct in err, or -ENOMEM. */
int cel_regex_compile(const char *re2, size_t len, bool find, regex_t **out, char *err,
		      size_t errlen);
void cel_regex_free(regex_t *re);

/* The parser's state; the lexer (cel-lex.c) fills the token fields. */
#define CEL_MAX_SCOPE 8 /* macro variables in scope at once; the CRDs nest two */
enum cel_tok {
	T_EOF, T_IDENT, T_INT, T_STRING,
	T_LPAREN, T_RPAREN, T_LBRACKET, T_RBRACKET, T_DOT, T_COMMA, T_QUESTION, T_COLON,
	T_NOT, T_AND, T_OR, T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
};

struct cel_parser {
	const char *src, *p;
	enum cel_tok tok;
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

/* Both record the first error (-EINVAL with "column N: what", -ENOMEM)
 * and return NULL. */
struct cel_node *cel_parse_fail(struct cel_parser *ps, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
struct cel_node *cel_parse_oom(struct cel_parser *ps);
/* Reads the next token into ps; 0 or the error. */
int cel_lex_next(struct cel_parser *ps);

#endif
