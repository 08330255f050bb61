/*
 * What the older Karpenter versions defaulted (v1alpha5 Provisioner
 * requirements, the IMDS hop limit of v1beta1 and v1alpha1 node classes),
 * and node class fields kanna does not implement: named in `unsupported`,
 * never dropped silently (associatePublicIPAddress it implements).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/decode.h"

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

TestSuite(decode_versions, .init = setup, .fini = teardown);

static json_t *parse(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);
	cr_assert_not_null(j, "fixture is not JSON: %s at %d:%d", err.text, err.line, err.column);
	return j;
}

static const struct proto_requirement *find(const struct proto_nodepool *np, const char *key)
{
	for (uint32_t i = 0; i < np->n_requirements; i++)
		if (strcmp(np->requirements[i].key, key) == 0)
			return &np->requirements[i];
	return NULL;
}

static void provisioner(const char *requirements, struct proto_nodepool *np)
{
	char text[1024];
	json_t *j;

	snprintf(text, sizeof(text),
		 "{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\",\"metadata\":{\"name\":\"p\"},"
		 " \"spec\":{\"requirements\":[%s],\"providerRef\":{\"name\":\"t\"}}}",
		 requirements);
	j = parse(text);
	cr_assert_eq(decode_nodepool(&dec, j, np), 0, "%s", dec.error);
	json_decref(j);
}

/* aws/karpenter v0.31 pkg/apis/v1alpha5/provisioner.go SetDefaults */
Test(decode_versions, a_v1alpha5_provisioner_gets_linux_and_c_m_r_generation_above_2)
{
	struct proto_nodepool np;
	const struct proto_requirement *r;

	provisioner("", &np);
	cr_assert_eq(np.n_requirements, 5);
	cr_assert_str_eq(find(&np, "kubernetes.io/os")->values[0], "linux");
	cr_assert_str_eq(find(&np, "kubernetes.io/arch")->values[0], "amd64");
	cr_assert_str_eq(find(&np, "karpenter.sh/capacity-type")->values[0], "on-demand");
	r = find(&np, "karpenter.k8s.aws/instance-category");
	cr_assert_not_null(r);
	cr_assert_eq(r->op, PROTO_OP_IN);
	cr_assert_eq(r->n_values, 3);
	cr_assert_str_eq(r->values[0], "c");
	cr_assert_str_eq(r->values[1], "m");
	cr_assert_str_eq(r->values[2], "r");
	r = find(&np, "karpenter.k8s.aws/instance-generation");
	cr_assert_not_null(r);
	cr_assert_eq(r->op, PROTO_OP_GT);
	cr_assert_eq(r->n_values, 1);
	cr_assert_str_eq(r->values[0], "2");
}

