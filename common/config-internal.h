/*
 * Shared between common/config*.c only: setting one option from text or a
 * list, comparing and freeing values, and the error helpers. Daemons use
 * common/config.h.
 */
#ifndef KANNA_COMMON_CONFIG_INTERNAL_H
#define KANNA_COMMON_CONFIG_INTERNAL_H

#include <stdio.h>

#include "common/config.h"

/* Longest part of a bad value quoted back in an error message. */
#define CONFIG_QUOTE_MAX 64

/*
 * Parses text for opt and stores it in cfg (replacing, and freeing, what was
 * there). On failure returns -EINVAL and writes "expected ..., got '...'" to
 * why; cfg is unchanged.
 */
int config_option_set(const struct config_option *opt, void *cfg, const char *text,
		      char *why, size_t why_size);
/* STRING_LIST from separate items (a YAML sequence). */
int config_option_set_list(const struct config_option *opt, void *cfg, const char *const *items,
			   size_t n_items, char *why, size_t why_size);
void config_option_free(const struct config_option *opt, void *cfg);
bool config_option_equal(const struct config_option *opt, const void *a, const void *b);
/* "a duration like 1s", "one of error, warn, info, debug", ... */
void config_option_expectation(const struct config_option *opt, char *buf, size_t size);
const char *config_option_metavar(const struct config_option *opt);
/* Copies s into buf with unprintable bytes as '?', cut at CONFIG_QUOTE_MAX. */
void config_quote(const char *s, char *buf, size_t size);

/* The YAML file: applies the top level and the schema's section to cfg. */
int config_load_file(const struct config_schema *schema, void *cfg, const char *path,
		     bool must_exist, struct config_result *res);

int config_errorf(struct config_result *res, int r, const char *fmt, ...) _printf_(3, 4);

#endif
