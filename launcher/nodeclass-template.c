/*
 * Launch templates of resolved EC2NodeClass configurations: the name is
 * "kanna-" + the SHA-256 (first 128 bits) of a canonical text of
 * everything the template holds (image, user data, security groups,
 * instance profile, block devices, metadata options, monitoring, public IP,
 * tags), so equal configurations share one template across processes and
 * restarts;
 * the CreateLaunchTemplate request; the reader of DescribeLaunchTemplates
 * for garbage collection. Pure; nodeclass.c runs the calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"
#include "common/base64.h"
#include "common/util.h"
#include "launcher/nodeclass-ec2.h"

#define GIB (1024LL * 1024 * 1024)
/* Karpenter's DefaultEBS: 20 GiB gp3, encrypted; Bottlerocket's OS volume 4 GiB. */
#define DEFAULT_VOLUME_BYTES (20 * GIB)
#define BOTTLEROCKET_OS_VOLUME_BYTES (4 * GIB)
#define WINDOWS_VOLUME_BYTES (50 * GIB)
/* IMDSv2 required, one hop (pods cannot reach the node's credentials). */
#define DEFAULT_HOP_LIMIT 1

static const struct proto_block_device default_al_devices[] = {
	{ .device_name = "/dev/xvda", .volume_size_bytes = DEFAULT_VOLUME_BYTES, .volume_type = "gp3",
	  .encrypted = true, .delete_on_termination = true },
};
static const struct proto_block_device default_bottlerocket_devices[] = {
	{ .device_name = "/dev/xvda", .volume_size_bytes = BOTTLEROCKET_OS_VOLUME_BYTES,
	  .volume_type = "gp3", .encrypted = true, .delete_on_termination = true },
	{ .device_name = "/dev/xvdb", .volume_size_bytes = DEFAULT_VOLUME_BYTES, .volume_type = "gp3",
	  .encrypted = true, .delete_on_termination = true },
};

/* Ubuntu and Windows boot from /dev/sda1; Windows' root is 50 GiB
 * (aws/karpenter-provider-aws pkg/providers/amifamily/{ubuntu,windows}.go). */
static const struct proto_block_device default_ubuntu_devices[] = {
	{ .device_name = "/dev/sda1", .volume_size_bytes = DEFAULT_VOLUME_BYTES, .volume_type = "gp3",
	  .encrypted = true, .delete_on_termination = true },
};
static const struct proto_block_device default_windows_devices[] = {
	{ .device_name = "/dev/sda1", .volume_size_bytes = WINDOWS_VOLUME_BYTES, .volume_type = "gp3",
	  .encrypted = true, .delete_on_termination = true },
};

static const struct proto_block_device *devices(const struct nc_template *t, size_t *n)
{
	if (t->n_block_devices) {
		*n = t->n_block_devices;
		return t->block_devices;
	}
	switch (t->family) {
	case AMI_FAMILY_BOTTLEROCKET:
		*n = ARRAY_SIZE(default_bottlerocket_devices);
		return default_bottlerocket_devices;
	case AMI_FAMILY_UBUNTU:
		*n = ARRAY_SIZE(default_ubuntu_devices);
		return default_ubuntu_devices;
	case AMI_FAMILY_WINDOWS2019:
	case AMI_FAMILY_WINDOWS2022:
	case AMI_FAMILY_WINDOWS2025:
		*n = ARRAY_SIZE(default_windows_devices);
		return default_windows_devices;
	case AMI_FAMILY_CUSTOM:
		*n = 0; /* the AMI's own mappings */
		return NULL;
	default:
		*n = ARRAY_SIZE(default_al_devices);
		return default_al_devices;
	}
}

struct metadata {
	const char *endpoint, *ipv6, *tokens;
	int hops;
};

static struct metadata metadata_of(const struct nc_template *t)
{
	const struct proto_metadata_options *m = t->metadata;