Test(decode_versions, a_provisioner_constraining_the_instance_type_keeps_its_own_choice)
{
	static const char *const constraints[] = {
		"{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"In\",\"values\":[\"t3.large\"]}",
		"{\"key\":\"karpenter.k8s.aws/instance-family\",\"operator\":\"In\",\"values\":[\"t3\"]}",
		"{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":[\"t\"]}",
		"{\"key\":\"karpenter.k8s.aws/instance-generation\",\"operator\":\"Gt\",\"values\":[\"5\"]}",
	};
	struct proto_nodepool np;

	for (size_t i = 0; i < sizeof(constraints) / sizeof(*constraints); i++) {
		provisioner(constraints[i], &np);
		cr_assert_eq(np.n_requirements, 4, "case %zu: its own, os, arch, capacity-type", i);
		if (i != 2)
			cr_assert_null(find(&np, "karpenter.k8s.aws/instance-category"), "case %zu", i);
		if (i != 3)
			cr_assert_null(find(&np, "karpenter.k8s.aws/instance-generation"), "case %zu", i);
	}
	provisioner("{\"key\":\"kubernetes.io/os\",\"operator\":\"In\",\"values\":[\"windows\"]}", &np);
	cr_assert_eq(find(&np, "kubernetes.io/os")->n_values, 1);
	cr_assert_str_eq(find(&np, "kubernetes.io/os")->values[0], "windows");
}

static int decode_class(const char *text, struct proto_nodeclass *nc)
{
	json_t *j = parse(text);
	int r = decode_nodeclass(&dec, j, nc);

	json_decref(j);
	return r;
}

#define SELECTORS_V1 "\"subnetSelectorTerms\":[{\"id\":\"subnet-1\"}],\"securityGroupSelectorTerms\":[{\"id\":\"sg-1\"}]"
#define SELECTORS_V1ALPHA1 "\"subnetSelector\":{\"aws-ids\":\"subnet-1\"},\"securityGroupSelector\":{\"aws-ids\":\"sg-1\"}"

static const struct proto_selector_term *ami_term(const struct proto_nodeclass *nc, const char *owner,
						 const char *id, const char *name)
{
	for (uint32_t i = 0; i < nc->n_ami_selector_terms; i++) {
		const struct proto_selector_term *t = &nc->ami_selector_terms[i];
		if (streq_ptr(t->owner, owner) && streq_ptr(t->id, id) && streq_ptr(t->name, name))
			return t;
	}
	return NULL;
}

/* Upstream's conversion of a v1alpha1 amiSelector (NewAMISelectorTerms):
 * aws::ids is aws-ids, aws::owners the DescribeImages owners, one term per
 * owner × id × name, each with the other keys as tags. */
Test(decode_versions, ami_map_selector_honours_aws_ids_and_aws_owners)
{
	struct proto_nodeclass nc;
	const struct proto_selector_term *t;

	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\","
				  "\"metadata\":{\"name\":\"a\"},\"spec\":{" SELECTORS_V1ALPHA1 ","
				  "\"amiSelector\":{\"aws::ids\":\"ami-1, ami-2\",\"aws::owners\":\"self,amazon\","
				  "\"team\":\"x\"}}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.n_ami_selector_terms, 4);
	t = ami_term(&nc, "amazon", "ami-2", NULL);
	cr_assert_not_null(t);
	cr_assert_eq(t->n_tags, 1);
	cr_assert_str_eq(t->tags[0].key, "team");
	cr_assert_not_null(ami_term(&nc, "self", "ami-1", NULL));
	for (uint32_t i = 0; i < nc.n_ami_selector_terms; i++)
		for (uint32_t k = 0; k < nc.ami_selector_terms[i].n_tags; k++)
			cr_assert(strncmp(nc.ami_selector_terms[i].tags[k].key, "aws:", 4) != 0,
				  "%s is a tag", nc.ami_selector_terms[i].tags[k].key);
	/* aws-ids and a name: one term with both, owners left to the launcher */
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\","
				  "\"metadata\":{\"name\":\"b\"},\"spec\":{" SELECTORS_V1ALPHA1 ","
				  "\"amiSelector\":{\"aws-ids\":\"ami-1\",\"aws::name\":\"n\"}}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.n_ami_selector_terms, 1);
	cr_assert_not_null(ami_term(&nc, NULL, "ami-1", "n"));
	/* owners alone */
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\","
				  "\"metadata\":{\"name\":\"c\"},\"spec\":{" SELECTORS_V1ALPHA1 ","
				  "\"amiSelector\":{\"aws::owners\":\"123456789012\"}}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.n_ami_selector_terms, 1);
	cr_assert_not_null(ami_term(&nc, "123456789012", NULL, NULL));
	/* aws::ids is aws-ids for subnets and security groups too */
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\","
				  "\"metadata\":{\"name\":\"s\"},\"spec\":{\"subnetSelector\":{\"aws::ids\":\"subnet-1,subnet-2\"},"
				  "\"securityGroupSelector\":{\"aws::ids\":\"sg-1\"}}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.n_subnet_selector_terms, 2);
	cr_assert_str_eq(nc.subnet_selector_terms[1].id ?: "(none)", "subnet-2");
	cr_assert_eq(nc.subnet_selector_terms[1].n_tags, 0);
	cr_assert_eq(nc.n_security_group_selector_terms, 1);
	cr_assert_str_eq(nc.security_group_selector_terms[0].id ?: "(none)", "sg-1");
	/* an empty map selects nothing: the family's default AMIs */
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\","
				  "\"metadata\":{\"name\":\"d\"},\"spec\":{" SELECTORS_V1ALPHA1 ","
				  "\"amiSelector\":{}}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.n_ami_selector_terms, 0);
}

/* Upstream's conversion of v1alpha1 subnet and security group selectors
 * (v0.32 NewSubnetSelectorTerms, NewSecurityGroupSelectorTerms): ids
 * together with tag keys are ANDed, one term per id carrying every tag;
 * no separate tags-only term that would OR in every tagged subnet. */
Test(decode_versions, map_selector_ands_ids_with_tags)
{
	struct proto_nodeclass nc;

	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\","
				  "\"metadata\":{\"name\":\"s\"},\"spec\":{\"subnetSelector\":"
				  "{\"aws-ids\":\"subnet-1,subnet-2\",\"team\":\"x\"},"
				  "\"securityGroupSelector\":{\"aws::ids\":\"sg-1\",\"team\":\"x\",\"env\":\"*\"}}}",
				  &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.n_subnet_selector_terms, 2);
	for (uint32_t i = 0; i < 2; i++) {
		cr_assert_str_eq(nc.subnet_selector_terms[i].id ?: "(none)", i ? "subnet-2" : "subnet-1");
		cr_assert_eq(nc.subnet_selector_terms[i].n_tags, 1, "term %u", i);
		cr_assert_str_eq(nc.subnet_selector_terms[i].tags[0].key, "team");
	}
	cr_assert_eq(nc.n_security_group_selector_terms, 1);
	cr_assert_str_eq(nc.security_group_selector_terms[0].id ?: "(none)", "sg-1");
	cr_assert_eq(nc.security_group_selector_terms[0].n_tags, 2);
	/* tags alone: one tags term, as before */
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\","
				  "\"metadata\":{\"name\":\"t\"},\"spec\":{\"subnetSelector\":{\"team\":\"x\"},"
				  "\"securityGroupSelector\":{\"team\":\"x\"}}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.n_subnet_selector_terms, 1);
	cr_assert_null(nc.subnet_selector_terms[0].id);
	cr_assert_eq(nc.subnet_selector_terms[0].n_tags, 1);
}

