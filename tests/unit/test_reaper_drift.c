/*
 * Drift (reaper/drift.h) and the static-drift hashes the decoder computes
 * (decode/decode-hash.c): objects decoded from the JSON users write, so
 * that a NodeClaim stamped from a NodePool and an EC2NodeClass is compared
 * with them exactly as the reaper does after a change.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "decode/decode.h"
#include "reaper/drift.h"

static struct arena arena;
static struct decoder dec;

static void setup(void)
{
	memset(&arena, 0, sizeof(arena));
	dec = (struct decoder){ .arena = &arena };
}

static void teardown(void)
{
	arena_done(&arena);
}

TestSuite(drift, .init = setup, .fini = teardown);

static json_t *parse(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);

	cr_assert_not_null(j, "fixture is not JSON: %s at %d:%d", err.text, err.line, err.column);
	return j;
}

static struct proto_nodepool nodepool(const char *text)
{
	struct proto_nodepool np;
	json_t *j = parse(text);

	cr_assert_eq(decode_nodepool(&dec, j, &np), 0, "%s", dec.error);
	json_decref(j);
	return np;
}

static struct proto_nodeclass nodeclass(const char *text)
{
	struct proto_nodeclass nc;
	json_t *j = parse(text);

	cr_assert_eq(decode_nodeclass(&dec, j, &nc), 0, "%s", dec.error);
	json_decref(j);
	return nc;
}

#define NODEPOOL_V1(template_metadata, template_spec, rest)                                    \
	"{\"apiVersion\": \"karpenter.sh/v1\", \"kind\": \"NodePool\","                         \
	" \"metadata\": {\"name\": \"default\", \"uid\": \"u1\"},"                              \
	" \"spec\": {\"template\": {\"metadata\": {" template_metadata "},"                     \
	" \"spec\": {\"nodeClassRef\": {\"group\": \"karpenter.k8s.aws\","                      \
	" \"kind\": \"EC2NodeClass\", \"name\": \"default\"}" template_spec "}}" rest "}}"

#define NODECLASS_V1(spec, status)                                                             \
	"{\"apiVersion\": \"karpenter.k8s.aws/v1\", \"kind\": \"EC2NodeClass\","                \
	" \"metadata\": {\"name\": \"default\", \"uid\": \"u2\"},"                              \
	" \"spec\": {\"role\": \"KarpenterNodeRole\","                                          \
	" \"subnetSelectorTerms\": [{\"tags\": {\"karpenter.sh/discovery\": \"kanna\"}}],"      \
	" \"securityGroupSelectorTerms\": [{\"tags\": {\"karpenter.sh/discovery\": \"kanna\"}}]" \
	spec "}, \"status\": {" status "}}"

#define STATUS_RESOLVED                                                                        \
	"\"subnets\": [{\"id\": \"subnet-a\", \"zone\": \"us-west-2a\"},"                        \
	" {\"id\": \"subnet-b\", \"zone\": \"us-west-2b\"}],"                                   \
	" \"securityGroups\": [{\"id\": \"sg-1\"}, {\"id\": \"sg-2\"}],"                       \
	" \"amis\": [{\"id\": \"ami-arm\", \"requirements\": [{\"key\": \"kubernetes.io/arch\","  \
	" \"operator\": \"In\", \"values\": [\"arm64\"]}]},"                                     \
	" {\"id\": \"ami-new\", \"requirements\": [{\"key\": \"kubernetes.io/arch\","            \
	" \"operator\": \"In\", \"values\": [\"amd64\"]}]}]"

/* ---- the hashes ---- */

Test(drift, nodepool_hash_does_not_depend_on_the_order_labels_taints_and_annotations_are_written_in)
{
	struct proto_nodepool a = nodepool(NODEPOOL_V1(
		"\"labels\": {\"team\": \"a\", \"tier\": \"web\"}, \"annotations\": {\"x\": \"1\", \"y\": \"2\"}",
		", \"taints\": [{\"key\": \"k1\", \"effect\": \"NoSchedule\"},"
		" {\"key\": \"k2\", \"value\": \"v\", \"effect\": \"NoExecute\"}]", ""));
	struct proto_nodepool b = nodepool(NODEPOOL_V1(
		"\"annotations\": {\"y\": \"2\", \"x\": \"1\"}, \"labels\": {\"tier\": \"web\", \"team\": \"a\"}",
		", \"taints\": [{\"effect\": \"NoExecute\", \"value\": \"v\", \"key\": \"k2\"},"
		" {\"key\": \"k1\", \"effect\": \"NoSchedule\"}]", ""));

	cr_assert_not_null(a.nodepool_hash);
	cr_assert_str_eq(a.nodepool_hash, b.nodepool_hash);
	cr_assert_str_eq(a.nodepool_hash_version, NODEPOOL_HASH_VERSION);
}

