/*
 * Drift: is a launched NodeClaim still what its NodePool and EC2NodeClass
 * would launch today? A pure decision over the replicated objects and,
 * when EC2 has described it, the instance; disruption.c asks it every pass
 * and replaces a drifted NodeClaim as it does an expired one (replacement
 * Ready first, then the drain), within the NodePool's Drifted budgets.
 */
#ifndef KANNA_REAPER_DRIFT_H
#define KANNA_REAPER_DRIFT_H

#include "common/aws-ec2.h"
#include "proto/proto.h"

/* Karpenter's drift reasons (the NodeClaim's Drifted condition reason), in
 * the order they are checked. */
enum drift_reason {
	DRIFT_NONE,
	DRIFT_NODEPOOL,       /* NodePoolDrifted: nodepool-hash differs (static) */
	DRIFT_REQUIREMENTS,   /* RequirementsDrifted: a label the requirements refuse */
	DRIFT_NODECLASS,      /* NodeClassDrift: ec2nodeclass-hash differs (static) */
	DRIFT_AMI,            /* AMIDrift: not the image the EC2NodeClass resolves to now */
	DRIFT_SECURITY_GROUP, /* SecurityGroupDrift: not the resolved security groups */
	DRIFT_SUBNET,         /* SubnetDrift: not in a resolved subnet */
};

/* "NodePoolDrifted", "AMIDrift", …; "" for DRIFT_NONE. */
const char *drift_reason_name(enum drift_reason reason);

/*
 * Why nc (launched: it has a providerID) has drifted from np and its
 * EC2NodeClass ncl (NULL: not known yet: no NodeClass drift), or
 * DRIFT_NONE. instance: EC2's description of its instance (NULL: not
 * described yet: no subnet or security group drift).
 */
enum drift_reason drift_check(const struct proto_nodeclaim *nc, const struct proto_nodepool *np,
			      const struct proto_nodeclass *ncl, const struct ec2_instance *instance);

#endif