Test(decode_versions, imds_hop_limit_defaults_to_2_before_v1_and_1_in_v1)
{
	struct proto_nodeclass nc;

	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\","
				  "\"metadata\":{\"name\":\"a\"},\"spec\":{" SELECTORS_V1 "}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.metadata_options.http_put_response_hop_limit, 1);
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1beta1\",\"kind\":\"EC2NodeClass\","
				  "\"metadata\":{\"name\":\"b\"},\"spec\":{" SELECTORS_V1 "}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.metadata_options.http_put_response_hop_limit, 2);
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\","
				  "\"metadata\":{\"name\":\"c\"},\"spec\":{" SELECTORS_V1ALPHA1 "}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.metadata_options.http_put_response_hop_limit, 2);
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\","
				  "\"metadata\":{\"name\":\"d\"},\"spec\":{\"provider\":{" SELECTORS_V1ALPHA1 "}}}", &nc),
		     0, "%s", dec.error);
	cr_assert_eq(nc.metadata_options.http_put_response_hop_limit, 2);
	/* as written wins */
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1beta1\",\"kind\":\"EC2NodeClass\","
				  "\"metadata\":{\"name\":\"e\"},\"spec\":{" SELECTORS_V1 ","
				  "\"metadataOptions\":{\"httpPutResponseHopLimit\":1}}}", &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.metadata_options.http_put_response_hop_limit, 1);
}

