/*
 * kanna-reaper --what-if's output (what-if.h): the report as a table for
 * people (one section per method, in the reaper's order) or as JSON for
 * programs. Called by what-if-main.c and the fuzz target.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>

#include "reaper/what-if.h"

static void print_replacement(FILE *out, const struct wi_replacement *x)
{
	fputs(" [", out);
	for (uint32_t t = 0; t < x->n_types; t++)
		fprintf(out, "%s%s", t ? ", " : "", x->types[t]);
	if (x->n_more)
		fprintf(out, " and %u other(s)", x->n_more);
	fprintf(out, "] $%.4f/h", x->price);
}

void wi_print_table(FILE *out, const struct wi_report *r)
{
	for (int m = 0; m < _WI_METHOD_MAX; m++) {
		bool any = false;

		fprintf(out, "%s:\n", wi_method_name(m));
		for (uint32_t i = 0; i < r->n_decisions; i++) {
			const struct wi_decision *d = &r->decisions[i];
			if ((int)d->method != m)
				continue;
			any = true;
			fprintf(out, "  %s%s%s", *d->detail ? d->detail : "", *d->detail ? " " : "",
				d->n_replacements ? "replace" : "delete");
			for (uint32_t k = 0; k < d->n_nodes; k++)
				fprintf(out, "%s%s", k ? ", " : " ", d->nodes[k]);
			fprintf(out, " ($%.4f/h -> $%.4f/h)\n", d->before, d->after);
			for (uint32_t k = 0; k < d->n_replacements; k++) {
				fputs("    with a new NodeClaim", out);
				print_replacement(out, &d->replacements[k]);
				fputc('\n', out);
			}
		}
		for (uint32_t i = 0; i < r->n_blocked; i++)
			if ((int)r->blocked[i].method == m) {
				any = true;
				fprintf(out, "  blocked %s: %s\n", r->blocked[i].node, r->blocked[i].why);
			}
		if (!any)
			fputs("  nothing\n", out);
	}
	fprintf(out, "cost: $%.4f/h -> $%.4f/h\n", r->cluster_before, r->cluster_after);
}

static json_t *decision_json(const struct wi_decision *d)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:[], s:f, s:f, s:[]}", "method",
			      wi_method_name(d->method), "detail", d->detail, "action",
			      d->n_replacements ? "replace" : "delete", "nodes", "costBefore",
			      d->before, "costAfter", d->after, "replacements");
	json_t *nodes = json_object_get(o, "nodes"), *repl = json_object_get(o, "replacements");
	int r = o ? 0 : -1;

	for (uint32_t k = 0; r == 0 && k < d->n_nodes; k++)
		r = json_array_append_new(nodes, json_string(d->nodes[k]));
	for (uint32_t k = 0; r == 0 && k < d->n_replacements; k++) {
		const struct wi_replacement *x = &d->replacements[k];
		json_t *types = json_array();
		for (uint32_t t = 0; types && t < x->n_types; t++)
			if (json_array_append_new(types, json_string(x->types[t])) < 0)
				break;
		r = json_array_append_new(repl, json_pack("{s:o*, s:i, s:f}", "instanceTypes", types,
							  "otherInstanceTypes", (json_int_t)x->n_more,
							  "price", x->price));
	}
	if (r < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int wi_print_json(FILE *out, const struct wi_report *r)
{
	json_t *root = json_pack("{s:[], s:[], s:{s:f, s:f}}", "decisions", "blocked", "cost", "before",
				 r->cluster_before, "after", r->cluster_after);
	int e = root ? 0 : -ENOMEM;

	for (uint32_t i = 0; e == 0 && i < r->n_decisions; i++)
		e = json_array_append_new(json_object_get(root, "decisions"),
					  decision_json(&r->decisions[i])) < 0 ? -ENOMEM : 0;
	for (uint32_t i = 0; e == 0 && i < r->n_blocked; i++)
		e = json_array_append_new(json_object_get(root, "blocked"),
					  json_pack("{s:s, s:s, s:s}", "method",
						    wi_method_name(r->blocked[i].method), "node",
						    r->blocked[i].node, "reason", r->blocked[i].why)) < 0
			    ? -ENOMEM
			    : 0;
	if (e == 0 && (json_dumpf(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) < 0 ||
		       fputc('\n', out) == EOF))
		e = -EIO;
	json_decref(root);
	return e;
}
