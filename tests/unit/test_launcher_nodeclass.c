/*
 * The pure pieces of EC2NodeClass resolution: selector terms as EC2
 * filters, AMI aliases as SSM parameter names, user data per AMI family
 * (AL2 bootstrap.sh, AL2023 nodeadm NodeConfig, Bottlerocket TOML) merged
 * with the user's own, launch template names and requests, and the status.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"
#include "launcher/nodeclass-ec2.h"
#include "launcher/userdata.h"

static char *encoded(struct aws_query *q)
{
	char *s = NULL;

	cr_assert_eq(aws_query_encode(q, &s), 0);
	aws_query_free(q);
	return s;
}

static struct proto_kv discovery[] = { { "karpenter.sh/discovery", "demo" } };
static struct proto_kv any_name[] = { { "Name", "*" } };

Test(nodeclass_terms, tags_become_tag_filters_and_a_star_becomes_tag_key)
{
	struct proto_selector_term t = { .tags = discovery, .n_tags = 1 };
	struct proto_selector_term star = { .tags = any_name, .n_tags = 1, .id = "subnet-1" };
	struct aws_query *q = NULL;
	char *s;

	cr_assert_eq(nc_subnet_query(&t, &q), 0);
	s = encoded(q);
	cr_assert(strstr(s, "Action=DescribeSubnets"), "%s", s);
	cr_assert(strstr(s, "Filter.1.Name=tag%3Akarpenter.sh%2Fdiscovery&Filter.1.Value.1=demo"), "%s", s);
	free(s);
	cr_assert_eq(nc_subnet_query(&star, &q), 0);
	s = encoded(q);
	cr_assert(strstr(s, "Filter.1.Name=subnet-id&Filter.1.Value.1=subnet-1"), "%s", s);
	cr_assert(strstr(s, "Filter.2.Name=tag-key&Filter.2.Value.1=Name"), "%s", s);
	free(s);
}

Test(nodeclass_terms, security_group_names_filter_by_group_name_and_empty_terms_are_refused)
{
	struct proto_selector_term t = { .name = "demo-node" }, empty = { 0 };
	struct aws_query *q = NULL;
	char *s;

	cr_assert_eq(nc_security_group_query(&t, &q), 0);
	s = encoded(q);
	cr_assert(strstr(s, "Filter.1.Name=group-name&Filter.1.Value.1=demo-node"), "%s", s);
	free(s);
	cr_assert_eq(nc_security_group_query(&empty, &q), -EINVAL);
}

Test(nodeclass_terms, image_terms_default_to_self_and_amazon_owners)
{
	struct proto_selector_term byname = { .name = "amazon-eks-node-*" };
	struct proto_selector_term owned = { .name = "x", .owner = "123456789012" };
	struct aws_query *q = NULL;
	char *s;

	cr_assert_eq(nc_image_query(&byname, &q), 0);
	s = encoded(q);
	cr_assert(strstr(s, "Filter.1.Name=name&Filter.1.Value.1=amazon-eks-node-%2A"), "%s", s);
	cr_assert(strstr(s, "Owner.1=self&Owner.2=amazon"), "%s", s);
	free(s);
	cr_assert_eq(nc_image_query(&owned, &q), 0);
	s = encoded(q);
	cr_assert(strstr(s, "Owner.1=123456789012") && !strstr(s, "Owner.2"), "%s", s);
	free(s);
}

/* v1alpha1 aws::owners alone: DescribeImages of that owner's images. */
Test(nodeclass_terms, an_image_owner_alone_selects_that_owners_images)
{
	struct proto_selector_term owner_only = { .owner = "amazon" };
	struct proto_selector_term none = { 0 };
	struct aws_query *q = NULL;
	char *s;

	cr_assert_eq(nc_image_query(&owner_only, &q), 0);
	s = encoded(q);
	cr_assert(strstr(s, "Owner.1=amazon") && !strstr(s, "Filter."), "%s", s);
	free(s);
	cr_assert_eq(nc_image_query(&none, &q), -EINVAL);
	owner_only = (struct proto_selector_term){ .owner = "amazon" };
	cr_assert_eq(nc_subnet_query(&owner_only, &q), -EINVAL);
}