Test(drift, nodepool_hash_changes_with_each_template_field_karpenter_hashes)
{
	const char *base = nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}", "", "")).nodepool_hash;
	const char *changed[] = {
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"b\"}", "", "")).nodepool_hash,
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\", \"new\": \"x\"}", "", "")).nodepool_hash,
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}, \"annotations\": {\"a\": \"b\"}", "",
				     "")).nodepool_hash,
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}",
				     ", \"taints\": [{\"key\": \"k\", \"effect\": \"NoSchedule\"}]", ""))
			.nodepool_hash,
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}",
				     ", \"startupTaints\": [{\"key\": \"k\", \"effect\": \"NoSchedule\"}]",
				     "")).nodepool_hash,
		/* v1: expireAfter and terminationGracePeriod are template fields. */
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}", ", \"expireAfter\": \"24h\"", ""))
			.nodepool_hash,
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}", ", \"terminationGracePeriod\": \"1h\"",
				     "")).nodepool_hash,
	};

	for (size_t i = 0; i < ARRAY_SIZE(changed); i++)
		cr_expect_str_neq(changed[i], base, "change %zu left the hash as it was", i);
}

Test(drift, nodepool_hash_ignores_requirements_disruption_limits_and_weight)
{
	const char *base = nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}", "", "")).nodepool_hash;
	const char *same[] = {
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}",
				     ", \"requirements\": [{\"key\": \"karpenter.sh/capacity-type\","
				     " \"operator\": \"In\", \"values\": [\"spot\"]}]", "")).nodepool_hash,
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}", "",
				     ", \"disruption\": {\"consolidationPolicy\": \"WhenEmpty\","
				     " \"consolidateAfter\": \"1m\", \"budgets\": [{\"nodes\": \"1\"}]}"))
			.nodepool_hash,
		nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}", "",
				     ", \"limits\": {\"cpu\": \"100\"}, \"weight\": 10")).nodepool_hash,
		/* Spelling out the group and kind the launcher assumes. */
		nodepool("{\"apiVersion\": \"karpenter.sh/v1\", \"kind\": \"NodePool\","
			 " \"metadata\": {\"name\": \"default\", \"uid\": \"u1\"},"
			 " \"spec\": {\"template\": {\"metadata\": {\"labels\": {\"team\": \"a\"}},"
			 " \"spec\": {\"nodeClassRef\": {\"name\": \"default\"}}}}}").nodepool_hash,
	};

	for (size_t i = 0; i < ARRAY_SIZE(same); i++)
		cr_expect_str_eq(same[i], base, "change %zu changed the hash", i);
}

Test(drift, nodeclass_hash_ignores_selector_terms_and_status_but_not_user_data_or_tags)
{
	const char *base = nodeclass(NODECLASS_V1(", \"amiSelectorTerms\": [{\"alias\": \"al2023@latest\"}]",
						  "")).nodeclass_hash;

	cr_assert_not_null(base);
	cr_expect_str_eq(nodeclass(NODECLASS_V1(", \"amiSelectorTerms\": [{\"alias\": \"al2023@v20250601\"}]",
						STATUS_RESOLVED)).nodeclass_hash, base);
	/* amiFamily spelled out as the alias implies: Karpenter hashes the
	 * resolved family, so nothing drifts. */
	cr_expect_str_eq(nodeclass(NODECLASS_V1(", \"amiFamily\": \"AL2023\", \"amiSelectorTerms\":"
						" [{\"alias\": \"al2023@latest\"}]", "")).nodeclass_hash,
			 base);
	cr_expect_str_neq(nodeclass(NODECLASS_V1(", \"amiSelectorTerms\": [{\"alias\": \"bottlerocket@latest\"}]",
						 "")).nodeclass_hash, base);
	cr_expect_str_neq(nodeclass(NODECLASS_V1(", \"amiSelectorTerms\": [{\"alias\": \"al2023@latest\"}],"
						 " \"userData\": \"echo hi\"", "")).nodeclass_hash, base);
	cr_expect_str_neq(nodeclass(NODECLASS_V1(", \"amiSelectorTerms\": [{\"alias\": \"al2023@latest\"}],"
						 " \"tags\": {\"team\": \"a\"}", "")).nodeclass_hash, base);
	cr_expect_str_neq(nodeclass(NODECLASS_V1(", \"amiSelectorTerms\": [{\"alias\": \"al2023@latest\"}],"
						 " \"metadataOptions\": {\"httpPutResponseHopLimit\": 2}", ""))
				  .nodeclass_hash, base);
}

