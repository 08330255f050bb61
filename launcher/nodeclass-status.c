/*
 * The EC2NodeClass status subresource as Karpenter (karpenter.k8s.aws/v1)
 * writes it: subnets [{id, zone, zoneID}], securityGroups [{id, name}],
 * amis [{id, name, requirements: [kubernetes.io/arch In …]}],
 * instanceProfile and the conditions SubnetsReady, SecurityGroupsReady,
 * AMIsReady, InstanceProfileReady, ValidationSucceeded and Ready (reason, message,
 * lastTransitionTime). Pure; nodeclass.c decides when to send it.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "common/util.h"
#include "launcher/nodeclass-ec2.h"

static const struct {
	const char *type, *false_reason;
} conditions[_NC_COND_MAX] = {
	[NC_COND_SUBNETS] = { "SubnetsReady", "SubnetsNotFound" },
	[NC_COND_SECURITY_GROUPS] = { "SecurityGroupsReady", "SecurityGroupsNotFound" },
	[NC_COND_AMIS] = { "AMIsReady", "AMINotFound" },
	[NC_COND_INSTANCE_PROFILE] = { "InstanceProfileReady", "InstanceProfileNotFound" },
	/* Karpenter v1's ValidationSucceeded; here false for a spec field kanna
	 * does not implement (its message names the field). */
	[NC_COND_VALIDATION] = { "ValidationSucceeded", "UnsupportedField" },
};

/* A condition's own reason when it has one (ValidationSucceeded:
 * UserDataInvalid, AMIFamilyUnknown), else the type's usual one. */
static const char *false_reason(const struct nc_condition_state *s, enum nc_condition c)
{
	return *s->reason ? s->reason : conditions[c].false_reason;
}

const char *nc_condition_type(enum nc_condition c)
{
	return conditions[c].type;
}

const char *nc_condition_false_reason(enum nc_condition c)
{
	return conditions[c].false_reason;
}

/* RFC 3339 in UTC, as metav1.Time. */
static void rfc3339(int64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *condition(const char *type, bool ok, const char *reason, const char *message,
			 int64_t since)
{
	char t[32];

	rfc3339(since, t);
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", ok ? "True" : "False",
			 "reason", ok ? type : reason, "message", ok ? "" : message,
			 "lastTransitionTime", t);
}

static int append(json_t *arr, json_t *v)
{
	return v && json_array_append_new(arr, v) == 0 ? 0 : -ENOMEM;
}

static json_t *requirement(const char *key, const char *op, const char *value)
{
	return value ? json_pack("{s:s, s:s, s:[s]}", "key", key, "operator", op, "values", value)
		     : json_pack("{s:s, s:s}", "key", key, "operator", op);
}

/* One status.amis entry per variant the image serves, with Karpenter's
 * requirements (aws/karpenter-provider-aws pkg/providers/amifamily/types.go
 * Variant.Requirements, windows.go): the arch, then standard — neither
 * accelerator nor GPU; nvidia — a GPU; neuron — an accelerator; Windows —
 * os windows and its build. */
static int amis_append(json_t *amis, const struct nc_image *im, const char *windows_build)
{
	static const unsigned variants[] = { NC_VARIANT_STANDARD, NC_VARIANT_NVIDIA, NC_VARIANT_NEURON };
	int r = 0;

	for (size_t v = 0; r >= 0 && v < ARRAY_SIZE(variants); v++) {
		json_t *reqs;

		if (im->variants != NC_VARIANTS_ANY ? !(im->variants & variants[v]) : v > 0)
			continue;
		reqs = json_array();
		r = reqs ? append(reqs, requirement("kubernetes.io/arch", "In", im->arch)) : -ENOMEM;
		if (r >= 0 && im->variants & NC_VARIANT_STANDARD && variants[v] == NC_VARIANT_STANDARD) {
			r = append(reqs, requirement("karpenter.k8s.aws/instance-accelerator-count", "DoesNotExist", NULL));
			if (r >= 0)
				r = append(reqs, requirement("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist", NULL));
		} else if (r >= 0 && variants[v] == NC_VARIANT_NVIDIA) {
			r = append(reqs, requirement("karpenter.k8s.aws/instance-gpu-count", "Exists", NULL));
		} else if (r >= 0 && variants[v] == NC_VARIANT_NEURON) {
			r = append(reqs, requirement("karpenter.k8s.aws/instance-accelerator-count", "Exists", NULL));
		}
		if (r >= 0 && *windows_build) {
			r = append(reqs, requirement("kubernetes.io/os", "In", "windows"));
			if (r >= 0)
				r = append(reqs, requirement("node.kubernetes.io/windows-build", "In", windows_build));
		}
		if (r < 0)
			json_decref(reqs);
		else
			r = append(amis, json_pack("{s:s, s:s, s:o}", "id", im->id, "name", im->name, "requirements", reqs));
	}
	return r;
}

