/*
 * Output of kanna-scheduler --simulate: a readable table, or JSON built
 * with jansson in the documented shape. Reads a cluster and a result,
 * writes to the given stream; never changes either.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>

#include "scheduler/simulate.h"

static const char *S(const struct cluster *c, uint32_t id)
{
	return strtab_str(&c->st, id);
}

static void pod_name(const struct cluster *c, uint32_t p, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", S(c, c->pods[p].ns), S(c, c->pods[p].name));
}

/* Pods this solve put on existing nodes, grouped by node in one pass:
 * node n's are list[start[n] .. start[n + 1]). */
struct placements {
	uint32_t *start, *list;
};

static int placements_build(const struct cluster *c, const struct sched_result *res,
			    struct placements *pl)
{
	pl->start = calloc(c->n_nodes + 2, sizeof(*pl->start));
	pl->list = malloc((c->n_pods ? c->n_pods : 1) * sizeof(*pl->list));
	if (!pl->start || !pl->list)
		return -ENOMEM;
	for (uint32_t p = 0; p < c->n_pods; p++)
		if (c->pods[p].node == STR_NONE && res->pod_bin[p] >= 0 && (uint32_t)res->pod_bin[p] < c->n_nodes)
			pl->start[res->pod_bin[p] + 2]++;
	for (uint32_t n = 0; n < c->n_nodes; n++)
		pl->start[n + 2] += pl->start[n + 1];
	for (uint32_t p = 0; p < c->n_pods; p++)
		if (c->pods[p].node == STR_NONE && res->pod_bin[p] >= 0 && (uint32_t)res->pod_bin[p] < c->n_nodes)
			pl->list[pl->start[res->pod_bin[p] + 1]++] = p;
	return 0;
}

static void placements_free(struct placements *pl)
{
	free(pl->start);
	free(pl->list);
}

static uint32_t placed_on(const struct placements *pl, uint32_t n, const uint32_t **pods)
{
	*pods = pl->list + pl->start[n];
	return pl->start[n + 1] - pl->start[n];
}

void simulate_print_table(FILE *out, const struct cluster *c, const struct sched_result *res)
{
	char name[600];
	struct placements pl = { 0 };
	const uint32_t *pods;
	bool have_pl = placements_build(c, res, &pl) >= 0;

	fprintf(out, "NODECLAIMS (%u)\n", res->n_claims);
	fprintf(out, "%-4s %-16s %-20s %10s %6s %-30s %-18s %s\n", "#", "NODEPOOL", "CHEAPEST TYPE",
		"PRICE/H", "TYPES", "ZONES", "CAPACITY TYPES", "PODS");
	for (uint32_t k = 0; k < res->n_claims; k++) {
		const struct sched_claim *cl = &res->claims[k];
		char zones[256] = "", cts[32] = "";
		size_t off = 0;
		for (uint32_t z = 0; z < c->cat.n_zones; z++)
			if (cl->zones >> z & 1)
				off += (size_t)snprintf(zones + off, sizeof(zones) - MIN(off, sizeof(zones)),
							"%s%s", off ? "," : "", S(c, c->cat.zones[z]));
		snprintf(cts, sizeof(cts), "%s%s%s", cl->capacity_types & 1u << CT_SPOT ? "spot" : "",
			 cl->capacity_types == 3 ? "," : "",
			 cl->capacity_types & 1u << CT_ON_DEMAND ? "on-demand" : "");
		fprintf(out, "%-4u %-16s %-20s %10.4f %6u %-30s %-18s %u\n", k + 1,
			S(c, c->nodepools[cl->nodepool].name),
			cl->n_types ? S(c, c->cat.types[cl->types[0]].name) : "-", cl->price, cl->n_types,
			zones, cts, cl->n_pods);
		for (uint32_t i = 0; i < cl->n_pods; i++) {
			pod_name(c, cl->pods[i], name, sizeof(name));
			fprintf(out, "       %s\n", name);
		}
	}
	for (uint32_t n = 0; have_pl && n < c->n_nodes; n++) {
		uint32_t k = placed_on(&pl, n, &pods);
		if (!k)
			continue;
		fprintf(out, "%s %s: %u pod(s)\n", c->nodes[n].in_flight ? "IN-FLIGHT NODECLAIM" : "EXISTING NODE",
			S(c, c->nodes[n].name), k);
		for (uint32_t i = 0; i < k; i++) {
			pod_name(c, pods[i], name, sizeof(name));
			fprintf(out, "       %s\n", name);
		}
	}
	fprintf(out, "UNSCHEDULABLE (%u)\n", res->n_unschedulable);
	for (uint32_t u = 0; u < res->n_unschedulable; u++) {
		pod_name(c, res->unschedulable[u].pod, name, sizeof(name));
		fprintf(out, "       %s: %s\n", name, res->unschedulable[u].reason);
	}
	placements_free(&pl);
}