Test(drift, nodeclass_hash_does_not_depend_on_the_order_of_tags_and_block_devices)
{
	struct proto_nodeclass a = nodeclass(NODECLASS_V1(
		", \"amiFamily\": \"AL2023\", \"tags\": {\"a\": \"1\", \"b\": \"2\"}, \"blockDeviceMappings\":"
		" [{\"deviceName\": \"/dev/xvda\", \"ebs\": {\"volumeSize\": \"20Gi\"}},"
		" {\"deviceName\": \"/dev/xvdb\", \"ebs\": {\"volumeSize\": \"100Gi\"}}]", ""));
	struct proto_nodeclass b = nodeclass(NODECLASS_V1(
		", \"blockDeviceMappings\": [{\"deviceName\": \"/dev/xvdb\", \"ebs\": {\"volumeSize\": \"100Gi\"}},"
		" {\"ebs\": {\"volumeSize\": \"20Gi\"}, \"deviceName\": \"/dev/xvda\"}],"
		" \"tags\": {\"b\": \"2\", \"a\": \"1\"}, \"amiFamily\": \"AL2023\"", ""));

	cr_assert_str_eq(a.nodeclass_hash, b.nodeclass_hash);
	cr_assert_str_eq(a.nodeclass_hash_version, NODECLASS_HASH_VERSION);
}

/* ---- the decision ---- */

/* A NodeClaim launched from np and ncl as the launcher stamps it (x86). */
static struct proto_nodeclaim launched(const struct proto_nodepool *np,
				       const struct proto_nodeclass *ncl, const char *image)
{
	char text[4096];
	struct proto_nodeclaim nc;
	json_t *j;

	snprintf(text, sizeof(text),
		 "{\"apiVersion\": \"karpenter.sh/v1\", \"kind\": \"NodeClaim\","
		 " \"metadata\": {\"name\": \"default-abc\", \"uid\": \"u3\","
		 " \"labels\": {\"karpenter.sh/nodepool\": \"default\", \"kubernetes.io/arch\": \"amd64\","
		 " \"karpenter.sh/capacity-type\": \"on-demand\", \"team\": \"a\"},"
		 " \"annotations\": {\"%s\": \"%s\", \"%s\": \"%s\", \"%s\": \"%s\", \"%s\": \"%s\"}},"
		 " \"spec\": {\"nodeClassRef\": {\"name\": \"default\"}},"
		 " \"status\": {\"providerID\": \"aws:///us-west-2a/i-0123\", \"imageID\": \"%s\"}}",
		 KARPENTER_NODEPOOL_HASH_ANNOTATION, np->nodepool_hash,
		 KARPENTER_NODEPOOL_HASH_VERSION_ANNOTATION, np->nodepool_hash_version,
		 KARPENTER_NODECLASS_HASH_ANNOTATION, ncl->nodeclass_hash,
		 KARPENTER_NODECLASS_HASH_VERSION_ANNOTATION, ncl->nodeclass_hash_version, image);
	j = parse(text);
	cr_assert_eq(decode_nodeclaim(&dec, j, &nc), 0, "%s", dec.error);
	json_decref(j);
	return nc;
}

static struct ec2_instance instance(const char *subnet, const char *sg1, const char *sg2)
{
	struct ec2_instance i = { .n_security_groups = sg2 ? 2 : 1 };

	snprintf(i.instance_id, sizeof(i.instance_id), "i-0123");
	snprintf(i.image_id, sizeof(i.image_id), "ami-new");
	snprintf(i.subnet_id, sizeof(i.subnet_id), "%s", subnet);
	snprintf(i.security_groups[0], sizeof(i.security_groups[0]), "%s", sg1);
	if (sg2)
		snprintf(i.security_groups[1], sizeof(i.security_groups[1]), "%s", sg2);
	return i;
}

