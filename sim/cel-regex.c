/*
 * matches() and find() patterns: Kubernetes' CEL uses Go's regexp (RE2
 * syntax, leftmost-first); kanna-sim runs them on POSIX ERE (regcomp). A
 * pattern is translated only when both engines give it the same meaning:
 * literal ASCII characters, '.' and negated bracket expressions repeated
 * by '*' or '+', other bracket expressions without escapes or classes,
 * '^' '$', '*' '+' after an atom, and unquantified groups. '.'
 * becomes [^\n] (Go's '.' does not match a newline, ERE's does). Anything
 * else ('|', '?', '{n}', '\', '(?', non-ASCII) is refused, naming it; so
 * is a second repetition in a find() pattern, where the two engines could
 * pick different extents.
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cel-internal.h"

/* Go matches '.' and [^...] against a character, regexec (in the C
 * locale) against a byte; a run of them ('*', '+') covers the same text
 * either way, a single one does not on non-ASCII input. */
static bool repeated(const char *re2, size_t len, size_t next)
{
	return next < len && (re2[next] == '*' || re2[next] == '+');
}

static int refuse(char *err, size_t errlen, const char *re2, const char *what)
{
	snprintf(err, errlen, "regex '%s': %s is not supported", re2, what);
	return -EINVAL;
}

int cel_regex_compile(const char *re2, size_t len, bool find, regex_t **out, char *err,
		      size_t errlen)
{
	int repeats = 0;
	/* Each byte becomes at most "[^\n]" (5 bytes). */
	char *ere = malloc(len * 5 + 1);
	bool atom = false; /* the last item can take a quantifier */
	size_t n = 0;
	int depth = 0, r;
	regex_t *re;

	*out = NULL;
	if (!ere)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)re2[i];

		if (c < 0x20 || c >= 0x7f) {
			r = refuse(err, errlen, re2, "a control or non-ASCII character");
			goto out;
		}
		switch (c) {
		case '\\':
			r = refuse(err, errlen, re2, "an escape ('\\')");
			goto out;
		case '|':
			r = refuse(err, errlen, re2, "alternation ('|')");
			goto out;
		case '?':
			r = refuse(err, errlen, re2, "'?'");
			goto out;
		case '{':
		case '}':
			r = refuse(err, errlen, re2, "a counted repetition ('{')");
			goto out;
		case ']':
			r = refuse(err, errlen, re2, "an unbalanced ']'");
			goto out;
		case '*':
		case '+':
			if (!atom) {
				r = refuse(err, errlen, re2, "a repetition without an operand");
				goto out;
			}
			if (n && ere[n - 1] == ')') {
				/* Go's leftmost-first and POSIX's leftmost-longest
				 * can pick different extents for a repeated group. */
				r = refuse(err, errlen, re2, "a repeated group");
				goto out;
			}
			/* find() returns the match: with one repetition and no
			 * alternation both engines take the same (longest) one. */
			if (find && ++repeats > 1) {
				r = refuse(err, errlen, re2, "a second repetition in find()");
				goto out;
			}
			ere[n++] = (char)c;
			atom = false;
			continue;
		case '(':
			if (i + 1 < len && (re2[i + 1] == '?' || re2[i + 1] == ')')) {
				r = refuse(err, errlen, re2, re2[i + 1] == '?' ? "'(?'" : "an empty group");
				goto out;
			}
			depth++;
			ere[n++] = '(';
			atom = false;
			continue;
		case ')':
			if (depth-- == 0) {
				r = refuse(err, errlen, re2, "an unbalanced ')'");
				goto out;
			}
			ere[n++] = ')';
			atom = true;
			continue;
		case '.':
			if (!repeated(re2, len, i + 1)) {
				r = refuse(err, errlen, re2, "a '.' without '*' or '+'");
				goto out;
			}
			memcpy(ere + n, "[^\n]", 4);
			n += 4;
			atom = true;
			continue;
		case '^':
		case '$':
			ere[n++] = (char)c;
			atom = false;
			continue;
		case '[': {
			size_t j = i + 1;
			bool negated = false;

			ere[n++] = '[';
			if (j < len && re2[j] == '^') {
				ere[n++] = re2[j++];
				negated = true;
			}
			if (j < len && re2[j] == ']') {
				r = refuse(err, errlen, re2, "']' first in a bracket expression");
				goto out;
			}
			for (; j < len && re2[j] != ']'; j++) {
				unsigned char b = (unsigned char)re2[j];

				if (b == '\\' || b == '[' || b < 0x20 || b >= 0x7f) {
					r = refuse(err, errlen, re2,
						   "an escape, class or non-ASCII character in brackets");
					goto out;
				}
				if (b == '-' && j > i + 1 && re2[j - 1] != '^' && j + 1 < len &&
				    re2[j + 1] != ']' && (unsigned char)re2[j - 1] > (unsigned char)re2[j + 1]) {
					r = refuse(err, errlen, re2, "an inverted range");
					goto out;
				}
				ere[n++] = (char)b;
			}
			if (j == len) {
				r = refuse(err, errlen, re2, "an unterminated '['");
				goto out;
			}
			if (negated && !repeated(re2, len, j + 1)) {
				r = refuse(err, errlen, re2, "a negated class without '*' or '+'");
				goto out;
			}
			ere[n++] = ']';
			i = j;
			atom = true;
			continue;
		}
		default:
			ere[n++] = (char)c;
			atom = true;
		}
	}
	if (depth) {
		r = refuse(err, errlen, re2, "an unbalanced '('");
		goto out;
	}
	ere[n] = '\0';
	re = malloc(sizeof(*re));
	if (!re) {
		r = -ENOMEM;
		goto out;
	}
	if (regcomp(re, ere, REG_EXTENDED) != 0) {
		free(re);
		r = refuse(err, errlen, re2, "this pattern");
		goto out;
	}
	*out = re;
	r = 0;
out:
	free(ere);
	return r;
}

void cel_regex_free(regex_t *re)
{
	if (!re)
		return;
	regfree(re);
	free(re);
}