Test(decode_versions, each_unimplemented_field_is_named_never_dropped)
{
	static const struct {
		const char *spec, *path;
	} cases[] = {
		{ "\"networkInterfaces\":[{\"networkCardIndex\":0,\"deviceIndex\":0}]", "spec.networkInterfaces" },
		{ "\"connectionTracking\":{\"tcpEstablishedTimeout\":\"60s\"}", "spec.connectionTracking" },
		{ "\"instanceStorePolicy\":\"RAID0\"", "spec.instanceStorePolicy" },
		{ "\"capacityReservationSelectorTerms\":[{\"id\":\"cr-1\"}]", "spec.capacityReservationSelectorTerms" },
		{ "\"placementGroupSelector\":{\"name\":\"pg\"}", "spec.placementGroupSelector" },
		{ "\"cpuOptions\":{\"coreCount\":2}", "spec.cpuOptions" },
		{ "\"ipPrefixCount\":1", "spec.ipPrefixCount" },
		{ "\"context\":\"arn:aws:ec2:ctx\"", "spec.context" },
		{ "\"blockDeviceMappings\":[{\"deviceName\":\"/dev/xvda\",\"ebs\":{\"volumeSize\":\"20Gi\",\"volumeInitializationRate\":100}}]",
		  "spec.blockDeviceMappings[0].ebs.volumeInitializationRate" },
		{ "\"kubelet\":{\"evictionSoft\":{\"memory.available\":\"10%\"}}", "spec.kubelet.evictionSoft" },
		{ "\"kubelet\":{\"evictionSoftGracePeriod\":{\"memory.available\":\"1m\"}}", "spec.kubelet.evictionSoftGracePeriod" },
		{ "\"kubelet\":{\"evictionMaxPodGracePeriod\":60}", "spec.kubelet.evictionMaxPodGracePeriod" },
		{ "\"kubelet\":{\"imageGCHighThresholdPercent\":85}", "spec.kubelet.imageGCHighThresholdPercent" },
		{ "\"kubelet\":{\"imageGCLowThresholdPercent\":80}", "spec.kubelet.imageGCLowThresholdPercent" },
		{ "\"kubelet\":{\"cpuCFSQuota\":false}", "spec.kubelet.cpuCFSQuota" },
		{ "\"kubelet\":{\"clusterDNS\":[\"10.0.0.10\"]}", "spec.kubelet.clusterDNS" },
		/* any other KubeletConfiguration key of v1's open map */
		{ "\"kubelet\":{\"maxPods\":20,\"registryPullQPS\":10}", "spec.kubelet.registryPullQPS" },
		{ "\"launchTemplate\":\"mine\"", "spec.launchTemplate" },
	};
	struct proto_nodeclass nc;
	char text[1024], want[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		snprintf(text, sizeof(text),
			 "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":\"x\"},"
			 "\"spec\":{" SELECTORS_V1 ",%s}}", cases[i].spec);
		cr_assert_eq(decode_class(text, &nc), 0, "%s: %s", cases[i].path, dec.error);
		snprintf(want, sizeof(want), "%s is not supported by kanna", cases[i].path);
		cr_expect_str_eq(nc.unsupported ?: "(none)", want);
	}
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\","
				  "\"metadata\":{\"name\":\"ok\"},\"spec\":{" SELECTORS_V1 ","
				  "\"kubelet\":{\"maxPods\":20,\"evictionHard\":{\"memory.available\":\"5%\"}}}}", &nc),
		     0, "%s", dec.error);
	cr_assert_null(nc.unsupported, "what kanna implements is not refused: %s", nc.unsupported);
	cr_assert_eq(nc.associate_public_ip_address, PROTO_COND_UNKNOWN, "unset: the subnet decides");
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\","
				  "\"metadata\":{\"name\":\"pub\"},\"spec\":{" SELECTORS_V1 ","
				  "\"associatePublicIPAddress\":false}}", &nc), 0, "%s", dec.error);
	cr_assert_null(nc.unsupported, "%s", nc.unsupported);
	cr_assert_eq(nc.associate_public_ip_address, PROTO_COND_FALSE);
	/* several at once, and under a Provisioner's inline provider */
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\","
				  "\"metadata\":{\"name\":\"p\"},\"spec\":{\"provider\":{" SELECTORS_V1ALPHA1 ","
				  "\"context\":\"c\",\"cpuOptions\":{\"coreCount\":2}}}}", &nc), 0, "%s", dec.error);
	cr_assert_str_eq(nc.unsupported, "spec.provider.cpuOptions, spec.provider.context are not supported by kanna");
	/* v1alpha1 and the v1alpha5 provider: a launch template of the user's */
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\","
				  "\"metadata\":{\"name\":\"p\"},\"spec\":{\"provider\":{" SELECTORS_V1ALPHA1 ","
				  "\"launchTemplate\":\"lt\"}}}", &nc), 0, "%s", dec.error);
	cr_assert_str_eq(nc.unsupported ?: "(none)", "spec.provider.launchTemplate is not supported by kanna");
	cr_assert_eq(decode_class("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\","
				  "\"metadata\":{\"name\":\"t\"},\"spec\":{" SELECTORS_V1ALPHA1 ","
				  "\"launchTemplate\":\"lt\"}}", &nc), 0, "%s", dec.error);
	cr_assert_str_eq(nc.unsupported ?: "(none)", "spec.launchTemplate is not supported by kanna");
}