Test(nodeclass_terms, terms_are_described_as_the_user_wrote_them)
{
	struct proto_selector_term t[] = { { .tags = discovery, .n_tags = 1 }, { .id = "sg-1" } };
	char buf[200];

	nc_terms_describe(t, 2, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[{tags: {karpenter.sh/discovery: demo}}, {id: sg-1}]");
	nc_terms_describe(t, 2, buf, 10);
	cr_assert_eq(strlen(buf), 9);
}

/* alias names want (with exactly these variants) among its parameters */
static void expect_ssm(const char *alias, unsigned variants, const char *want)
{
	struct nc_alias_param p[NC_ALIAS_PARAMS_MAX];
	struct nc_alias a;
	int n;

	cr_assert_eq(nc_alias_parse(alias, &a), 0, "%s", alias);
	n = nc_alias_ssm_params(&a, "1.32", p);
	cr_assert_gt(n, 0);
	for (int i = 0; i < n; i++)
		if (streq(p[i].name, want)) {
			cr_assert_eq(p[i].variants, variants, "%s", want);
			return;
		}
	cr_assert_fail("%s does not name %s", alias, want);
}

static int count_ssm(const char *alias)
{
	struct nc_alias_param p[NC_ALIAS_PARAMS_MAX];
	struct nc_alias a;

	cr_assert_eq(nc_alias_parse(alias, &a), 0, "%s", alias);
	return nc_alias_ssm_params(&a, "1.32", p);
}

#define STD NC_VARIANT_STANDARD
#define NVIDIA NC_VARIANT_NVIDIA
#define NEURON NC_VARIANT_NEURON

Test(nodeclass_ami, aliases_name_the_eks_public_ssm_parameters)
{
	expect_ssm("al2@latest", STD, "/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id");
	expect_ssm("al2@latest", STD, "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/image_id");
	expect_ssm("al2@v20250601", STD,
		   "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/amazon-eks-arm64-node-1.32-v20250601/image_id");
	expect_ssm("al2023@latest", STD,
		   "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/recommended/image_id");
	expect_ssm("al2023@v20250601", STD,
		   "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.32-v20250601/image_id");
	expect_ssm("bottlerocket@latest", STD, "/aws/service/bottlerocket/aws-k8s-1.32/arm64/latest/image_id");
	expect_ssm("bottlerocket@v1.40.0", STD | NEURON, "/aws/service/bottlerocket/aws-k8s-1.32/x86_64/1.40.0/image_id");
}

Test(nodeclass_ami, accelerated_variants_have_their_own_parameters)
{
	expect_ssm("al2@latest", NVIDIA | NEURON, "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id");
	expect_ssm("al2@v20250601", NVIDIA | NEURON,
		   "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/amazon-eks-gpu-node-1.32-v20250601/image_id");
	expect_ssm("al2023@latest", NVIDIA,
		   "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/nvidia/recommended/image_id");
	expect_ssm("al2023@latest", NVIDIA,
		   "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/arm64/nvidia/recommended/image_id");
	expect_ssm("al2023@latest", NEURON,
		   "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/neuron/recommended/image_id");
	expect_ssm("al2023@v20250601", NEURON,
		   "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.32-v20250601/image_id");
	expect_ssm("bottlerocket@latest", NVIDIA, "/aws/service/bottlerocket/aws-k8s-1.32-nvidia/x86_64/latest/image_id");
	expect_ssm("bottlerocket@latest", NVIDIA, "/aws/service/bottlerocket/aws-k8s-1.32-nvidia/arm64/latest/image_id");
	/* upstream's table, no more: AL2023 has no arm64 neuron image */
	cr_assert_eq(count_ssm("al2@latest"), 3);
	cr_assert_eq(count_ssm("al2023@latest"), 5);
	cr_assert_eq(count_ssm("bottlerocket@latest"), 4);
}

Test(nodeclass_ami, windows_aliases_name_the_server_core_eks_optimized_parameter)
{
	expect_ssm("windows2019@latest", NC_VARIANTS_ANY,
		   "/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.32/image_id");
	expect_ssm("windows2022@latest", NC_VARIANTS_ANY,
		   "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.32/image_id");
	expect_ssm("windows2025@latest", NC_VARIANTS_ANY,
		   "/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.32/image_id");
	cr_assert_eq(count_ssm("windows2022@latest"), 1);
}

Test(nodeclass_ami, ubuntu_has_canonical_parameters_but_no_alias)
{
	struct nc_alias_param p[NC_ALIAS_PARAMS_MAX];
	struct nc_alias a = { .family = AMI_FAMILY_UBUNTU, .version = "latest" };

	cr_assert_eq(nc_alias_ssm_params(&a, "1.29", p), 2);
	cr_assert_str_eq(p[0].name, "/aws/service/canonical/ubuntu/eks/20.04/1.29/stable/current/amd64/hvm/ebs-gp2/ami-id");
	cr_assert_str_eq(p[1].name, "/aws/service/canonical/ubuntu/eks/20.04/1.29/stable/current/arm64/hvm/ebs-gp2/ami-id");
	cr_assert_eq(nc_alias_parse("ubuntu@latest", &a), -EINVAL);
}

Test(nodeclass_ami, unknown_alias_families_and_windows_pins_are_refused)
{
	struct nc_alias a;

	cr_assert_eq(nc_alias_parse("windows2016@latest", &a), -EINVAL);
	cr_assert_eq(nc_alias_parse("windows2022@v20250101", &a), -EINVAL);
	cr_assert_eq(nc_alias_parse("al2023", &a), -EINVAL);
	cr_assert_eq(nc_alias_parse("al2023@", &a), -EINVAL);
}

Test(nodeclass_ami, each_instance_type_gets_the_newest_image_of_its_variant)
{
	struct nc_image v[] = {
		{ .id = "ami-std", .arch = "amd64", .created = "2025-01-01", .variants = STD },
		{ .id = "ami-gpu", .arch = "amd64", .created = "2025-01-01", .variants = NVIDIA | NEURON },
		{ .id = "ami-gpu-new", .arch = "amd64", .created = "2025-06-01", .variants = NVIDIA },
		{ .id = "ami-arm", .arch = "arm64", .created = "2025-01-01", .variants = STD },
	};

	cr_assert_str_eq(nc_image_for(v, 4, "amd64", STD)->id, "ami-std");
	cr_assert_str_eq(nc_image_for(v, 4, "amd64", NVIDIA)->id, "ami-gpu-new");
	cr_assert_str_eq(nc_image_for(v, 4, "amd64", NEURON)->id, "ami-gpu");
	cr_assert_str_eq(nc_image_for(v, 4, "arm64", STD)->id, "ami-arm");
	cr_assert_null(nc_image_for(v, 4, "arm64", NVIDIA));
	/* an image chosen by id serves every type of its arch */
	v[3].variants = NC_VARIANTS_ANY;
	cr_assert_str_eq(nc_image_for(v, 4, "arm64", NVIDIA)->id, "ami-arm");
	/* newest per arch and variants: the older NVIDIA-only one would go, not the std one */
	cr_assert_eq(nc_images_newest_per_arch(v, 4), 4);
}

Test(nodeclass_ami, the_newest_image_per_architecture_wins)
{
	struct nc_image v[] = {
		{ .id = "ami-old", .arch = "amd64", .created = "2024-01-01T00:00:00.000Z" },
		{ .id = "ami-arm", .arch = "arm64", .created = "2024-01-01T00:00:00.000Z" },
		{ .id = "ami-new", .arch = "amd64", .created = "2025-06-01T00:00:00.000Z" },
	};
	size_t n = nc_images_newest_per_arch(v, 3);

	cr_assert_eq(n, 2);
	cr_assert_str_eq(v[0].id, "ami-new");
	cr_assert_str_eq(v[1].id, "ami-arm");
}

Test(nodeclass_ami, describe_images_keeps_amd64_and_arm64_only)
{
	const char *xml = "<DescribeImagesResponse><imagesSet>"
			  "<item><imageId>ami-1</imageId><architecture>x86_64</architecture><imageState>available</imageState><name>a</name><creationDate>2025</creationDate></item>"
			  "<item><imageId>ami-2</imageId><architecture>i386</architecture></item>"
			  "<item><imageId>ami-3</imageId><architecture>arm64</architecture><imageState>pending</imageState></item>"
			  "</imagesSet></DescribeImagesResponse>";
	struct aws_xml_node *x = NULL;
	struct nc_image out[4];
	size_t n = 0;

	cr_assert_eq(aws_xml_parse(xml, strlen(xml), &x), 0);
	cr_assert_eq(nc_images_read(x, out, 4, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(out[0].arch, "amd64");
	aws_xml_free(x);
}

/* ---- user data ------------------------------------------------------------------- */

static struct proto_kv labels[] = {
	{ "team", "a" }, { "karpenter.sh/nodepool", "default" }, { "kubernetes.io/role", "nope" },
};
static struct proto_taint taints[] = {
	{ .key = "dedicated", .value = "gpu", .effect = PROTO_EFFECT_NO_SCHEDULE },
	{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_NO_EXECUTE },
};
static struct proto_kubelet kubelet = { .max_pods = 110 };

static char *render(enum ami_family f, const char *custom, int want)
{
	struct userdata_options o = {
		.family = f, .cluster_name = "demo", .cluster_endpoint = "https://api.demo:443",
		.cluster_ca = "Q0E=", .cluster_dns = "10.100.0.10", .labels = labels, .n_labels = 3,
		.taints = taints, .n_taints = 2, .kubelet = &kubelet, .custom = custom,
	};
	char why[USERDATA_WHY_MAX], *out = NULL;
	int r = userdata_render(&o, &out, why);

	cr_assert_eq(r, want, "%d: %s", r, why);
	if (want < 0) {
		cr_assert(*why, "a refusal says why");
		return strdup(why);
	}
	return out;
}

Test(userdata, al2_runs_bootstrap_sh_after_the_users_script_in_mime_multipart)
{
	char *s = render(AMI_FAMILY_AL2, "#!/bin/bash\necho hi\n", 0);

	cr_assert(strncmp(s, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\n", 69) == 0, "%s", s);
	cr_assert(strstr(s, "echo hi\n\n--//\nContent-Type: text/x-shellscript"), "%s", s);
	cr_assert(strstr(s, "/etc/eks/bootstrap.sh 'demo' --apiserver-endpoint 'https://api.demo:443' --b64-cluster-ca 'Q0E=' \\\n"
			    "--dns-cluster-ip '10.100.0.10' \\\n--use-max-pods false \\\n"
			    "--kubelet-extra-args '--node-labels=\"karpenter.sh/nodepool=default,team=a\" "
			    "--register-with-taints=\"dedicated=gpu:NoSchedule,karpenter.sh/unregistered=:NoExecute\" --max-pods=110'\n--//--\n"),
		  "%s", s);
	cr_assert_null(strstr(s, "kubernetes.io/role"), "kubelet refuses that label");
	free(s);
}

/* aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap/windows.go */
Test(userdata, windows_runs_start_eksbootstrap_in_a_powershell_block)
{
	char *s = render(AMI_FAMILY_WINDOWS2022, "Write-Host hi", 0);

	cr_assert_str_eq(s, "<powershell>\nWrite-Host hi\n"
			    "[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n"
			    "& $EKSBootstrapScriptFile -EKSClusterName 'demo' -APIServerEndpoint 'https://api.demo:443' "
			    "-Base64ClusterCA 'Q0E=' -KubeletExtraArgs '--node-labels=\"karpenter.sh/nodepool=default,team=a\" "
			    "--register-with-taints=\"dedicated=gpu:NoSchedule,karpenter.sh/unregistered=:NoExecute\" --max-pods=110' "
			    "-DNSClusterIP '10.100.0.10'\n</powershell>");
	free(s);
	s = render(AMI_FAMILY_WINDOWS2019, NULL, 0);
	cr_assert(strstr(s, "<powershell>\n[string]$EKSBootstrapScriptFile") == s, "%s", s);
	free(s);
}

Test(userdata, ubuntu_runs_the_eks_bootstrap_sh_as_v1beta1_did)
{
	char *s = render(AMI_FAMILY_UBUNTU, "#!/bin/bash\necho hi\n", 0);
	char *al2 = render(AMI_FAMILY_AL2, "#!/bin/bash\necho hi\n", 0);

	cr_assert_str_eq(s, al2);
	free(s);
	free(al2);
}

Test(userdata, every_family_has_karpenters_name_and_windows_its_build)
{
	const char *names[] = { "AL2", "AL2023", "Bottlerocket", "Custom",
				"Ubuntu", "Windows2019", "Windows2022", "Windows2025" };
	enum ami_family f;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cr_assert_eq(ami_family_from_name(names[i], &f), 0, "%s", names[i]);
		cr_assert_str_eq(ami_family_name(f), names[i]);
	}
	cr_assert_eq(ami_family_from_name("windows2022", &f), -EINVAL);
	cr_assert_str_eq(ami_family_windows_build(AMI_FAMILY_WINDOWS2019), "10.0.17763");
	cr_assert_str_eq(ami_family_windows_build(AMI_FAMILY_WINDOWS2022), "10.0.20348");
	cr_assert_str_eq(ami_family_windows_build(AMI_FAMILY_WINDOWS2025), "10.0.26100");
	cr_assert_null(ami_family_windows_build(AMI_FAMILY_AL2023));
}

Test(userdata, al2_keeps_the_parts_of_a_users_mime_document)
{
	const char *mime = "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"BOUND\"\r\n\r\n"
			   "preamble\r\n--BOUND\r\nContent-Type: text/cloud-config\r\n\r\n#cloud-config\r\npackages: [jq]\r\n"
			   "--BOUND--\r\n";
	char *s = render(AMI_FAMILY_AL2, mime, 0);

	cr_assert(strstr(s, "--//\nContent-Type: text/cloud-config\n\n#cloud-config\npackages: [jq]\n--//\n"), "%s", s);
	cr_assert_null(strstr(s, "preamble"));
	cr_assert_null(strchr(s, '\r'));
	free(s);
}

/* aws/karpenter-provider-aws examples/v1/al2023-custom-userdata.yaml: its
 * last delimiter is "--//", not "--//--"; Karpenter's mime.NewArchive (Go
 * multipart.Reader, stopping at io.EOF) takes it, and so do we. */
Test(userdata, al2023_takes_karpenters_example_that_ends_with_a_bare_delimiter)
{
	const char *example = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n"
			      "--//\nContent-Type: application/node.eks.aws\n\n"
			      "# Example custom nodeconfig which mounts individual drives on an instance\n"
			      "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  instance:\n"
			      "    localStorage:\n      strategy: Mount\n\n"
			      "--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n"
			      "#!/bin/bash\necho \"Hello, AL2023!\"\n--//\n";
	char *s = render(AMI_FAMILY_AL2023, example, 0), *why;

	cr_assert(strstr(s, "strategy: Mount\n"), "%s", s);
	cr_assert(strstr(s, "--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho \"Hello, AL2023!\"\n--//--\n"),
		  "%s", s);
	free(s);
	/* …without its final newline too (Go matches the boundary at EOF) */
	s = render(AMI_FAMILY_AL2, "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/x-shellscript\n\necho hi\n--b", 0);
	cr_assert(strstr(s, "echo hi\n--//\n"), "%s", s);
	free(s);
	/* but a delimiter followed by anything starts a part that must end */
	why = render(AMI_FAMILY_AL2023, "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/x-shellscript\n\necho hi\n--b\n\n", -EINVAL);
	cr_assert(strstr(why, "does not end with --b--"), "%s", why);
	free(why);
}

Test(userdata, broken_mime_is_refused_with_the_reason)
{
	char *why = render(AMI_FAMILY_AL2, "Content-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: a\n\nbody\n", -EINVAL);

	cr_assert(strstr(why, "does not end with --x--"), "%s", why);
	free(why);
	why = render(AMI_FAMILY_AL2023, "Content-Type: text/plain\n\nhi\n", -EINVAL);
	cr_assert(strstr(why, "not multipart"), "%s", why);
	free(why);
}

Test(userdata, al2023_writes_a_nodeadm_nodeconfig_then_the_users_part)
{
	char *s = render(AMI_FAMILY_AL2023, "#!/bin/bash\necho hi\n", 0);

	cr_assert(strstr(s, "--//\nContent-Type: application/node.eks.aws\n\n# Karpenter Generated NodeConfig\n"
			    "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n"
			    "    apiServerEndpoint: https://api.demo:443\n    certificateAuthority: Q0E=\n"
			    "    cidr: 10.100.0.0/16\n    name: demo\n  kubelet:\n    config:\n"
			    "      clusterDNS:\n      - 10.100.0.10\n      maxPods: 110\n      registerWithTaints:\n"
			    "      - effect: NoSchedule\n        key: dedicated\n        value: gpu\n"
			    "      - effect: NoExecute\n        key: karpenter.sh/unregistered\n    flags:\n"
			    "    - --node-labels=\"karpenter.sh/nodepool=default,team=a\"\n"),
		  "%s", s);
	cr_assert(strstr(s, "\n--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho hi\n\n--//--\n"), "%s", s);
	free(s);
}

Test(userdata, al2023_takes_a_users_yaml_as_a_nodeconfig_part)
{
	char *s = render(AMI_FAMILY_AL2023,
			 "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n",
			 0);
	const char *second = strstr(s + 1, "--//\nContent-Type: application/node.eks.aws\n\napiVersion");

	cr_assert(second, "%s", s);
	free(s);
}

Test(userdata, al2023_keeps_its_nodeconfig_before_the_parts_of_a_users_mime_document)
{
	const char *mime = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n"
			   "--B\nContent-Type: text/x-shellscript\n\necho one\n"
			   "--B\nContent-Type: text/cloud-config\n\n#cloud-config\n--B--\n";
	char *s = render(AMI_FAMILY_AL2023, mime, 0);
	const char *config = strstr(s, "# Karpenter Generated NodeConfig"), *one = strstr(s, "echo one\n"),
		   *cloud = strstr(s, "#cloud-config\n");

	cr_assert(config && one && cloud, "%s", s);
	cr_assert(config < one && one < cloud, "the parts keep their order: %s", s);
	free(s);
}

Test(userdata, a_broken_users_mime_document_names_its_own_part_number)
{
	char *why = render(AMI_FAMILY_AL2023,
			   "Content-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: a\n\nok\n--x\nno blank line\n--x--\n",
			   -EINVAL);

	cr_assert(strstr(why, "part 2 of the multipart document"), "%s", why);
	free(why);
}

Test(userdata, bottlerocket_merges_settings_kubernetes_into_the_users_toml)
{
	char *s = render(AMI_FAMILY_BOTTLEROCKET,
			 "[settings.host-containers.admin]\nenabled = true\n"
			 "[settings.kubernetes]\ncluster-name = \"wrong\"\napi-server = '''\nhttps://old\n'''\n"
			 "image-gc-high-threshold-percent = 85\n"
			 "[settings.kubernetes.node-labels]\nfoo = \"bar\"\n\"team\" = \"b\"\n"
			 "[settings.kubernetes.node-taints]\nold = [\"x:NoSchedule\"]\n",
			 0);

	cr_assert_str_eq(s,
			 "[settings.host-containers.admin]\nenabled = true\n"
			 "[settings.kubernetes]\napi-server = \"https://api.demo:443\"\ncluster-certificate = \"Q0E=\"\n"
			 "cluster-dns-ip = \"10.100.0.10\"\ncluster-name = \"demo\"\nmax-pods = 110\n"
			 "image-gc-high-threshold-percent = 85\n"
			 "[settings.kubernetes.node-labels]\n\"karpenter.sh/nodepool\" = \"default\"\n\"team\" = \"a\"\nfoo = \"bar\"\n"
			 "[settings.kubernetes.node-taints]\n\"dedicated\" = [\"gpu:NoSchedule\"]\n"
			 "\"karpenter.sh/unregistered\" = [\":NoExecute\"]\n");
	free(s);
}

Test(userdata, bottlerocket_without_user_data_gets_kannas_tables)
{
	char *s = render(AMI_FAMILY_BOTTLEROCKET, NULL, 0);

	cr_assert(strncmp(s, "[settings.kubernetes]\napi-server = \"https://api.demo:443\"\n", 58) == 0, "%s", s);
	cr_assert(strstr(s, "\n[settings.kubernetes.node-labels]\n\"karpenter.sh/nodepool\" = \"default\"\n"), "%s", s);
	cr_assert(strstr(s, "\n[settings.kubernetes.node-taints]\n\"dedicated\" = [\"gpu:NoSchedule\"]\n"), "%s", s);
	free(s);
}

Test(userdata, bottlerocket_refuses_what_it_cannot_merge)
{
	char *why = render(AMI_FAMILY_BOTTLEROCKET, "[settings]\nkubernetes.cluster-name = \"x\"\n", -EINVAL);

	cr_assert(strstr(why, "line 2") && strstr(why, "[settings.kubernetes] table"), "%s", why);
	free(why);
	why = render(AMI_FAMILY_BOTTLEROCKET, "[settings.kubernetes]\nnode-labels = { a = \"b\" }\n", -EINVAL);
	cr_assert(strstr(why, "node-labels"), "%s", why);
	free(why);
	why = render(AMI_FAMILY_BOTTLEROCKET, "motd = \"unterminated\n", -EINVAL);
	cr_assert(strstr(why, "unterminated"), "%s", why);
	free(why);
}

Test(userdata, custom_is_passed_through_and_oversized_is_refused)
{
	char *s = render(AMI_FAMILY_CUSTOM, "anything at all", 0), *big, *why;

	cr_assert_str_eq(s, "anything at all");
	free(s);
	big = malloc(USERDATA_MAX_BYTES + 2);
	memset(big, 'x', USERDATA_MAX_BYTES + 1);
	big[USERDATA_MAX_BYTES + 1] = '\0';
	why = render(AMI_FAMILY_AL2, big, -E2BIG);
	cr_assert(strstr(why, "16384"), "%s", why);
	free(why);
	free(big);
}

Test(userdata, kubelet_label_rules)
{
	cr_assert(userdata_kubelet_may_set_label("team"));
	cr_assert(userdata_kubelet_may_set_label("karpenter.sh/nodepool"));
	cr_assert(userdata_kubelet_may_set_label("node.kubernetes.io/instance-type"));
	cr_assert(userdata_kubelet_may_set_label("foo.node.kubernetes.io/x"));
	cr_assert_not(userdata_kubelet_may_set_label("kubernetes.io/role"));
	cr_assert_not(userdata_kubelet_may_set_label("node-role.kubernetes.io/worker"));
	cr_assert_not(userdata_kubelet_may_set_label("x.k8s.io/y"));
}

/* ---- launch templates -------------------------------------------------------------- */

static struct nc_group groups[] = { { "sg-b", "b" }, { "sg-a", "a" } };
static struct nc_group groups_swapped[] = { { "sg-a", "a" }, { "sg-b", "b" } };

static struct nc_template template(const struct nc_group *g)
{
	return (struct nc_template){ .cluster_name = "demo", .nodeclass = "default", .image_id = "ami-1",
				     .user_data = "ud", .groups = g, .n_groups = 2,
				     .instance_profile = "demo_1", .family = AMI_FAMILY_AL2023 };
}

Test(launch_template, name_is_stable_order_free_and_changes_with_content)
{
	struct nc_template a = template(groups), b = template(groups_swapped), c = template(groups);
	char na[NC_LAUNCH_TEMPLATE_NAME_MAX], nb[NC_LAUNCH_TEMPLATE_NAME_MAX], nc[NC_LAUNCH_TEMPLATE_NAME_MAX];

	c.image_id = "ami-2";
	cr_assert_eq(nc_template_name(&a, na), 0);
	cr_assert_eq(nc_template_name(&b, nb), 0);
	cr_assert_eq(nc_template_name(&c, nc), 0);
	cr_assert_eq(strlen(na), 38);
	cr_assert(strncmp(na, "kanna-", 6) == 0);
	cr_assert_str_eq(na, nb);
	cr_assert_str_neq(na, nc);
	/* fixed forever: a new name means every cluster re-creates its templates */
	cr_assert_str_eq(na, "kanna-6fc819ed4501435b65e95d69c896ceda", "got %s", na);
}

Test(launch_template, request_has_imdsv2_defaults_ebs_and_ownership_tags)
{
	struct nc_template t = template(groups);
	struct proto_kv tags[] = { { "team", "a" }, { "karpenter.k8s.aws/cluster", "spoof" } };
	struct aws_query *q = NULL;
	char *s;

	t.tags = tags;
	t.n_tags = 2;
	cr_assert_eq(nc_template_create_query(&t, "kanna-x", &q), 0);
	s = encoded(q);
	cr_assert(strstr(s, "LaunchTemplateName=kanna-x"), "%s", s);
	cr_assert(strstr(s, "LaunchTemplateData.UserData=dWQ%3D"), "%s", s);
	cr_assert(strstr(s, "LaunchTemplateData.SecurityGroupId.1=sg-b&LaunchTemplateData.SecurityGroupId.2=sg-a"), "%s", s);
	cr_assert(strstr(s, "LaunchTemplateData.IamInstanceProfile.Name=demo_1"), "%s", s);
	cr_assert(strstr(s, "BlockDeviceMapping.1.DeviceName=%2Fdev%2Fxvda&LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize=20"
			    "&LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeType=gp3&LaunchTemplateData.BlockDeviceMapping.1.Ebs.Encrypted=true"), "%s", s);
	cr_assert(strstr(s, "MetadataOptions.HttpPutResponseHopLimit=1&LaunchTemplateData.MetadataOptions.HttpTokens=required"), "%s", s);
	cr_assert(strstr(s, "Monitoring.Enabled=false"), "%s", s);
	cr_assert(strstr(s, "TagSpecification.1.ResourceType=launch-template&TagSpecification.1.Tag.1.Key=team"), "%s", s);
	cr_assert(strstr(s, "Tag.2.Key=karpenter.k8s.aws%2Fcluster&TagSpecification.1.Tag.2.Value=demo"), "%s", s);
	cr_assert_null(strstr(s, "spoof"));
	cr_assert(strstr(s, "Key=kanna.dev%2Fmanaged-by&TagSpecification.1.Tag.5.Value=demo"), "%s", s);
	free(s);
}

/* spec.associatePublicIPAddress as Karpenter writes it: one interface at
 * DeviceIndex 0 carrying the flag and the security groups (none at the
 * top); a v1beta1 class's hop limit of 2 reaches MetadataOptions. Unset:
 * no interface, groups at the top, and the same template name as before. */
Test(launch_template, associate_public_ip_address_makes_one_network_interface_with_the_groups)
{
	struct nc_template t = template(groups), unset = template(groups);
	struct proto_metadata_options beta = { .http_put_response_hop_limit = 2 };
	char with_name[NC_LAUNCH_TEMPLATE_NAME_MAX], unset_name[NC_LAUNCH_TEMPLATE_NAME_MAX];
	struct aws_query *q = NULL;
	char *s;

	t.associate_public_ip = PROTO_COND_FALSE;
	t.metadata = &beta;
	cr_assert_eq(nc_template_create_query(&t, "kanna-x", &q), 0);
	s = encoded(q);
	cr_assert(strstr(s, "LaunchTemplateData.NetworkInterface.1.AssociatePublicIpAddress=false"
			    "&LaunchTemplateData.NetworkInterface.1.DeviceIndex=0"
			    "&LaunchTemplateData.NetworkInterface.1.SecurityGroupId.1=sg-b"
			    "&LaunchTemplateData.NetworkInterface.1.SecurityGroupId.2=sg-a"), "%s", s);
	cr_assert_null(strstr(s, "LaunchTemplateData.SecurityGroupId."), "%s", s);
	cr_assert(strstr(s, "MetadataOptions.HttpPutResponseHopLimit=2"), "%s", s);
	free(s);
	t.associate_public_ip = PROTO_COND_TRUE;
	cr_assert_eq(nc_template_create_query(&t, "kanna-x", &q), 0);
	s = encoded(q);
	cr_assert(strstr(s, "NetworkInterface.1.AssociatePublicIpAddress=true"), "%s", s);
	free(s);
	cr_assert_eq(nc_template_name(&t, with_name), 0);
	cr_assert_eq(nc_template_name(&unset, unset_name), 0);
	cr_assert_str_neq(with_name, unset_name);
	cr_assert_eq(nc_template_create_query(&unset, "kanna-x", &q), 0);
	s = encoded(q);
	cr_assert_null(strstr(s, "NetworkInterface"), "%s", s);
	free(s);
}

/* ---- status ------------------------------------------------------------------------ */

Test(nodeclass_status, a_validation_failure_gives_ready_its_own_reason)
{
	struct nc_resolved res = { .instance_profile = "demo_1" };
	struct nc_condition_state conds[_NC_COND_MAX];
	json_t *j, *c;
	size_t i;
	int seen = 0;

	for (int k = 0; k < _NC_COND_MAX; k++)
		conds[k] = (struct nc_condition_state){ .ok = true, .since = 1000 };
	conds[NC_COND_VALIDATION] = (struct nc_condition_state){
		.message = "spec.userData is refused for amiFamily AL2023: the multipart document does not end with --//--",
		.reason = "UserDataInvalid", .since = 2000,
	};
	j = nc_status_json(&res, conds, 2000);
	cr_assert_not_null(j);
	json_array_foreach(json_object_get(json_object_get(j, "status"), "conditions"), i, c) {
		const char *type = json_string_value(json_object_get(c, "type"));

		if (!streq(type, "ValidationSucceeded") && !streq(type, "Ready"))
			continue;
		seen++;
		cr_assert_str_eq(json_string_value(json_object_get(c, "status")), "False");
		cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), "UserDataInvalid");
		cr_assert(strstr(json_string_value(json_object_get(c, "message")), "spec.userData is refused"));
	}
	cr_assert_eq(seen, 2);
	json_decref(j);
}

/* Each version's own status schema and subresource: an AWSNodeTemplate
 * (v1alpha1) has subnets {id, zone}, securityGroups and amis only. */
Test(nodeclass_status, older_versions_get_their_own_shape_and_path)
{
	struct nc_resolved res = { .n_subnets = 1, .instance_profile = "demo_1" };
	struct nc_condition_state conds[_NC_COND_MAX];
	json_t *j, *st, *subnet;
	char *path;

	for (int k = 0; k < _NC_COND_MAX; k++)
		conds[k] = (struct nc_condition_state){ .ok = true, .since = 1000 };
	strcpy(res.subnets[0].id, "subnet-1");
	strcpy(res.subnets[0].zone, "us-west-2a");
	strcpy(res.subnets[0].zone_id, "usw2-az1");
	j = nc_status_json_for(PROTO_API_V1ALPHA5, &res, conds, 2000);
	st = json_object_get(j, "status");
	cr_assert_null(json_object_get(st, "conditions"));
	cr_assert_null(json_object_get(st, "instanceProfile"));
	subnet = json_array_get(json_object_get(st, "subnets"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(subnet, "zone")), "us-west-2a");
	cr_assert_null(json_object_get(subnet, "zoneID"));
	json_decref(j);
	j = nc_status_json_for(PROTO_API_V1BETA1, &res, conds, 2000);
	cr_assert_not_null(json_object_get(json_object_get(j, "status"), "conditions"), "v1beta1 has conditions");
	json_decref(j);
	cr_assert_eq(nc_status_path(PROTO_API_V1ALPHA5, "t", &path), 0);
	cr_assert_str_eq(path, "/apis/karpenter.k8s.aws/v1alpha1/awsnodetemplates/t/status");
	free(path);
	cr_assert_eq(nc_status_path(PROTO_API_V1BETA1, "c", &path), 0);
	cr_assert_str_eq(path, "/apis/karpenter.k8s.aws/v1beta1/ec2nodeclasses/c/status");
	free(path);
	cr_assert_eq(nc_status_path(PROTO_API_V1, "c", &path), 0);
	cr_assert_str_eq(path, "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/c/status");
	free(path);
}

Test(nodeclass_status, status_lists_what_resolved_and_ready_carries_the_first_failure)
{
	struct nc_resolved res = { .n_subnets = 1, .n_groups = 1, .n_images = 1, .instance_profile = "demo_1" };
	struct nc_condition_state conds[_NC_COND_MAX] = {
		{ .ok = true, .since = 1000 }, { .ok = true, .since = 1000 },
		{ .ok = false, .message = "no AMIs match amiSelectorTerms [{alias: al2@v1}]", .since = 2000 },
		{ .ok = true, .since = 1000 }, { .ok = true, .since = 1000 },
	};
	json_t *j, *st, *c;
	size_t i;

	strcpy(res.subnets[0].id, "subnet-1");
	strcpy(res.subnets[0].zone, "us-west-2a");
	strcpy(res.subnets[0].zone_id, "usw2-az1");
	strcpy(res.groups[0].id, "sg-1");
	strcpy(res.groups[0].name, "demo-node");
	strcpy(res.images[0].id, "ami-1");
	strcpy(res.images[0].arch, "arm64");
	j = nc_status_json(&res, conds, 2000);
	cr_assert_not_null(j);
	st = json_object_get(j, "status");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(st, "subnets"), 0), "zoneID")),
			 "usw2-az1");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(st, "securityGroups"), 0), "name")),
			 "demo-node");
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(json_array_get(json_object_get(
				 json_array_get(json_object_get(st, "amis"), 0), "requirements"), 0), "values"), 0)),
			 "arm64");
	cr_assert_str_eq(json_string_value(json_object_get(st, "instanceProfile")), "demo_1");
	cr_assert_eq(json_array_size(json_object_get(st, "conditions")), 6);
	json_array_foreach(json_object_get(st, "conditions"), i, c) {
		const char *type = json_string_value(json_object_get(c, "type"));

		if (streq(type, "AMIsReady") || streq(type, "Ready")) {
			cr_assert_str_eq(json_string_value(json_object_get(c, "status")), "False");
			cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), "AMINotFound");
			cr_assert(strstr(json_string_value(json_object_get(c, "message")), "al2@v1"));
			cr_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")), "1970-01-01T00:00:02Z");
		} else {
			cr_assert_str_eq(json_string_value(json_object_get(c, "status")), "True");
			cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), type);
		}
	}
	json_decref(j);
}

