/*
 * The EC2NodeClass resolver against kanna-sim's AWS side over real HTTP:
 * discovery-tagged subnets and security groups, an al2023 alias through
 * SSM, the role's instance profile through IAM, one launch template per
 * configuration (created once, then served from the cache), and a clear
 * failure for a selector that matches nothing.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/aws.h"
#include "common/loop.h"
#include "launcher/nodeclass-ec2.h"
#include "launcher/nodeclass-internal.h"
#include "launcher/nodeclass.h"
#include "sim/aws.h"

#define TEST_AKID "AKIANODECLASS0000001"
#define TEST_SECRET "nodeClassSecretKey0000000000000000000000"
#define GUARD_USEC (20ULL * 1000 * 1000)

static struct sim_aws *sim;
static struct loop *loop;
static struct aws_client *client;
static struct nodeclass_resolver *resolver;
static const struct nodeclass_resolver_options nopts = {
	.cluster_name = "demo", .cluster_endpoint = "https://127.0.0.1:6443",
	.cluster_ca = "Q0E=", .kubernetes_version = "1.32",
};

static void setup(void)
{
	struct aws_credentials creds = { .access_key_id = TEST_AKID, .secret_access_key = TEST_SECRET,
					 .source = "test" };
	struct aws_client_options aopts = { .region = "us-west-2" };
	struct sim_aws_config cfg;
	char url[64];

	sim_aws_config_init(&cfg);
	cfg.access_key_id = TEST_AKID;
	cfg.secret_access_key = TEST_SECRET;
	cfg.catalog_path = KANNA_SRCDIR "/data/instance-types.tsv";
	cfg.cluster_name = "demo";
	cr_assert_geq(sim_aws_new(&sim, &cfg), 0);
	cr_assert_geq(sim_aws_start(sim, 0), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)sim_aws_port(sim));
	setenv("AWS_ENDPOINT_URL", url, 1);
	cr_assert_eq(loop_new(&loop, "test-nodeclass-sim"), 0);
	cr_assert_eq(aws_client_new(loop, &aopts, &creds, &client), 0);
	cr_assert_eq(nodeclass_resolver_new(loop, client, NULL, NULL, NULL, &nopts, &resolver), 0);
}

static void teardown(void)
{
	nodeclass_resolver_free(resolver);
	aws_client_free(client);
	loop_free(loop);
	sim = sim_aws_free(sim);
}

TestSuite(nodeclass_sim, .init = setup, .fini = teardown, .timeout = 60);

static struct proto_kv discovery[] = { { "karpenter.sh/discovery", "demo" } };
static struct proto_kv nothing[] = { { "karpenter.sh/discovery", "nope" } };
static struct proto_selector_term discovery_term = { .tags = discovery, .n_tags = 1 };
static struct proto_selector_term nothing_term = { .tags = nothing, .n_tags = 1 };
static struct proto_selector_term alias_term = { .alias = "al2023@latest" };

static struct proto_nodeclass nodeclass(const char *name)
{
	return (struct proto_nodeclass){
		.name = (char *)name, .uid = "uid-1", .ami_selector_terms = &alias_term, .n_ami_selector_terms = 1,
		.subnet_selector_terms = &discovery_term, .n_subnet_selector_terms = 1,
		.security_group_selector_terms = &discovery_term, .n_security_group_selector_terms = 1,
		.role = "KarpenterNodeRole-demo",
	};
}

static struct proto_nodepool nodepool = { .name = "default", .uid = "np-1" };

struct result {
	int error;
	char why[1024];
	char template[64], image[64];
	size_t n_subnets, n_groups;
	char zones[3][32];
};

struct run {
	unsigned left;
	struct result results[4];
	unsigned n;
};

static void on_done(int error, const char *why, const struct launch_config *cfg, void *userdata)
{
	struct run *run = userdata;
	struct result *res = &run->results[run->n++];

	res->error = error;
	snprintf(res->why, sizeof(res->why), "%s", why ?: "");
	if (cfg) {
		snprintf(res->template, sizeof(res->template), "%s", cfg->launch_template_name);
		snprintf(res->image, sizeof(res->image), "%s", cfg->image_id);
		res->n_subnets = cfg->n_subnets;
		res->n_groups = cfg->n_security_groups;
		for (size_t i = 0; i < cfg->n_subnets && i < 3; i++)
			snprintf(res->zones[i], sizeof(res->zones[i]), "%s", cfg->subnets[i].zone);
	}
	run->left--;
}

/* Turns the loop until *pending reaches 0 (loop_run() runs only once). */
static void spin(const unsigned *pending)
{
	for (unsigned i = 0; *pending && i < GUARD_USEC / 100000; i++)
		cr_assert_geq(sd_event_run(loop_event(loop), 100000), 0);
	cr_assert_eq(*pending, 0, "no answer in time");
}

