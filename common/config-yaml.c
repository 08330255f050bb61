/*
 * The configuration file, read with libyaml's document loader. Layout:
 *   log-level: info            # shared keys (CONFIG_SHARED) for every daemon
 *   scheduler:                 # one section per process, any of its keys;
 *     batch-max-duration: 5s   # a section beats the top level
 * A daemon checks the top level and its own section strictly and only checks
 * that other known sections are mappings (their daemons check the rest).
 * Every error names file:line:column and the key path; nothing here exits.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "common/config-internal.h"

/* The sections a kanna.yaml may hold: one per process that reads it. */
static const char *const config_sections[] = {
	"watcher", "scheduler", "launcher", "reaper", "sim", "tap", "init",
};

/* Most items a YAML list value may have; a list of zones or tags is short. */
#define CONFIG_LIST_MAX 1024

struct config_file {
	const struct config_schema *schema;
	void *cfg;
	const char *name;
	yaml_document_t *doc;
	struct config_result *res;
};

static int config_file_error(struct config_file *f, const yaml_node_t *at, const char *section,
			     const char *key, const char *fmt, ...) _printf_(5, 6);

static int config_file_error(struct config_file *f, const yaml_node_t *at, const char *section,
			     const char *key, const char *fmt, ...)
{
	char why[CONFIG_ERROR_MAX / 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return config_errorf(f->res, -EINVAL, "Failed to load %s:%zu:%zu: %s%s%s%s%s", f->name,
			     at->start_mark.line + 1, at->start_mark.column + 1, section ? section : "",
			     section ? "." : "", key ? key : "", key ? ": " : "", why);
}

static const char *config_node_kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE: return "a mapping";
	case YAML_SEQUENCE_NODE: return "a list";
	default: return "a value";
	}
}

/* A scalar's text, refusing embedded NUL bytes ("\0" escapes). */
static const char *config_scalar(const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;

	if (n->type != YAML_SCALAR_NODE || memchr(s, '\0', n->data.scalar.length))
		return NULL;
	return s;
}

static int config_apply_list(struct config_file *f, const struct config_option *opt,
			     const yaml_node_t *value, const char *section)
{
	const yaml_node_item_t *start = value->data.sequence.items.start;
	size_t n = (size_t)(value->data.sequence.items.top - start);
	_cleanup_free_ const char **items = NULL;
	char why[CONFIG_ERROR_MAX / 2];
	int r;

	if (n > CONFIG_LIST_MAX)
		return config_file_error(f, value, section, opt->name, "expected at most %d items, got %zu",
					 CONFIG_LIST_MAX, n);
	items = calloc(n + 1, sizeof(*items));
	if (!items)
		return config_errorf(f->res, -ENOMEM, "Failed to load %s: out of memory", f->name);
	for (size_t i = 0; i < n; i++) {
		const yaml_node_t *item = yaml_document_get_node(f->doc, start[i]);
		if (!item || !(items[i] = config_scalar(item)))
			return config_file_error(f, item ? item : value, section, opt->name,
						 "expected a list of strings, got %s in the list",
						 item ? config_node_kind(item) : "nothing");
	}
	r = config_option_set_list(opt, f->cfg, items, n, why, sizeof(why));
	if (r == -ENOMEM)
		return config_errorf(f->res, r, "Failed to load %s: out of memory", f->name);
	if (r < 0)
		return config_file_error(f, value, section, opt->name, "%s", why);
	return 0;
}

static int config_apply_node(struct config_file *f, const struct config_option *opt,
			     const yaml_node_t *value, const char *section)
{
	char why[CONFIG_ERROR_MAX / 2], expect[256];
	const char *text;
	int r;

	if (value->type == YAML_SEQUENCE_NODE && opt->type == CONFIG_STRING_LIST)
		return config_apply_list(f, opt, value, section);
	text = config_scalar(value);
	if (!text) {
		config_option_expectation(opt, expect, sizeof(expect));
		return config_file_error(f, value, section, opt->name, "expected %s, got %s", expect,
					 value->type == YAML_SCALAR_NODE ? "a NUL byte"
									 : config_node_kind(value));
	}
	r = config_option_set(opt, f->cfg, text, why, sizeof(why));
	if (r == -ENOMEM)
		return config_errorf(f->res, r, "Failed to load %s: out of memory", f->name);
	if (r < 0)
		return config_file_error(f, value, section, opt->name, "%s", why);
	return 0;
}

static bool config_is_section(const char *key)
{
	for (size_t i = 0; i < ARRAY_SIZE(config_sections); i++)
		if (streq(key, config_sections[i]))
			return true;
	return false;
}

/* The key text of a pair, or an error: keys are plain names, once each. */
static int config_pair_key(struct config_file *f, const yaml_node_t *map, const yaml_node_pair_t *pair,
			   const char *section, const char **ret)
{
	const yaml_node_t *key = yaml_document_get_node(f->doc, pair->key);
	const char *name = key ? config_scalar(key) : NULL;

	if (!name)
		return config_file_error(f, key ? key : map, section, NULL, "expected a key name, got %s",
					 key ? config_node_kind(key) : "nothing");
	for (const yaml_node_pair_t *p = map->data.mapping.pairs.start; p < pair; p++) {
		const yaml_node_t *k = yaml_document_get_node(f->doc, p->key);
		const char *other = k ? config_scalar(k) : NULL;
		if (other && streq(other, name))
			return config_file_error(f, key, section, name, "duplicate key");
	}
	*ret = name;
	return 0;
}