static int decode_pool(const char *text, struct proto_nodepool *np)
{
	json_t *j = parse(text);
	int r = decode_nodepool(&dec, j, np);

	json_decref(j);
	return r;
}

#define NODEPOOL_V1BETA1(kubelet)                                                          \
	"{\"apiVersion\":\"karpenter.sh/v1beta1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"b\"}," \
	"\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"name\":\"c\"},\"requirements\":[]," \
	"\"kubelet\":" kubelet "}}}}"
#define PROVISIONER(kubelet)                                                               \
	"{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\",\"metadata\":{\"name\":\"p\"}," \
	"\"spec\":{\"providerRef\":{\"name\":\"t\"},\"kubeletConfiguration\":" kubelet "}}"
#define NODEPOOL_V1_COMPAT(json)                                                           \
	"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"v\"," \
	"\"annotations\":{\"compatibility.karpenter.sh/v1beta1-kubelet-conversion\":" json "}}," \
	"\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","  \
	"\"kind\":\"EC2NodeClass\",\"name\":\"c\"},\"requirements\":[]}}}}"

/* v1beta1 template kubelet, v1alpha5 kubeletConfiguration and the v1
 * NodePool's conversion annotation carry what the EC2NodeClass's kubelet
 * does: maxPods, podsPerCore, the reservations and evictionHard. */