/* Asks for each (nodeclass, launch group "arch[/variant]") at once, then
 * runs the loop until all answered. */
static struct run ask(const struct proto_nodeclass *ncs, const char *const *arches, unsigned n)
{
	struct run run = { .left = n };

	for (unsigned i = 0; i < n; i++) {
		const char *slash = strchr(arches[i], '/');
		char arch[16];
		struct launch_config_request req = { &ncs[i], &nodepool, arch, slash ? slash + 1 : NULL };

		snprintf(arch, sizeof(arch), "%.*s", slash ? (int)(slash - arches[i]) : 15, arches[i]);

		cr_assert_eq(nodeclass_launch_config(resolver, &req, on_done, &run), 0);
	}
	spin(&run.left);
	return run;
}

/* A plain AWS call on the same loop, for checking what the sim holds. */
struct plain {
	unsigned pending;
	int result;
	char code[AWS_ERROR_CODE_MAX];
	unsigned items;
	char text[256];
};

static void on_plain(struct aws_client *c, const struct aws_response *r, void *userdata)
{
	struct plain *p = userdata;
	const struct aws_xml_node *set = r->xml ? aws_xml_child(r->xml, "launchTemplates") : NULL;

	(void)c;
	p->result = r->result;
	snprintf(p->code, sizeof(p->code), "%s", r->error.code);
	for (const struct aws_xml_node *it = aws_xml_first(set, "item"); it; it = aws_xml_next(it))
		p->items++;
	if (r->xml && aws_xml_text(r->xml, "imagesSet/item/name"))
		snprintf(p->text, sizeof(p->text), "%s", aws_xml_text(r->xml, "imagesSet/item/name"));
	if (r->xml && aws_xml_text(r->xml, "GetInstanceProfileResult/InstanceProfile/Roles/member/RoleName"))
		snprintf(p->text, sizeof(p->text), "%s",
			 aws_xml_text(r->xml, "GetInstanceProfileResult/InstanceProfile/Roles/member/RoleName"));
	p->pending = 0;
}

static struct plain plain_call(const char *service, struct aws_query *q)
{
	struct plain p = { .pending = 1, .result = 1 };

	cr_assert_eq(aws_call_query(client, service, q, on_plain, &p), 0);
	spin(&p.pending);
	return p;
}

/* The name of an image the sim serves, or "". */
static char image_names[8][256];
static unsigned n_image_names;

static const char *image_name(const char *id)
{
	struct aws_query *q = NULL;
	char *name = image_names[n_image_names++ % 8];

	cr_assert_eq(aws_query_new("DescribeImages", "2016-11-15", &q), 0);
	cr_assert_eq(aws_query_add(q, id, "ImageId.1"), 0);
	snprintf(name, 256, "%s", plain_call("ec2", q).text);
	return name;
}