#define POOL NODEPOOL_V1("\"labels\": {\"team\": \"a\"}", \
			 ", \"requirements\": [{\"key\": \"karpenter.sh/capacity-type\"," \
			 " \"operator\": \"In\", \"values\": [\"on-demand\", \"spot\"]}]", "")
#define CLASS NODECLASS_V1(", \"amiFamily\": \"AL2023\", \"amiSelectorTerms\": [{\"name\": \"x\"}]", \
			   STATUS_RESOLVED)

Test(drift, a_nodeclaim_launched_from_the_current_objects_has_not_drifted)
{
	struct proto_nodepool np = nodepool(POOL);
	struct proto_nodeclass ncl = nodeclass(CLASS);
	struct proto_nodeclaim nc = launched(&np, &ncl, "ami-new");
	struct ec2_instance i = instance("subnet-b", "sg-1", "sg-2");

	cr_assert_eq(drift_check(&nc, &np, &ncl, &i), DRIFT_NONE);
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NONE);
}

Test(drift, a_changed_nodepool_template_drifts_its_nodeclaims_statically)
{
	struct proto_nodepool old = nodepool(POOL), np;
	struct proto_nodeclass ncl = nodeclass(CLASS);
	struct proto_nodeclaim nc = launched(&old, &ncl, "ami-new");

	np = nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\", \"generation\": \"2\"}", "", ""));
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NODEPOOL);
	cr_assert_str_eq(drift_reason_name(DRIFT_NODEPOOL), "NodePoolDrifted");
}

Test(drift, a_nodeclaim_with_another_hash_version_is_not_drifted_statically)
{
	struct proto_nodepool np = nodepool(POOL);
	struct proto_nodeclass ncl = nodeclass(CLASS);
	struct proto_nodeclaim nc = launched(&np, &ncl, "ami-new");

	/* What Karpenter itself stamps: its own hash, version v3 / v4. */
	nc.nodepool_hash = "12345678901234567890";
	nc.nodepool_hash_version = "v3";
	nc.nodeclass_hash = "98765";
	nc.nodeclass_hash_version = "v4";
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NONE);
	/* … and a NodeClaim with no version at all (kanna before drift). */
	nc.nodepool_hash_version = nc.nodeclass_hash_version = NULL;
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NONE);
	/* Dynamic drift still applies to it. */
	nc.image_id = "ami-old";
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_AMI);
}

Test(drift, a_label_the_nodepool_requirements_no_longer_allow_is_requirements_drift)
{
	struct proto_nodepool np = nodepool(POOL);
	struct proto_nodeclass ncl = nodeclass(CLASS);
	struct proto_nodeclaim nc = launched(&np, &ncl, "ami-new");

	np = nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}",
				  ", \"requirements\": [{\"key\": \"karpenter.sh/capacity-type\","
				  " \"operator\": \"In\", \"values\": [\"spot\"]}]", ""));
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_REQUIREMENTS);
	/* A key the NodeClaim has no label for is not drift (see drift.c). */
	np = nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"a\"}",
				  ", \"requirements\": [{\"key\": \"example.com/rack\","
				  " \"operator\": \"In\", \"values\": [\"r1\"]}]", ""));
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NONE);
}

Test(drift, a_changed_nodeclass_spec_drifts_statically)
{
	struct proto_nodepool np = nodepool(POOL);
	struct proto_nodeclass ncl = nodeclass(CLASS);
	struct proto_nodeclaim nc = launched(&np, &ncl, "ami-new");

	ncl = nodeclass(NODECLASS_V1(", \"amiFamily\": \"AL2023\", \"amiSelectorTerms\": [{\"name\": \"x\"}],"
				     " \"userData\": \"echo changed\"", STATUS_RESOLVED));
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NODECLASS);
}

Test(drift, an_image_that_is_not_the_one_status_amis_gives_its_architecture_is_ami_drift)
{
	struct proto_nodepool np = nodepool(POOL);
	struct proto_nodeclass ncl = nodeclass(CLASS);
	struct proto_nodeclaim nc = launched(&np, &ncl, "ami-old");

	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_AMI);
	/* The arm64 image is listed, but not for an amd64 node. */
	nc.image_id = "ami-arm";
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_AMI);
	/* No status yet: nothing to compare with. */
	ncl = nodeclass(NODECLASS_V1(", \"amiFamily\": \"AL2023\", \"amiSelectorTerms\": [{\"name\": \"x\"}]", ""));
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NONE);
}

