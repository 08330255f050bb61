/*
 * The subset of CEL (Common Expression Language) that the shipped CRDs'
 * x-kubernetes-validations use, so that kanna-sim refuses the custom
 * resources kube-apiserver's CEL validation refuses. A rule is compiled
 * once (parsed to an AST, regexes compiled) and evaluated against jansson
 * values; anything outside the subset is a compile error naming the
 * construct, never a guess. cel-schema.c walks a CRD's openAPIV3Schema the
 * way apiextensions-apiserver's schema/cel/validation.go does and reports
 * field errors in its format.
 *
 * Wiring (once the write path has a CRD schema hook): build one
 * cel_schema per served CRD version with cel_schema_new() when the CRD is
 * registered (a compile error refuses the CRD, as the API server does), and
 * call cel_schema_validate() on create (old = NULL) and update (old = the
 * stored object) after structural validation and defaulting, appending each
 * reported error as a "FieldValueInvalid" cause of the 422 Invalid status.
 */
#ifndef KANNA_SIM_CEL_H
#define KANNA_SIM_CEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct cel_program;

/* 0, or -EINVAL with the reason in err (the construct and its column), or
 * -ENOMEM. */
int cel_compile(const char *rule, struct cel_program **out, char *err, size_t errlen);
void cel_program_free(struct cel_program *prog);
/* Whether the rule reads oldSelf (a transition rule). */
bool cel_program_uses_old_self(const struct cel_program *prog);

/* Evaluates a compiled rule with self (and oldSelf, NULL on create).
 * 1: the rule holds (or is a transition rule and old_self is NULL, which
 * Kubernetes skips); 0: it does not; -EINVAL: evaluation error, CEL's text
 * in err ("no such key: amiFamily"); -ENOMEM. */
int cel_validate_object(const struct cel_program *prog, json_t *self, json_t *old_self, char *err,
			size_t errlen);

/* Every x-kubernetes-validations rule of one openAPIV3Schema. */
struct cel_schema;

/* 0 (*out NULL when the schema has no rule), -EINVAL with the first rule
 * that does not compile in err, or -ENOMEM. */
int cel_schema_new(const json_t *schema, struct cel_schema **out, char *err, size_t errlen);
void cel_schema_free(struct cel_schema *cs);

/* One field.Error: field ("spec.amiSelectorTerms[0]"), its reason
 * ("FieldValueInvalid") and its body ("Invalid value: \"object\": ..."). */
typedef void (*cel_error_fn)(void *ctx, const char *field, const char *reason, const char *body);

/* Runs every rule over obj (old: the stored object on update, else NULL),
 * with kube-apiserver's oldSelf correlation and ratcheting; returns the
 * number of errors reported, or -ENOMEM. */
int cel_schema_validate(const struct cel_schema *cs, json_t *obj, json_t *old, cel_error_fn report,
			void *ctx);

#endif
