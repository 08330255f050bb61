/*
 * MIME multipart documents (RFC 2046) for EC2 user data: splits a user's
 * multipart userData into its parts and writes kanna's own documents with
 * Karpenter's boundary "//" and bare "\n" line ends (cloud-init reads both;
 * Karpenter strips "\r" too). Only what user data needs: top-level headers,
 * the boundary parameter, parts with their header lines kept verbatim.
 * Called by userdata.c; pure.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "launcher/userdata.h"

/* RFC 2046: a boundary is 1 to 70 characters. */
#define MIME_BOUNDARY_MAX 70

bool mime_is_document(const char *text)
{
	while (text && isspace((unsigned char)*text))
		text++;
	return text && (strncasecmp(text, "MIME-Version:", 13) == 0 ||
			strncasecmp(text, "Content-Type:", 13) == 0);
}

void mime_parts_truncate(struct mime_parts *p, size_t n)
{
	for (size_t i = n; i < p->n; i++) {
		free(p->v[i].headers);
		free(p->v[i].content);
	}
	if (n < p->n)
		p->n = n;
}

void mime_parts_clear(struct mime_parts *p)
{
	mime_parts_truncate(p, 0);
}

int mime_parts_add(struct mime_parts *p, const char *headers, const char *content)
{
	size_t hl = strlen(headers);
	char *h;

	if (p->n == USERDATA_MAX_PARTS)
		return -E2BIG;
	if (asprintf(&h, "%s%s", headers, hl && headers[hl - 1] != '\n' ? "\n" : "") < 0)
		return -ENOMEM;
	p->v[p->n].content = strdup(content);
	if (!p->v[p->n].content) {
		free(h);
		return -ENOMEM;
	}
	p->v[p->n++].headers = h;
	return 0;
}

/* A copy with "\r\n" and lone "\r" turned into "\n". */
static char *normalize_newlines(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		if (*s == '\r') {
			if (s[1] != '\n')
				*o++ = '\n';
			continue;
		}
		*o++ = *s;
	}
	*o = '\0';
	return out;
}

/* Length of the header block at s (up to and including the blank line),
 * or 0 when no blank line ends it. */
static size_t header_block_len(const char *s)
{
	const char *end;

	if (*s == '\n')
		return 1;
	end = strstr(s, "\n\n");
	return end ? (size_t)(end - s) + 2 : 0;
}

/* The boundary parameter of the Content-Type header in the header block
 * [h, h + len), unfolded; -EINVAL with why when absent or not multipart. */
static int find_boundary(const char *h, size_t len, char out[MIME_BOUNDARY_MAX + 1],
			 char why[USERDATA_WHY_MAX])
{
	_cleanup_free_ char *block = strndup(h, len), *ct = NULL;
	const char *p;
	size_t n = 0;

	if (!block)
		return -ENOMEM;
	/* Unfold: a line starting with a blank continues the previous one. */
	for (char *line = block, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncasecmp(line, "Content-Type:", 13) == 0) {
			free(ct);
			ct = strdup(line + 13);
		} else if ((*line == ' ' || *line == '\t') && ct) {
			char *joined;

			if (asprintf(&joined, "%s%s", ct, line) < 0)
				return -ENOMEM;
			free(ct);
			ct = joined;
		} else if (ct && strchr(line, ':')) {
			break;
		}
		if (!ct && strncasecmp(line, "Content-Type:", 13) == 0)
			return -ENOMEM;
	}
	if (!ct) {
		snprintf(why, USERDATA_WHY_MAX, "the MIME document has no Content-Type header");
		return -EINVAL;
	}
	for (p = ct; *p == ' ' || *p == '\t'; p++)
		;
	if (strncasecmp(p, "multipart/", 10) != 0) {
		snprintf(why, USERDATA_WHY_MAX, "the MIME document is not multipart (Content-Type:%.100s)", ct);
		return -EINVAL;
	}
	for (p = strchr(p, ';'); p; p = strchr(p, ';')) {
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, "boundary=", 9) != 0)
			continue;
		p += 9;
		if (*p == '"') {
			for (p++; *p && *p != '"' && n < MIME_BOUNDARY_MAX; p++) {
				if (*p == '\\' && p[1])
					p++;
				out[n++] = *p;
			}
			if (*p != '"')
				n = 0;
		} else {
			while (*p && !strchr(" \t;", *p) && n < MIME_BOUNDARY_MAX)
				out[n++] = *p++;
			if (*p && !strchr(" \t;", *p))
				n = 0;
		}
		break;
	}
	out[n] = '\0';
	if (n == 0) {
		snprintf(why, USERDATA_WHY_MAX,
			 "the multipart document has no valid boundary parameter (1 to %d characters)",
			 MIME_BOUNDARY_MAX);
		return -EINVAL;
	}
	return 0;
}