Test(decode_versions, older_kubelet_settings_are_read_as_v1s)
{
	struct proto_nodepool np;

	cr_assert_eq(decode_pool(NODEPOOL_V1BETA1("{\"maxPods\":17,\"podsPerCore\":3,"
						  "\"systemReserved\":{\"cpu\":\"100m\"},"
						  "\"evictionHard\":{\"memory.available\":\"5%\"}}"), &np), 0,
		     "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_OK, "%s", np.status_reason);
	cr_assert_eq(np.kubelet.max_pods, 17);
	cr_assert_eq(np.kubelet.pods_per_core, 3);
	cr_assert_eq(np.kubelet.n_system_reserved, 1);
	cr_assert_eq(np.kubelet.system_reserved[0].value, 100);
	cr_assert_eq(np.kubelet.n_eviction_hard, 1);
	cr_assert_eq(decode_pool(PROVISIONER("{\"maxPods\":9,\"containerRuntime\":\"containerd\"}"), &np), 0,
		     "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_OK, "%s", np.status_reason);
	cr_assert_eq(np.kubelet.max_pods, 9);
	cr_assert_eq(decode_pool(NODEPOOL_V1_COMPAT("\"{\\\"maxPods\\\":23,\\\"kubeReserved\\\":{\\\"memory\\\":\\\"1Gi\\\"}}\""),
				 &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_OK, "%s", np.status_reason);
	cr_assert_eq(np.kubelet.max_pods, 23, "the conversion annotation is honoured");
	cr_assert_eq(np.kubelet.n_kube_reserved, 1);
	cr_assert_eq(np.kubelet.kube_reserved[0].value, 1LL << 30);
}

/* What kanna refuses on an EC2NodeClass's kubelet it refuses on the older
 * forms too: the NodePool is invalid, the reason names the field. */
Test(decode_versions, older_kubelet_fields_kanna_does_not_implement_make_the_pool_invalid)
{
	struct proto_nodepool np;

	cr_assert_eq(decode_pool(NODEPOOL_V1BETA1("{\"maxPods\":17,\"evictionSoft\":{\"memory.available\":\"10%\"}}"),
				 &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_INVALID);
	cr_assert_str_eq(np.status_reason, "spec.template.spec.kubelet.evictionSoft is not supported by kanna");
	cr_assert_eq(decode_pool(PROVISIONER("{\"clusterDNS\":[\"10.0.0.10\"],\"containerRuntime\":\"dockerd\"}"),
				 &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_INVALID);
	cr_assert_str_eq(np.status_reason, "spec.kubeletConfiguration.clusterDNS, "
					   "spec.kubeletConfiguration.containerRuntime are not supported by kanna");
	cr_assert_eq(decode_pool(NODEPOOL_V1_COMPAT("\"{\\\"cpuCFSQuota\\\":false}\""), &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_INVALID);
	cr_assert_str_eq(np.status_reason, "metadata.annotations.compatibility.karpenter.sh/"
					   "v1beta1-kubelet-conversion.cpuCFSQuota is not supported by kanna");
	/* a conversion annotation that is not a kubelet's JSON does not decode */
	cr_assert_eq(decode_pool(NODEPOOL_V1_COMPAT("\"maxPods=3\""), &np), -EINVAL);
	cr_assert(strstr(dec.error, "v1beta1-kubelet-conversion: expected the JSON"), "%s", dec.error);
}

/* A nodeClassRef (providerRef) to another kind of node class: the pool is
 * refused, naming the field, and never launched with the EC2NodeClass (or
 * AWSNodeTemplate) of that name (Karpenter v1: NodeClassNotFound). */
Test(decode_versions, a_reference_to_another_kind_of_node_class_refuses_the_pool)
{
	static const struct {
		const char *text, *field;
	} refused[] = {
		{ "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"a\"},"
		  "\"spec\":{\"template\":{\"spec\":{\"requirements\":[],\"nodeClassRef\":"
		  "{\"group\":\"example.com\",\"kind\":\"EC2NodeClass\",\"name\":\"c\"}}}}}",
		  "spec.template.spec.nodeClassRef: " },
		{ "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"b\"},"
		  "\"spec\":{\"template\":{\"spec\":{\"requirements\":[],\"nodeClassRef\":"
		  "{\"group\":\"karpenter.k8s.aws\",\"kind\":\"OtherNodeClass\",\"name\":\"c\"}}}}}",
		  "spec.template.spec.nodeClassRef: " },
		{ "{\"apiVersion\":\"karpenter.sh/v1beta1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"c\"},"
		  "\"spec\":{\"template\":{\"spec\":{\"requirements\":[],\"nodeClassRef\":"
		  "{\"apiVersion\":\"example.com/v1\",\"name\":\"c\"}}}}}",
		  "spec.template.spec.nodeClassRef: " },
		{ "{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\",\"metadata\":{\"name\":\"d\"},"
		  "\"spec\":{\"providerRef\":{\"kind\":\"EC2NodeClass\",\"name\":\"t\"}}}",
		  "spec.providerRef: " },
	};
	static const char *const accepted[] = {
		"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"e\"},"
		"\"spec\":{\"template\":{\"spec\":{\"requirements\":[],\"nodeClassRef\":"
		"{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"c\"}}}}}",
		"{\"apiVersion\":\"karpenter.sh/v1beta1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"f\"},"
		"\"spec\":{\"template\":{\"spec\":{\"requirements\":[],\"nodeClassRef\":"
		"{\"apiVersion\":\"karpenter.k8s.aws/v1beta1\",\"kind\":\"EC2NodeClass\",\"name\":\"c\"}}}}}",
		"{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\",\"metadata\":{\"name\":\"g\"},"
		"\"spec\":{\"providerRef\":{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\","
		"\"kind\":\"AWSNodeTemplate\",\"name\":\"t\"}}}",
	};
	struct proto_nodepool np;

	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
		cr_assert_eq(decode_pool(refused[i].text, &np), 0, "%s", dec.error);
		cr_expect_eq(np.status, PROTO_NODEPOOL_INVALID, "case %zu is not refused", i);
		cr_expect(np.status_reason && !strncmp(np.status_reason, refused[i].field, strlen(refused[i].field)),
			  "case %zu: %s", i, np.status_reason ?: "(none)");
	}
	for (size_t i = 0; i < sizeof(accepted) / sizeof(*accepted); i++) {
		cr_assert_eq(decode_pool(accepted[i], &np), 0, "%s", dec.error);
		cr_expect_eq(np.status, PROTO_NODEPOOL_OK, "case %zu: %s", i, np.status_reason ?: "");
	}
	/* the Provisioner's explicit AWSNodeTemplate ref reads (and hashes) as
	 * one left to the default */
	cr_expect_null(np.nodeclass_ref.group);
	cr_expect_null(np.nodeclass_ref.kind);
}

static int decode_claim(const char *ref, struct proto_nodeclaim *nc)
{
	char text[512];
	json_t *j;
	int r;

	snprintf(text, sizeof(text), "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\","
		 "\"metadata\":{\"name\":\"x\"},\"spec\":{\"requirements\":[],\"nodeClassRef\":%s}}", ref);
	j = parse(text);
	r = decode_nodeclaim(&dec, j, nc);
	json_decref(j);
	return r;
}

/* Another provider's NodeClaim is not kanna's to launch: reported, naming
 * the field. kanna's own (a v1beta1 pool's apiVersion as group) still read. */
Test(decode_versions, a_nodeclaim_of_another_kind_of_node_class_is_refused)
{
	struct proto_nodeclaim nc;

	cr_assert_eq(decode_claim("{\"group\":\"example.com\",\"kind\":\"EC2NodeClass\",\"name\":\"c\"}", &nc),
		     -EINVAL);
	cr_assert(strstr(dec.error, "spec.nodeClassRef: example.com EC2NodeClass is not"), "%s", dec.error);
	cr_assert_eq(decode_claim("{\"group\":\"karpenter.k8s.aws\",\"kind\":\"Other\",\"name\":\"c\"}", &nc),
		     -EINVAL);
	cr_assert_eq(decode_claim("{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"c\"}", &nc),
		     0, "%s", dec.error);
	cr_assert_str_eq(nc.nodeclass, "c");
	cr_assert_eq(decode_claim("{\"group\":\"karpenter.k8s.aws/v1beta1\",\"kind\":\"EC2NodeClass\",\"name\":\"c\"}",
				  &nc), 0, "%s", dec.error);
}