	return (struct metadata){
		.endpoint = m && m->http_endpoint ? m->http_endpoint : "enabled",
		.ipv6 = m && m->http_protocol_ipv6 ? m->http_protocol_ipv6 : "disabled",
		.tokens = m && m->http_tokens ? m->http_tokens : "required",
		.hops = m && m->http_put_response_hop_limit > 0 ? m->http_put_response_hop_limit
								 : DEFAULT_HOP_LIMIT,
	};
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_kv(const void *a, const void *b)
{
	return strcmp(((const struct proto_kv *)a)->key, ((const struct proto_kv *)b)->key);
}

/* One canonical line per field; lists sorted, so order in the spec does
 * not change the name. Each value is length-prefixed: no two different
 * configurations share a text. */
static void put(FILE *f, const char *field, const char *v)
{
	fprintf(f, "%s %zu:%s\n", field, strlen(v ?: ""), v ?: "");
}

static int canonical_text(const struct nc_template *t, char **ret, size_t *len)
{
	_cleanup_free_ const char **groups = calloc(t->n_groups + 1, sizeof(*groups));
	_cleanup_free_ struct proto_kv *tags = calloc(t->n_tags + 1, sizeof(*tags));
	struct metadata md = metadata_of(t);
	const struct proto_block_device *bd;
	size_t n_bd;
	FILE *f;

	if (!groups || !tags)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_groups; i++)
		groups[i] = t->groups[i].id;
	qsort(groups, t->n_groups, sizeof(*groups), cmp_str);
	memcpy_safe(tags, t->tags, t->n_tags * sizeof(*tags));
	qsort(tags, t->n_tags, sizeof(*tags), cmp_kv);
	f = open_memstream(ret, len);
	if (!f)
		return -ENOMEM;
	put(f, "cluster", t->cluster_name);
	put(f, "image", t->image_id);
	put(f, "userdata", t->user_data);
	for (size_t i = 0; i < t->n_groups; i++)
		put(f, "group", groups[i]);
	put(f, "profile", t->instance_profile);
	bd = devices(t, &n_bd);
	for (size_t i = 0; i < n_bd; i++) {
		put(f, "device", bd[i].device_name);
		fprintf(f, "ebs %" PRId64 " %d %d %d %d %d\n", bd[i].volume_size_bytes, bd[i].iops,
			bd[i].throughput, bd[i].encrypted, bd[i].delete_on_termination, bd[i].root_volume);
		put(f, "type", bd[i].volume_type);
		put(f, "kms", bd[i].kms_key_id);
		put(f, "snapshot", bd[i].snapshot_id);
	}
	put(f, "imds-endpoint", md.endpoint);
	put(f, "imds-ipv6", md.ipv6);
	put(f, "imds-tokens", md.tokens);
	fprintf(f, "imds-hops %d\nmonitoring %d\n", md.hops, t->detailed_monitoring);
	if (t->associate_public_ip != PROTO_COND_UNKNOWN)
		fprintf(f, "public-ip %d\n", t->associate_public_ip == PROTO_COND_TRUE);
	for (size_t i = 0; i < t->n_tags; i++) {
		put(f, "tag", tags[i].key);
		put(f, "value", tags[i].value);
	}
	return fclose(f) == 0 ? 0 : -ENOMEM;
}

int nc_template_name(const struct nc_template *t, char out[NC_LAUNCH_TEMPLATE_NAME_MAX])
{
	_cleanup_free_ char *text = NULL;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	size_t len = 0;
	int r;

	r = canonical_text(t, &text, &len);
	if (r < 0)
		return r;
	if (!EVP_Digest(text, len, md, &md_len, EVP_sha256(), NULL))
		return -EIO;
	strcpy(out, "kanna-");
	for (size_t i = 0; i < 16; i++)
		snprintf(out + 6 + 2 * i, 3, "%02x", md[i]);
	return 0;
}

#define LTD "LaunchTemplateData."

static int add_devices(struct aws_query *q, const struct nc_template *t)
{
	size_t n;
	const struct proto_block_device *bd = devices(t, &n);
	int r = 0;

	for (unsigned i = 0; r >= 0 && i < n; i++) {
		const struct proto_block_device *b = &bd[i];
		unsigned k = i + 1;

		r = aws_query_add(q, b->device_name, LTD "BlockDeviceMapping.%u.DeviceName", k);
		/* EBS sizes are whole GiB; round a partial GiB up */
		if (r >= 0 && b->volume_size_bytes > 0)
			r = aws_query_add_int(q, (b->volume_size_bytes + GIB - 1) / GIB,
					      LTD "BlockDeviceMapping.%u.Ebs.VolumeSize", k);
		if (r >= 0 && b->volume_type)
			r = aws_query_add(q, b->volume_type, LTD "BlockDeviceMapping.%u.Ebs.VolumeType", k);
		if (r >= 0 && b->iops > 0)
			r = aws_query_add_int(q, b->iops, LTD "BlockDeviceMapping.%u.Ebs.Iops", k);
		if (r >= 0 && b->throughput > 0)
			r = aws_query_add_int(q, b->throughput, LTD "BlockDeviceMapping.%u.Ebs.Throughput", k);
		if (r >= 0)
			r = aws_query_add(q, b->encrypted ? "true" : "false",
					  LTD "BlockDeviceMapping.%u.Ebs.Encrypted", k);
		if (r >= 0 && b->kms_key_id)
			r = aws_query_add(q, b->kms_key_id, LTD "BlockDeviceMapping.%u.Ebs.KmsKeyId", k);
		if (r >= 0 && b->snapshot_id)
			r = aws_query_add(q, b->snapshot_id, LTD "BlockDeviceMapping.%u.Ebs.SnapshotId", k);
		if (r >= 0)
			r = aws_query_add(q, b->delete_on_termination ? "true" : "false",
					  LTD "BlockDeviceMapping.%u.Ebs.DeleteOnTermination", k);
	}
	return r;
}

/*
 * Security groups, and spec.associatePublicIPAddress as Karpenter writes it
 * (pkg/providers/launchtemplate generateNetworkInterfaces): when set, one
 * network interface, DeviceIndex 0, with AssociatePublicIpAddress and the
 * groups (EC2 takes groups there or at the top, not both); CreateFleet's
 * SubnetId override still places it.
 */