static unsigned kanna_templates(void)
{
	struct aws_query *q = NULL;
	const char *owner = "demo";

	cr_assert_eq(aws_query_new("DescribeLaunchTemplates", "2016-11-15", &q), 0);
	cr_assert_eq(aws_query_add_filter(q, 1, "tag:kanna.dev/managed-by", &owner, 1), 0);
	return plain_call("ec2", q).items;
}

Test(nodeclass_sim, resolves_discovery_tags_an_al2023_alias_and_creates_the_template_once)
{
	struct proto_nodeclass nc = nodeclass("default");
	struct run run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	struct result first = run.results[0];

	cr_assert_eq(first.error, 0, "%s", first.why);
	cr_assert(strncmp(first.template, "kanna-", 6) == 0, "%s", first.template);
	cr_assert(strncmp(first.image, "ami-", 4) == 0);
	cr_assert_eq(first.n_subnets, 3);
	cr_assert_eq(first.n_groups, 1);
	cr_assert(strncmp(first.zones[0], "us-west-2", 9) == 0, "%s", first.zones[0]);
	cr_assert_eq(kanna_templates(), 1);

	/* the second ask is served from the cache: same template, still one */
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert_str_eq(run.results[0].template, first.template);
	cr_assert_eq(kanna_templates(), 1);
}

Test(nodeclass_sim, concurrent_asks_share_one_resolution_and_arches_get_their_own_image)
{
	struct proto_nodeclass ncs[3] = { nodeclass("default"), nodeclass("default"), nodeclass("default") };
	struct run run = ask(ncs, (const char *const[]){ "amd64", "arm64", "amd64" }, 3);
	const char *amd = NULL, *arm = NULL;

	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(run.results[i].error, 0, "%s", run.results[i].why);
	/* answers may come in any order; pick them out by image */
	for (unsigned i = 0; i < 3; i++)
		for (unsigned k = i + 1; k < 3; k++)
			if (streq(run.results[i].image, run.results[k].image)) {
				amd = run.results[i].template;
				cr_assert_str_eq(run.results[i].template, run.results[k].template);
				arm = run.results[3 - i - k].template;
			}
	cr_assert(amd && arm);
	cr_assert_str_neq(amd, arm);
	cr_assert_eq(kanna_templates(), 2);
}

Test(nodeclass_sim, a_selector_matching_nothing_fails_clearly)
{
	struct proto_nodeclass nc = nodeclass("broken");
	struct run run;

	nc.subnet_selector_terms = &nothing_term;
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_lt(run.results[0].error, 0);
	cr_assert(strstr(run.results[0].why,
			 "no subnets match subnetSelectorTerms [{tags: {karpenter.sh/discovery: nope}}]"),
		  "%s", run.results[0].why);
	cr_assert_eq(kanna_templates(), 0);
}

Test(nodeclass_sim, the_instance_profile_gets_the_role)
{
	struct proto_nodeclass nc = nodeclass("default");
	struct run run = ask(&nc, (const char *const[]){ "arm64" }, 1);
	struct aws_query *q = NULL;
	char name[NC_PROFILE_NAME_MAX + 1];
	struct plain p;

	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	/* Karpenter's shape: <cluster>_<hash of region and NodeClass name> */
	nc_instance_profile_name("demo", "us-west-2", "default", name);
	cr_assert_eq(aws_query_new("GetInstanceProfile", "2010-05-08", &q), 0);
	cr_assert_eq(aws_query_add(q, name, "InstanceProfileName"), 0);
	p = plain_call("iam", q);
	cr_assert_eq(p.result, 0, "%s", p.code);
	cr_assert_str_eq(p.text, "KarpenterNodeRole-demo");
}

/* Two launchers (or two passes of one) resolving the same EC2NodeClass at
 * once: both read the profile without a role, both add it, and IAM answers
 * the second LimitExceeded (one role per profile). The second reads the
 * profile again and finds its role there: both Ready. (Seen in a loaded
 * CI run: the EC2NodeClass stayed not Ready for good.) */