/* 1: the line at s is "--boundary" (2: "--boundary--"), blanks may follow. */
static int delimiter(const char *s, const char *boundary)
{
	size_t bl = strlen(boundary);
	int kind = 1;

	if (strncmp(s, "--", 2) != 0 || strncmp(s + 2, boundary, bl) != 0)
		return 0;
	s += 2 + bl;
	if (strncmp(s, "--", 2) == 0) {
		kind = 2;
		s += 2;
	}
	while (*s == ' ' || *s == '\t')
		s++;
	return *s == '\n' || *s == '\0' ? kind : 0;
}

static int add_part(struct mime_parts *ret, const char *start, const char *end, size_t index,
		    char why[USERDATA_WHY_MAX])
{
	_cleanup_free_ char *part = strndup(start, (size_t)(end - start)), *headers = NULL;
	size_t hl;

	if (!part)
		return -ENOMEM;
	hl = header_block_len(part);
	if (hl == 0) {
		snprintf(why, USERDATA_WHY_MAX, "part %zu of the multipart document has no blank line after its headers",
			 index + 1);
		return -EINVAL;
	}
	headers = strndup(part, hl - 1);
	if (!headers)
		return -ENOMEM;
	if (ret->n == USERDATA_MAX_PARTS) {
		snprintf(why, USERDATA_WHY_MAX, "the multipart document has more than %d parts",
			 USERDATA_MAX_PARTS);
		return -EINVAL;
	}
	return mime_parts_add(ret, headers, part + hl);
}

int mime_parse(const char *text, struct mime_parts *ret, char why[USERDATA_WHY_MAX])
{
	_cleanup_free_ char *doc = NULL;
	char boundary[MIME_BOUNDARY_MAX + 1];
	const char *s, *part = NULL;
	size_t hl, first = ret->n;
	int r, kind = 0;

	doc = normalize_newlines(text);
	if (!doc)
		return -ENOMEM;
	for (s = doc; *s == ' ' || *s == '\t' || *s == '\n'; s++)
		;
	hl = header_block_len(s);
	if (hl == 0) {
		snprintf(why, USERDATA_WHY_MAX, "the MIME document has no blank line after its headers");
		return -EINVAL;
	}
	r = find_boundary(s, hl, boundary, why);
	if (r < 0)
		return r;
	/* Lines of the body: the preamble, then parts between delimiters. The
	 * newline before a delimiter belongs to the delimiter. */
	for (s += hl; *s; ) {
		kind = delimiter(s, boundary);
		if (kind) {
			if (part) {
				r = add_part(ret, part, s > part ? s - 1 : s, ret->n - first, why);
				if (r < 0) {
					mime_parts_truncate(ret, first);
					return r;
				}
			}
			if (kind == 2)
				break;
			s = strchr(s, '\n');
			/* A delimiter with nothing after it ends the document too:
			 * Go's multipart.Reader (Karpenter's mime.NewArchive, which
			 * stops at io.EOF) finds no header of a next part there, so
			 * Karpenter's own examples close with "--//". */
			if (!s || !s[1]) {
				kind = 2;
				break;
			}
			part = ++s;
			continue;
		}
		s = strchr(s, '\n');
		if (!s)
			break;
		s++;
	}
	if (kind != 2) {
		mime_parts_truncate(ret, first);
		snprintf(why, USERDATA_WHY_MAX, "the multipart document does not end with --%s-- (or --%s)",
			 boundary, boundary);
		return -EINVAL;
	}
	return 0;
}

int mime_write(const struct mime_parts *p, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	fputs("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" USERDATA_BOUNDARY "\"\n\n", f);
	for (size_t i = 0; i < p->n; i++)
		fprintf(f, "--" USERDATA_BOUNDARY "\n%s\n%s\n", p->v[i].headers, p->v[i].content);
	fputs("--" USERDATA_BOUNDARY "--\n", f);
	if (fclose(f) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}
