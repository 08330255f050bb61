/*
 * The drift decision (reaper/drift.h), as Karpenter makes it:
 *  - static, kubernetes-sigs/karpenter pkg/controllers/nodeclaim/disruption/
 *    drift.go: NodePoolDrifted when the NodeClaim's karpenter.sh/nodepool-hash
 *    differs from the NodePool's — only when both carry a hash and the same
 *    karpenter.sh/nodepool-hash-version. Our hashes are our own scheme
 *    (decode/decode-hash.c), not Karpenter's hashstructure values, so a
 *    NodeClaim Karpenter launched (hash-version "v3") is never statically
 *    drifted here, exactly as Karpenter skips static drift on a version
 *    mismatch; it still drifts dynamically (AMI, subnet, security groups).
 *    RequirementsDrifted when a NodePool requirement refuses the value of
 *    one of the NodeClaim's labels (areRequirementsDrifted).
 *  - aws/karpenter-provider-aws pkg/cloudprovider/drift.go
 *    (isNodeClassDrifted): NodeClassDrift, the same test on
 *    karpenter.k8s.aws/ec2nodeclass-hash(-version); AMIDrift when the
 *    NodeClaim's image (status.imageID) is not the one status.amis maps its
 *    instance type to; SecurityGroupDrift when the instance's security
 *    groups are not exactly status.securityGroups; SubnetDrift when its
 *    subnet is not among status.subnets. An empty status list decides
 *    nothing (Karpenter returns an error and retries).
 * Called by disruption.c; pure, unit-tested (tests/unit/test_reaper_drift.c).
 */
#include "common/util.h"
#include "model/match.h"
#include "reaper/drift.h"

const char *drift_reason_name(enum drift_reason reason)
{
	static const char *const names[] = {
		[DRIFT_NONE] = "",
		[DRIFT_NODEPOOL] = "NodePoolDrifted",
		[DRIFT_REQUIREMENTS] = "RequirementsDrifted",
		[DRIFT_NODECLASS] = "NodeClassDrift",
		[DRIFT_AMI] = "AMIDrift",
		[DRIFT_SECURITY_GROUP] = "SecurityGroupDrift",
		[DRIFT_SUBNET] = "SubnetDrift",
	};

	return (unsigned)reason < ARRAY_SIZE(names) ? names[reason] : "";
}

/* Karpenter's areStaticFieldsDrifted: a hash on both sides, one version. */
static bool hash_drifted(const char *want, const char *want_version, const char *have,
			 const char *have_version)
{
	if (!want || !want_version || !have || !have_version)
		return false;
	return streq(want_version, have_version) && !streq(want, have);
}

/*
 * Karpenter: every NodePool requirement must be compatible with the
 * NodeClaim's labels. One difference, on purpose: a key the NodeClaim has
 * no label for is not drift here (Karpenter calls it drifted unless the
 * operator is NotIn or DoesNotExist). Its NodeClaims carry every label of
 * their instance type; ours carry the launcher's, and a key it does not
 * stamp would be missing from the replacement too — replaced forever.
 */
static bool requirements_drifted(const struct proto_nodeclaim *nc, const struct proto_nodepool *np)
{
	for (uint32_t i = 0; i < np->n_requirements; i++) {
		const struct proto_requirement *q = &np->requirements[i];
		const char *v = proto_labels_get(nc->labels, nc->n_labels, q->key);
		if (v && !requirements_allow(q, 1, q->key, v))
			return true;
	}
	return false;
}

/* Do the AMI's requirements (kubernetes.io/arch In [...]) allow the
 * NodeClaim's labels? A label it lacks is allowed (Karpenter's
 * AllowUndefinedWellKnownLabels), except by Exists: an accelerated
 * variant's "instance-gpu-count Exists" is not a type without GPUs
 * (Karpenter's instance types say DoesNotExist for the labels they lack). */
static bool ami_fits(const struct proto_resolved *ami, const struct proto_nodeclaim *nc)
{
	for (uint32_t i = 0; i < ami->n_requirements; i++) {
		const char *v = proto_labels_get(nc->labels, nc->n_labels, ami->requirements[i].key);
		if (!v && ami->requirements[i].op == PROTO_OP_EXISTS)
			return false;
		if (v && !requirements_allow(&ami->requirements[i], 1, ami->requirements[i].key, v))
			return false;
	}
	return true;
}

/* amifamily.MapToInstanceTypes: the first AMI of status.amis whose
 * requirements fit is the one a launch would use now (the launcher picks
 * it the same way, launcher/nodeclass-launch.c). */
static bool ami_drifted(const struct proto_nodeclaim *nc, const struct proto_nodeclass *ncl,
			const struct ec2_instance *instance)
{
	const char *image = nc->image_id && *nc->image_id ? nc->image_id :
			    instance && *instance->image_id ? instance->image_id : NULL;

	if (!image || !ncl->n_status_amis)
		return false;
	for (uint32_t i = 0; i < ncl->n_status_amis; i++)
		if (ami_fits(&ncl->status_amis[i], nc))
			return !streq_ptr(ncl->status_amis[i].id, image);
	return true; /* no AMI for its instance type any more */
}

static bool resolved_has(const struct proto_resolved *v, uint32_t n, const char *id)
{
	for (uint32_t i = 0; i < n; i++)
		if (streq_ptr(v[i].id, id))
			return true;
	return false;
}

/* sets.Equal(status.securityGroups ids, the instance's group ids). */
static bool security_groups_drifted(const struct proto_nodeclass *ncl,
				    const struct ec2_instance *instance)
{
	if (!ncl->n_status_security_groups)
		return false;
	for (unsigned i = 0; i < instance->n_security_groups; i++)
		if (!resolved_has(ncl->status_security_groups, ncl->n_status_security_groups,
				  instance->security_groups[i]))
			return true;
	for (uint32_t i = 0; i < ncl->n_status_security_groups; i++) {
		bool found = false;
		for (unsigned k = 0; k < instance->n_security_groups && !found; k++)
			found = streq_ptr(ncl->status_security_groups[i].id, instance->security_groups[k]);
		if (!found)
			return true;
	}
	return false;
}

static bool subnet_drifted(const struct proto_nodeclass *ncl, const struct ec2_instance *instance)
{
	return ncl->n_status_subnets && *instance->subnet_id &&
	       !resolved_has(ncl->status_subnets, ncl->n_status_subnets, instance->subnet_id);
}

enum drift_reason drift_check(const struct proto_nodeclaim *nc, const struct proto_nodepool *np,
			      const struct proto_nodeclass *ncl, const struct ec2_instance *instance)
{
	/* Only a launched NodeClaim can drift (Karpenter: Launched=True). */
	if (!nc->provider_id || !*nc->provider_id)
		return DRIFT_NONE;
	if (hash_drifted(np->nodepool_hash, np->nodepool_hash_version, nc->nodepool_hash,
			 nc->nodepool_hash_version))
		return DRIFT_NODEPOOL;
	if (requirements_drifted(nc, np))
		return DRIFT_REQUIREMENTS;
	if (!ncl)
		return DRIFT_NONE;
	if (hash_drifted(ncl->nodeclass_hash, ncl->nodeclass_hash_version, nc->nodeclass_hash,
			 nc->nodeclass_hash_version))
		return DRIFT_NODECLASS;
	if (ami_drifted(nc, ncl, instance))
		return DRIFT_AMI;
	if (instance && security_groups_drifted(ncl, instance))
		return DRIFT_SECURITY_GROUP;
	if (instance && subnet_drifted(ncl, instance))
		return DRIFT_SUBNET;
	return DRIFT_NONE;
}