Test(nodeclass_sim, two_resolutions_adding_the_role_at_once_both_end_ready)
{
	struct proto_nodeclass nc = nodeclass("race");
	struct nodeclass_resolver *second = NULL;
	struct launch_config_request req = { &nc, &nodepool, "amd64", NULL };
	struct run run = { .left = 2 };

	cr_assert_eq(nodeclass_resolver_new(loop, client, NULL, NULL, NULL, &nopts, &second), 0);
	cr_assert_eq(nodeclass_launch_config(resolver, &req, on_done, &run), 0);
	cr_assert_eq(nodeclass_launch_config(second, &req, on_done, &run), 0);
	spin(&run.left);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert_eq(run.results[1].error, 0, "%s", run.results[1].why);
	nodeclass_resolver_free(second);
}

/* A first resolution that fails for AWS's sake (here every answer arrives
 * cut off) is not served for a whole refresh period: once AWS answers
 * again, the next launch resolves afresh. (The chaos test found launches of
 * a freshly restarted launcher refused for minutes after one bad answer.) */
Test(nodeclass_sim, a_transient_failure_is_tried_again_within_seconds_not_a_refresh_period)
{
	struct proto_nodeclass nc = nodeclass("flaky");
	struct run run;
	char err[128];

	cr_assert_eq(sim_aws_set_faults(sim, "{\"garbledAnswerRate\": 1}", err, sizeof(err)), 0, "%s", err);
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_lt(run.results[0].error, 0);
	cr_assert(strstr(run.results[0].why, "unreadable response"), "%s", run.results[0].why);
	cr_assert_eq(sim_aws_set_faults(sim, "{}", err, sizeof(err)), 0, "%s", err);
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_lt(run.results[0].error, 0, "served from the failed resolution for a moment");
	usleep(NC_TRANSIENT_RETRY_USEC + 200000);
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert_eq(run.results[0].n_subnets, 3);
}

/* A class using a field kanna does not implement resolves everything else
 * but is not Ready: the launch is refused with the field named (the status
 * gets ValidationSucceeded=False) and no launch template is created. */
Test(nodeclass_sim, a_class_with_an_unsupported_field_is_refused_with_the_field_named)
{
	struct proto_nodeclass nc = nodeclass("reserved");
	struct run run;

	nc.unsupported = "spec.capacityReservationSelectorTerms is not supported by kanna";
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_lt(run.results[0].error, 0);
	cr_assert(strstr(run.results[0].why, "spec.capacityReservationSelectorTerms is not supported by kanna"),
		  "%s", run.results[0].why);
	cr_assert_eq(kanna_templates(), 0);
}

/* User data every launch would refuse makes the class not Ready at
 * resolution (ValidationSucceeded=False, UserDataInvalid) instead of a
 * refused launch retried forever under a Ready class; no template is made. */
Test(nodeclass_sim, user_data_the_family_refuses_makes_the_class_not_ready)
{
	struct proto_nodeclass nc = nodeclass("bad-user-data");
	struct run run;

	nc.user_data = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n"
		       "--//\nContent-Type: text/x-shellscript\n\necho never closed\n";
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_lt(run.results[0].error, 0);
	cr_assert(strstr(run.results[0].why, "spec.userData is refused for amiFamily AL2023: "
					     "the multipart document does not end with --//--"),
		  "%s", run.results[0].why);
	cr_assert_eq(kanna_templates(), 0);
}

/* Karpenter's own AL2023 example (examples/v1/al2023-custom-userdata.yaml,
 * closed by "--//") resolves and launches. */
Test(nodeclass_sim, karpenters_al2023_user_data_example_launches)
{
	struct proto_nodeclass nc = nodeclass("al2023-example");
	struct run run;

	nc.user_data = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n"
		       "--//\nContent-Type: application/node.eks.aws\n\n"
		       "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  instance:\n"
		       "    localStorage:\n      strategy: Mount\n\n"
		       "--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n"
		       "#!/bin/bash\necho \"Hello, AL2023!\"\n--//\n";
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert_eq(kanna_templates(), 1);
}