static int add_pods(json_t *arr, const struct cluster *c, const uint32_t *pods, uint32_t n)
{
	char name[600];

	for (uint32_t i = 0; i < n; i++) {
		pod_name(c, pods[i], name, sizeof(name));
		if (json_array_append_new(arr, json_string(name)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static json_t *claim_json(const struct cluster *c, const struct sched_claim *cl)
{
	json_t *o = json_object(), *types = json_array(), *zones = json_array(), *cts = json_array(),
	       *pods = json_array();
	int r = 0;

	if (!o || !types || !zones || !cts || !pods)
		r = -ENOMEM;
	for (uint32_t i = 0; !r && i < cl->n_types; i++)
		r = json_array_append_new(types, json_string(S(c, c->cat.types[cl->types[i]].name)));
	for (uint32_t z = 0; !r && z < c->cat.n_zones; z++)
		if (cl->zones >> z & 1)
			r = json_array_append_new(zones, json_string(S(c, c->cat.zones[z])));
	if (!r && cl->capacity_types & 1u << CT_SPOT)
		r = json_array_append_new(cts, json_string("spot"));
	if (!r && cl->capacity_types & 1u << CT_ON_DEMAND)
		r = json_array_append_new(cts, json_string("on-demand"));
	if (!r)
		r = add_pods(pods, c, cl->pods, cl->n_pods);
	if (!r)
		r = json_object_set_new(o, "nodePool", json_string(S(c, c->nodepools[cl->nodepool].name))) ||
		    json_object_set(o, "instanceTypes", types) || json_object_set(o, "zones", zones) ||
		    json_object_set(o, "capacityTypes", cts) ||
		    json_object_set_new(o, "price", json_real(cl->price)) || json_object_set(o, "pods", pods);
	json_decref(types);
	json_decref(zones);
	json_decref(cts);
	json_decref(pods);
	if (r) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *result_json(const struct cluster *c, const struct sched_result *res)
{
	json_t *root = json_object(), *claims = json_array(), *nodes = json_array(), *un = json_array();
	struct placements pl = { 0 };
	const uint32_t *pods;
	char name[600];
	int r = 0;

	if (!root || !claims || !nodes || !un || placements_build(c, res, &pl) < 0)
		r = -1;
	for (uint32_t k = 0; !r && k < res->n_claims; k++) {
		json_t *o = claim_json(c, &res->claims[k]);
		r = o ? json_array_append_new(claims, o) : -1;
	}
	for (uint32_t n = 0; !r && n < c->n_nodes; n++) {
		uint32_t k = placed_on(&pl, n, &pods);
		if (!k)
			continue;
		json_t *o = json_object(), *arr = json_array();
		r = !o || !arr || add_pods(arr, c, pods, k) ||
		    json_object_set_new(o, "node", json_string(S(c, c->nodes[n].name))) ||
		    json_object_set(o, "pods", arr) || json_array_append(nodes, o);
		json_decref(arr);
		json_decref(o);
	}
	for (uint32_t u = 0; !r && u < res->n_unschedulable; u++) {
		json_t *o = json_object();
		pod_name(c, res->unschedulable[u].pod, name, sizeof(name));
		r = !o || json_object_set_new(o, "pod", json_string(name)) ||
		    json_object_set_new(o, "reason", json_string(res->unschedulable[u].reason)) ||
		    json_array_append(un, o);
		json_decref(o);
	}
	if (!r)
		r = json_object_set(root, "nodeClaims", claims) ||
		    json_object_set(root, "existingNodes", nodes) ||
		    json_object_set(root, "unschedulable", un);
	json_decref(claims);
	json_decref(nodes);
	json_decref(un);
	placements_free(&pl);
	if (r) {
		json_decref(root);
		return NULL;
	}
	return root;
}

int simulate_print_json(FILE *out, const struct cluster *c, const struct sched_result *res)
{
	json_t *root = result_json(c, res);
	int r;

	if (!root)
		return -ENOMEM;
	r = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	json_decref(root);
	if (r < 0)
		return -EIO;
	fputc('\n', out);
	return 0;
}