static int add_network(struct aws_query *q, const struct nc_template *t)
{
	bool ni = t->associate_public_ip != PROTO_COND_UNKNOWN;
	int r = 0;

	if (ni) {
		r = aws_query_add(q, t->associate_public_ip == PROTO_COND_TRUE ? "true" : "false",
				  LTD "NetworkInterface.1.AssociatePublicIpAddress");
		if (r >= 0)
			r = aws_query_add_int(q, 0, LTD "NetworkInterface.1.DeviceIndex");
	}
	for (unsigned i = 0; r >= 0 && i < t->n_groups; i++)
		r = aws_query_add(q, t->groups[i].id,
				  ni ? LTD "NetworkInterface.1.SecurityGroupId.%u" : LTD "SecurityGroupId.%u", i + 1);
	return r;
}

static int add_tag(struct aws_query *q, unsigned *k, const char *key, const char *value)
{
	int r;

	++*k;
	r = aws_query_add(q, key, "TagSpecification.1.Tag.%u.Key", *k);
	return r < 0 ? r : aws_query_add(q, value ?: "", "TagSpecification.1.Tag.%u.Value", *k);
}

int nc_template_create_query(const struct nc_template *t, const char *name, struct aws_query **ret)
{
	_cleanup_(aws_query_freep) struct aws_query *q = NULL;
	_cleanup_free_ char *ud = NULL, *cluster_tag = NULL;
	struct metadata md = metadata_of(t);
	unsigned k = 0;
	int r;

	ud = base64_encode(t->user_data ?: "", strlen(t->user_data ?: ""));
	if (!ud || asprintf(&cluster_tag, "kubernetes.io/cluster/%s", t->cluster_name) < 0)
		return -ENOMEM;
	r = aws_query_new("CreateLaunchTemplate", EC2_API_VERSION, &q);
	if (r >= 0)
		r = aws_query_add(q, name, "LaunchTemplateName");
	if (r >= 0)
		r = aws_query_add(q, t->image_id, LTD "ImageId");
	if (r >= 0 && *ud)
		r = aws_query_add(q, ud, LTD "UserData");
	r = r < 0 ? r : add_network(q, t);
	if (r >= 0 && t->instance_profile && *t->instance_profile)
		r = aws_query_add(q, t->instance_profile, LTD "IamInstanceProfile.Name");
	if (r >= 0)
		r = add_devices(q, t);
	if (r >= 0)
		r = aws_query_add(q, md.endpoint, LTD "MetadataOptions.HttpEndpoint");
	if (r >= 0)
		r = aws_query_add(q, md.ipv6, LTD "MetadataOptions.HttpProtocolIpv6");
	if (r >= 0)
		r = aws_query_add_int(q, md.hops, LTD "MetadataOptions.HttpPutResponseHopLimit");
	if (r >= 0)
		r = aws_query_add(q, md.tokens, LTD "MetadataOptions.HttpTokens");
	if (r >= 0)
		r = aws_query_add(q, t->detailed_monitoring ? "true" : "false", LTD "Monitoring.Enabled");
	if (r >= 0)
		r = aws_query_add(q, "launch-template", "TagSpecification.1.ResourceType");
	/* the NodeClass's tags, except those naming the owner (ours below win) */
	for (size_t i = 0; r >= 0 && i < t->n_tags; i++)
		if (!streq(t->tags[i].key, "karpenter.k8s.aws/cluster") &&
		    !streq(t->tags[i].key, "karpenter.k8s.aws/ec2nodeclass") &&
		    !streq(t->tags[i].key, cluster_tag) && !streq(t->tags[i].key, NC_MANAGED_BY_TAG))
			r = add_tag(q, &k, t->tags[i].key, t->tags[i].value);
	if (r >= 0)
		r = add_tag(q, &k, "karpenter.k8s.aws/cluster", t->cluster_name);
	if (r >= 0)
		r = add_tag(q, &k, "karpenter.k8s.aws/ec2nodeclass", t->nodeclass);
	if (r >= 0)
		r = add_tag(q, &k, cluster_tag, "owned");
	if (r >= 0)
		r = add_tag(q, &k, NC_MANAGED_BY_TAG, t->cluster_name);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(q);
	return 0;
}

int nc_templates_read(const struct aws_xml_node *root, struct nc_template_seen *out, size_t max,
		      size_t *n)
{
	const struct aws_xml_node *set = aws_xml_child(root, "launchTemplates");

	*n = 0;
	if (!set)
		return -EBADMSG;
	for (const struct aws_xml_node *it = aws_xml_first(set, "item"); it; it = aws_xml_next(it)) {
		const char *name = aws_xml_text(it, "launchTemplateName");
		const char *created = aws_xml_text(it, "createTime");
		time_t t = 0;

		if (!name || !*name || !created || aws_parse_iso8601(created, &t) < 0)
			return -EBADMSG;
		if (*n == max)
			return -E2BIG;
		snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
		out[(*n)++].created = (int64_t)t;
	}
	return 0;
}