json_t *nc_status_json(const struct nc_resolved *res, const struct nc_condition_state *conds,
		       int64_t ready_since)
{
	json_t *subnets = json_array(), *groups = json_array(), *amis = json_array();
	json_t *conds_json = json_array(), *status;
	const struct nc_condition_state *failed = NULL;
	int r = subnets && groups && amis && conds_json ? 0 : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < res->n_subnets; i++)
		r = append(subnets, json_pack("{s:s, s:s, s:s}", "id", res->subnets[i].id, "zone",
					      res->subnets[i].zone, "zoneID", res->subnets[i].zone_id));
	for (size_t i = 0; r >= 0 && i < res->n_groups; i++)
		r = append(groups, json_pack("{s:s, s:s}", "id", res->groups[i].id, "name", res->groups[i].name));
	for (size_t i = 0; r >= 0 && i < res->n_images; i++)
		r = amis_append(amis, &res->images[i], res->windows_build);
	for (int c = 0; r >= 0 && c < _NC_COND_MAX; c++) {
		if (!conds[c].ok && !failed)
			failed = &conds[c];
		r = append(conds_json, condition(conditions[c].type, conds[c].ok, false_reason(&conds[c], c),
						 conds[c].message, conds[c].since));
	}
	/* Ready: False with the first failure's reason and its precise message. */
	if (r >= 0)
		r = append(conds_json, condition("Ready", !failed,
						 failed ? false_reason(failed, failed - conds) : NULL,
						 failed ? failed->message : NULL, ready_since));
	if (r < 0) {
		json_decref(subnets);
		json_decref(groups);
		json_decref(amis);
		json_decref(conds_json);
		return NULL;
	}
	/* "o" steals the references, also when json_pack fails (jansson ≥ 2.11) */
	status = json_pack("{s:{s:o, s:o, s:o, s:s, s:o}}", "status", "subnets", subnets,
			   "securityGroups", groups, "amis", amis, "instanceProfile",
			   res->instance_profile, "conditions", conds_json);
	return status;
}

json_t *nc_status_json_for(enum proto_api_version api, const struct nc_resolved *res,
			   const struct nc_condition_state *conds, int64_t ready_since)
{
	json_t *body = nc_status_json(res, conds, ready_since), *status, *subnet;
	size_t i;

	if (!body || api != PROTO_API_V1ALPHA5)
		return body;
	status = json_object_get(body, "status");
	json_object_del(status, "conditions");
	json_object_del(status, "instanceProfile");
	json_array_foreach(json_object_get(status, "subnets"), i, subnet)
		json_object_del(subnet, "zoneID");
	return body;
}

int nc_status_path(enum proto_api_version api, const char *name, char **ret)
{
	const char *collection = api == PROTO_API_V1ALPHA5 ? "v1alpha1/awsnodetemplates" :
				 api == PROTO_API_V1BETA1  ? "v1beta1/ec2nodeclasses" :
							     "v1/ec2nodeclasses";

	return asprintf(ret, "/apis/karpenter.k8s.aws/%s/%s/status", collection, name) < 0 ? -ENOMEM : 0;
}
