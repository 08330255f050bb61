/*
 * libFuzzer target for the EC2NodeClass resolver's readers of outside
 * bytes: the first byte picks the family whose user data merge gets the
 * rest as the EC2NodeClass's userData (MIME multipart for AL2/AL2023, TOML
 * for Bottlerocket), then the same bytes go through the XML parser and the
 * readers of DescribeSubnets/SecurityGroups/Images/LaunchTemplates and
 * GetInstanceProfile. Everything must be accepted or refused, never crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"
#include "launcher/nodeclass-ec2.h"
#include "launcher/userdata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void user_data(enum ami_family family, const char *text)
{
	struct proto_kv labels[] = { { "karpenter.sh/nodepool", "default" }, { "team", "a" } };
	struct proto_taint taints[] = { { .key = "dedicated", .value = "gpu",
					  .effect = PROTO_EFFECT_NO_SCHEDULE } };
	struct proto_kubelet kubelet = { .max_pods = 29 };
	struct userdata_options o = {
		.family = family, .cluster_name = "demo", .cluster_endpoint = "https://api:443",
		.cluster_ca = "Q0E=", .labels = labels, .n_labels = 2, .taints = taints, .n_taints = 1,
		.kubelet = &kubelet, .custom = text,
	};
	char why[USERDATA_WHY_MAX], *out = NULL;

	if (userdata_render(&o, &out, why) == 0)
		free(out);
}

static void readers(const char *text, size_t len)
{
	struct aws_xml_node *x = NULL;
	static struct nc_resolved res;
	struct nc_image images[8];
	struct nc_template_seen seen[8];
	char role[64];
	size_t n = 0;

	if (aws_xml_parse(text, len, &x) < 0)
		return;
	res.n_subnets = res.n_groups = 0;
	(void)nc_subnets_read(x, &res);
	(void)nc_security_groups_read(x, &res);
	(void)nc_images_read(x, images, 8, &n);
	(void)nc_images_newest_per_arch(images, n);
	(void)nc_templates_read(x, seen, 8, &n);
	(void)nc_instance_profile_role(x, role, sizeof(role));
	aws_xml_free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1)
		return 0;
	text = strndup((const char *)data + 1, size - 1);
	if (!text)
		return 0;
	user_data((enum ami_family)(data[0] % 4), text);
	readers(text, strlen(text));
	free(text);
	return 0;
}