/* karpenter.k8s.aws/v1 dropped Ubuntu (its CRD enum refuses it); a
 * v1beta1 class may still use it, with Canonical's SSM parameters. */
Test(nodeclass_sim, ubuntu_is_refused_in_v1_and_resolves_in_v1beta1)
{
	struct proto_nodeclass nc = nodeclass("ubuntu");
	struct run run;

	nc.ami_family = "Ubuntu";
	nc.n_ami_selector_terms = 0;
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_lt(run.results[0].error, 0);
	cr_assert(strstr(run.results[0].why, "amiFamily Ubuntu is not one kanna bootstraps"), "%s",
		  run.results[0].why);
	cr_assert_eq(kanna_templates(), 0);

	nc.name = "ubuntu-beta";
	nc.source_api = PROTO_API_V1BETA1;
	run = ask(&nc, (const char *const[]){ "arm64" }, 1);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert(strstr(image_name(run.results[0].image), "ubuntu-focal-20.04-arm64-server"), "%s",
		  image_name(run.results[0].image));
}

Test(nodeclass_sim, a_windows_alias_launches_the_server_core_eks_image_on_amd64_only)
{
	struct proto_selector_term windows = { .alias = "windows2022@latest" };
	struct proto_nodeclass nc = nodeclass("windows");
	struct run run;

	nc.ami_selector_terms = &windows;
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert_str_eq(image_name(run.results[0].image),
			 "Windows_Server-2022-English-Core-EKS_Optimized-1.32-2025.06.01");
	run = ask(&nc, (const char *const[]){ "arm64" }, 1);
	cr_assert_lt(run.results[0].error, 0);
	cr_assert(strstr(run.results[0].why, "no AMI for architecture arm64"), "%s", run.results[0].why);
}

/* aws/karpenter-provider-aws pkg/providers/amifamily/al2023.go: the nvidia
 * and neuron variants have their own parameters and images. */
Test(nodeclass_sim, gpu_and_neuron_types_get_the_accelerated_al2023_variants)
{
	struct proto_nodeclass ncs[4] = { nodeclass("al2023"), nodeclass("al2023"), nodeclass("al2023"),
					  nodeclass("al2023") };
	struct run run = ask(ncs, (const char *const[]){ "amd64", "amd64/nvidia", "amd64/neuron", "arm64/nvidia" }, 4);
	const char *want[4] = {
		"amazon-eks-node-al2023-x86_64-standard-1.32-v20250601",
		"amazon-eks-node-al2023-x86_64-nvidia-1.32-v20250601",
		"amazon-eks-node-al2023-x86_64-neuron-1.32-v20250601",
		"amazon-eks-node-al2023-arm64-nvidia-1.32-v20250601",
	};

	for (unsigned i = 0; i < 4; i++) {
		cr_assert_eq(run.results[i].error, 0, "%s", run.results[i].why);
		/* answers may come in any order: find the one with this image */
		bool found = false;
		for (unsigned k = 0; k < 4; k++)
			found |= streq(image_name(run.results[k].image), want[i]);
		cr_assert(found, "%s not chosen", want[i]);
	}
	cr_assert_eq(kanna_templates(), 4, "a launch template per AMI");
}

