/*
 * Fuzz target: kanna-sim's CEL subset (sim/cel*.c). The input's first line
 * is a rule, the rest the JSON that self and oldSelf are bound to; a rule
 * that compiles is evaluated, so the lexer, the parser, the RE2 → ERE
 * translation and the evaluator all see outside bytes (the rules come from
 * CRD files anyone can apply). Nothing may crash, leak or answer other
 * than 1, 0 or -EINVAL with a message.
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t rule_len = nl ? (size_t)(nl - data) : size;
	struct cel_program *prog = NULL;
	char err[512], *rule;
	json_t *self;
	int r;

	rule = strndup((const char *)data, rule_len);
	if (!rule)
		abort();
	r = cel_compile(rule, &prog, err, sizeof(err));
	free(rule);
	if (r != 0) {
		if (r != -EINVAL || !err[0] || prog)
			abort();
		return 0;
	}
	self = nl ? json_loadb((const char *)nl + 1, size - rule_len - 1, JSON_DECODE_ANY, NULL) : NULL;
	if (!self)
		self = json_pack("{s:[{s:s, s:s, s:[s]}], s:{s:s}}", "requirements", "key",
				 "karpenter.sh/nodepool", "operator", "Gt", "values", "1", "labels",
				 "a", "b");
	if (!self)
		abort();
	r = cel_validate_object(prog, self, self, err, sizeof(err));
	if (r != 0 && r != 1 && !(r == -EINVAL && err[0]))
		abort();
	json_decref(self);
	cel_program_free(prog);
	return 0;
}