/* status.amis as the launcher writes it for an alias with variants
 * (nvidia listed first here): a node without GPUs maps to the standard
 * image, a GPU node to the nvidia one. */
#define STATUS_VARIANTS                                                                        \
	"\"subnets\": [{\"id\": \"subnet-a\", \"zone\": \"us-west-2a\"}],"                      \
	" \"securityGroups\": [{\"id\": \"sg-1\"}],"                                              \
	" \"amis\": [{\"id\": \"ami-gpu\", \"requirements\": [{\"key\": \"kubernetes.io/arch\","  \
	" \"operator\": \"In\", \"values\": [\"amd64\"]}, {\"key\":"                                 \
	" \"karpenter.k8s.aws/instance-gpu-count\", \"operator\": \"Exists\"}]},"                   \
	" {\"id\": \"ami-new\", \"requirements\": [{\"key\": \"kubernetes.io/arch\","            \
	" \"operator\": \"In\", \"values\": [\"amd64\"]}, {\"key\":"                                 \
	" \"karpenter.k8s.aws/instance-gpu-count\", \"operator\": \"DoesNotExist\"}]}]"

Test(drift, an_accelerated_variants_image_is_not_what_a_node_without_gpus_should_run)
{
	struct proto_nodepool np = nodepool(POOL);
	struct proto_nodeclass ncl = nodeclass(NODECLASS_V1(
		", \"amiFamily\": \"AL2023\", \"amiSelectorTerms\": [{\"name\": \"x\"}]", STATUS_VARIANTS));
	struct proto_nodeclaim nc = launched(&np, &ncl, "ami-new");
	struct proto_kv gpu_labels[16];

	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NONE);
	nc.image_id = "ami-gpu";
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_AMI);
	/* the same NodeClaim on a GPU type runs the nvidia image rightly */
	cr_assert_lt(nc.n_labels, 15);
	memcpy(gpu_labels, nc.labels, nc.n_labels * sizeof(*gpu_labels));
	gpu_labels[nc.n_labels] = (struct proto_kv){ "karpenter.k8s.aws/instance-gpu-count", "1" };
	nc.labels = gpu_labels;
	nc.n_labels++;
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NONE);
	nc.image_id = "ami-new";
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_AMI);
}

Test(drift, security_groups_must_be_exactly_the_resolved_ones)
{
	struct proto_nodepool np = nodepool(POOL);
	struct proto_nodeclass ncl = nodeclass(CLASS);
	struct proto_nodeclaim nc = launched(&np, &ncl, "ami-new");
	struct ec2_instance fewer = instance("subnet-a", "sg-1", NULL);
	struct ec2_instance other = instance("subnet-a", "sg-1", "sg-9");

	cr_assert_eq(drift_check(&nc, &np, &ncl, &fewer), DRIFT_SECURITY_GROUP);
	cr_assert_eq(drift_check(&nc, &np, &ncl, &other), DRIFT_SECURITY_GROUP);
	cr_assert_str_eq(drift_reason_name(DRIFT_SECURITY_GROUP), "SecurityGroupDrift");
}

Test(drift, an_instance_outside_the_resolved_subnets_is_subnet_drift)
{
	struct proto_nodepool np = nodepool(POOL);
	struct proto_nodeclass ncl = nodeclass(CLASS);
	struct proto_nodeclaim nc = launched(&np, &ncl, "ami-new");
	struct ec2_instance i = instance("subnet-z", "sg-2", "sg-1");

	cr_assert_eq(drift_check(&nc, &np, &ncl, &i), DRIFT_SUBNET);
	/* Not yet described by EC2: subnet and groups are not checked. */
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NONE);
}

Test(drift, a_nodeclaim_not_yet_launched_never_drifts)
{
	struct proto_nodepool old = nodepool(POOL), np;
	struct proto_nodeclass ncl = nodeclass(CLASS);
	struct proto_nodeclaim nc = launched(&old, &ncl, "ami-old");

	np = nodepool(NODEPOOL_V1("\"labels\": {\"team\": \"b\"}", "", ""));
	nc.provider_id = NULL;
	cr_assert_eq(drift_check(&nc, &np, &ncl, NULL), DRIFT_NONE);
}