/* A field kanna does not implement: ValidationSucceeded=False (Karpenter
 * v1's condition type), reason UnsupportedField, and Ready carries it. */
Test(nodeclass_status, an_unsupported_field_is_validation_succeeded_false_and_not_ready)
{
	struct nc_resolved res = { .instance_profile = "demo_1" };
	struct nc_condition_state conds[_NC_COND_MAX];
	const char *msg = "spec.cpuOptions is not supported by kanna";
	json_t *j, *c;
	size_t i;
	unsigned seen = 0;

	for (i = 0; i < _NC_COND_MAX; i++)
		conds[i] = (struct nc_condition_state){ .ok = true, .since = 1000 };
	conds[NC_COND_VALIDATION] = (struct nc_condition_state){ .ok = false, .since = 2000 };
	snprintf(conds[NC_COND_VALIDATION].message, sizeof(conds[NC_COND_VALIDATION].message), "%s", msg);
	j = nc_status_json(&res, conds, 2000);
	cr_assert_not_null(j);
	json_array_foreach(json_object_get(json_object_get(j, "status"), "conditions"), i, c) {
		const char *type = json_string_value(json_object_get(c, "type"));

		if (!streq(type, "ValidationSucceeded") && !streq(type, "Ready"))
			continue;
		seen++;
		cr_assert_str_eq(json_string_value(json_object_get(c, "status")), "False", "%s", type);
		cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), "UnsupportedField", "%s", type);
		cr_assert_str_eq(json_string_value(json_object_get(c, "message")), msg, "%s", type);
	}
	cr_assert_eq(seen, 2);
	json_decref(j);
}

Test(nodeclass_profile, instance_profile_names_are_karpenters_shape_and_bounded)
{
	char a[NC_PROFILE_NAME_MAX + 1], b[NC_PROFILE_NAME_MAX + 1], longname[300];

	nc_instance_profile_name("demo", "us-west-2", "default", a);
	nc_instance_profile_name("demo", "us-west-2", "default", b);
	cr_assert_str_eq(a, b);
	cr_assert(strncmp(a, "demo_", 5) == 0, "%s", a);
	nc_instance_profile_name("demo", "us-east-1", "default", b);
	cr_assert_str_neq(a, b);
	memset(longname, 'c', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	nc_instance_profile_name(longname, "us-west-2", "default", b);
	cr_assert_eq(strlen(b), NC_PROFILE_NAME_MAX);
	cr_assert(strchr(b, '_'));
}