Test(nodeclass_sim, al2_gpu_image_serves_nvidia_and_neuron_bottlerocket_has_its_nvidia_flavour)
{
	struct proto_selector_term al2 = { .alias = "al2@latest" }, br = { .alias = "bottlerocket@latest" };
	struct proto_nodeclass ncs[4] = { nodeclass("al2"), nodeclass("al2"), nodeclass("br"), nodeclass("br") };
	struct run run;

	ncs[0].ami_selector_terms = ncs[1].ami_selector_terms = &al2;
	ncs[2].ami_selector_terms = ncs[3].ami_selector_terms = &br;
	run = ask(ncs, (const char *const[]){ "amd64/nvidia", "amd64/neuron" }, 2);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert_str_eq(run.results[0].image, run.results[1].image);
	cr_assert_str_eq(image_name(run.results[0].image), "amazon-eks-gpu-node-1.32-v20250601");
	run = ask(ncs + 2, (const char *const[]){ "arm64/nvidia" }, 1);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert_str_eq(image_name(run.results[0].image), "bottlerocket-aws-k8s-1.32-nvidia-arm64-v1.40.0-a1b2c3d4");
	run = ask(ncs + 2, (const char *const[]){ "amd64/neuron" }, 1);
	cr_assert_str_eq(image_name(run.results[0].image), "bottlerocket-aws-k8s-1.32-x86_64-v1.40.0-a1b2c3d4");
}

/* Karpenter v0.31: a Provisioner's provider (or AWSNodeTemplate) naming no
 * instanceProfile takes the global aws.defaultInstanceProfile — here
 * default-instance-profile; without it the class is not Ready. */
Test(nodeclass_sim, a_v1alpha5_class_without_a_profile_takes_default_instance_profile)
{
	struct proto_nodeclass nc = nodeclass("old");
	struct nodeclass_resolver_options with_default = nopts;
	struct nodeclass_resolver *second = NULL;
	struct launch_config_request req = { &nc, &nodepool, "amd64", NULL };
	struct run run = { .left = 1 };

	nc.source_api = PROTO_API_V1ALPHA5;
	nc.role = NULL;
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_lt(run.results[0].error, 0);
	cr_assert(strstr(run.results[0].why,
			 "neither spec.provider.instanceProfile nor default-instance-profile is set"),
		  "%s", run.results[0].why);
	with_default.default_instance_profile = "KarpenterNodeInstanceProfile-demo";
	cr_assert_eq(nodeclass_resolver_new(loop, client, NULL, NULL, NULL, &with_default, &second), 0);
	run = (struct run){ .left = 1 };
	cr_assert_eq(nodeclass_launch_config(second, &req, on_done, &run), 0);
	spin(&run.left);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert_eq(kanna_templates(), 1);
	nodeclass_resolver_free(second);
}

/* spec.associatePublicIPAddress reaches a launch template EC2 accepts (the
 * sim checks every parameter against EC2's request shapes). */
Test(nodeclass_sim, associate_public_ip_address_makes_a_template_ec2_accepts)
{
	struct proto_nodeclass nc = nodeclass("public");
	struct run run;

	nc.associate_public_ip_address = PROTO_COND_TRUE;
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert_eq(kanna_templates(), 1);
}

/* A v1alpha1 amiSelector with aws::owners: DescribeImages by those owners.
 * kanna-sim's AMIs are Amazon's (EKS account): owner amazon finds them,
 * owner self none, as EC2 would answer. */
Test(nodeclass_sim, an_ami_owner_term_selects_that_owners_images_only)
{
	struct proto_selector_term amazon = { .owner = "amazon", .name = "amazon-eks-node-al2023-*" },
				   self = { .owner = "self", .name = "amazon-eks-node-al2023-*" };
	struct proto_nodeclass nc = nodeclass("owned");
	struct run run;

	nc.ami_family = "AL2023";
	nc.ami_selector_terms = &amazon;
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_eq(run.results[0].error, 0, "%s", run.results[0].why);
	cr_assert(strncmp(run.results[0].image, "ami-", 4) == 0, "%s", run.results[0].image);

	nc = nodeclass("mine");
	nc.ami_family = "AL2023";
	nc.ami_selector_terms = &self;
	run = ask(&nc, (const char *const[]){ "amd64" }, 1);
	cr_assert_lt(run.results[0].error, 0);
	cr_assert(strstr(run.results[0].why, "owner: self"), "%s", run.results[0].why);
}