static int config_apply_mapping(struct config_file *f, const yaml_node_t *map, const char *section,
				const yaml_node_t **ret_own_section)
{
	for (const yaml_node_pair_t *pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		const yaml_node_t *key = yaml_document_get_node(f->doc, pair->key);
		const yaml_node_t *value = yaml_document_get_node(f->doc, pair->value);
		const struct config_option *opt;
		const char *name = NULL;
		int r;

		r = config_pair_key(f, map, pair, section, &name);
		if (r < 0)
			return r;
		if (!value)
			return config_file_error(f, key, section, name, "expected a value");
		if (!section && config_is_section(name)) {
			if (value->type != YAML_MAPPING_NODE)
				return config_file_error(f, value, NULL, name,
							 "expected a mapping of keys, got %s",
							 config_node_kind(value));
			if (streq(name, f->schema->section))
				*ret_own_section = value;
			continue;
		}
		opt = config_find_option(f->schema, name);
		if (!opt)
			return config_file_error(f, key, section, name, "unknown key");
		if (opt->flags & CONFIG_NOT_IN_FILE)
			return config_file_error(f, key, section, name,
						 "only allowed as --%s or in the environment", name);
		if (!section && !(opt->flags & CONFIG_SHARED))
			return config_file_error(f, key, section, name,
						 "only allowed in the '%s:' section", f->schema->section);
		r = config_apply_node(f, opt, value, section);
		if (r < 0)
			return r;
	}
	return 0;
}

static int config_apply_document(struct config_file *f)
{
	const yaml_node_t *root = yaml_document_get_root_node(f->doc), *own = NULL;
	int r;

	if (!root)
		return 0; /* an empty file sets nothing */
	if (root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0)
		return 0;
	if (root->type != YAML_MAPPING_NODE)
		return config_file_error(f, root, NULL, NULL, "expected a mapping of keys at the top, got %s",
					 config_node_kind(root));
	r = config_apply_mapping(f, root, NULL, &own);
	if (r < 0 || !own)
		return r;
	return config_apply_mapping(f, own, f->schema->section, NULL);
}

static int config_parser_error(struct config_file *f, const yaml_parser_t *parser)
{
	if (parser->error == YAML_MEMORY_ERROR)
		return config_errorf(f->res, -ENOMEM, "Failed to load %s: out of memory", f->name);
	return config_errorf(f->res, -EINVAL, "Failed to load %s:%zu:%zu: malformed YAML: %s%s%s",
			     f->name, parser->problem_mark.line + 1, parser->problem_mark.column + 1,
			     parser->problem ? parser->problem : "syntax error",
			     parser->context ? " " : "", parser->context ? parser->context : "");
}

/* Loads the one document the parser holds and applies it. */
static int config_load_parser(struct config_file *f, yaml_parser_t *parser)
{
	yaml_document_t doc, extra;
	int r;

	if (!yaml_parser_load(parser, &doc))
		return config_parser_error(f, parser);
	f->doc = &doc;
	r = config_apply_document(f);
	f->doc = NULL;
	if (r < 0) {
		yaml_document_delete(&doc);
		return r;
	}
	if (!yaml_parser_load(parser, &extra)) {
		yaml_document_delete(&doc);
		return config_parser_error(f, parser);
	}
	if (yaml_document_get_root_node(&extra)) {
		yaml_node_t *root = yaml_document_get_root_node(&extra);
		f->doc = &extra;
		r = config_file_error(f, root, NULL, NULL, "expected one YAML document, found a second");
		f->doc = NULL;
	}
	yaml_document_delete(&extra);
	yaml_document_delete(&doc);
	return r;
}

int config_load_buffer(const struct config_schema *schema, void *cfg, const char *text,
		       size_t size, const char *name, struct config_result *res)
{
	struct config_file f = { .schema = schema, .cfg = cfg, .name = name, .res = res };
	yaml_parser_t parser;
	int r;

	if (!yaml_parser_initialize(&parser))
		return config_errorf(res, -ENOMEM, "Failed to load %s: out of memory", name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, size);
	r = config_load_parser(&f, &parser);
	yaml_parser_delete(&parser);
	return r;
}

int config_load_file(const struct config_schema *schema, void *cfg, const char *path,
		     bool must_exist, struct config_result *res)
{
	struct config_file f = { .schema = schema, .cfg = cfg, .name = path, .res = res };
	yaml_parser_t parser;
	FILE *file;
	int r;

	file = fopen(path, "re");
	if (!file) {
		if (errno == ENOENT && !must_exist)
			return 0;
		return config_errorf(res, -errno, "Failed to load %s: %s", path, strerror(errno));
	}
	if (!yaml_parser_initialize(&parser)) {
		fclose(file);
		return config_errorf(res, -ENOMEM, "Failed to load %s: out of memory", path);
	}
	yaml_parser_set_input_file(&parser, file);
	r = config_load_parser(&f, &parser);
	yaml_parser_delete(&parser);
	if (ferror(file) && r >= 0)
		r = config_errorf(res, -EIO, "Failed to load %s: read error", path);
	fclose(file);
	if (r >= 0) {
		free(res->file);
		res->file = strdup(path);
		if (!res->file)
			return config_errorf(res, -ENOMEM, "Failed to load %s: out of memory", path);
	}
	return r;
}
