/*
 * kanna-sim's AMIs: the EKS-optimized Amazon Linux 2, Amazon Linux 2023 and
 * Bottlerocket images (standard, NVIDIA and Neuron variants as AWS
 * publishes them), Windows Server 2019/2022/2025 Core EKS_Optimized and
 * Canonical's Ubuntu 20.04 EKS images, for every simulated region,
 * architecture (x86_64, arm64; Windows x86_64 only) and Kubernetes
 * 1.28..1.34, with ids derived from the seed; DescribeImages over them, and
 * the public SSM parameters that alias them:
 *   https://docs.aws.amazon.com/eks/latest/userguide/retrieve-ami-id.html
 *   https://docs.aws.amazon.com/eks/latest/userguide/retrieve-windows-ami-id.html
 *   https://docs.aws.amazon.com/eks/latest/userguide/retrieve-ami-id-bottlerocket.html
 *   https://documentation.ubuntu.com/aws/aws-how-to/instances/find-ubuntu-images/
 * Built once by sim_aws_new(); read-only afterwards.
 */
#include <inttypes.h>

#include "sim/aws-internal.h"

/* The release stamp every simulated AMI carries in its name. */
#define AMI_RELEASE "v20250601"
#define AMI_CREATION_DATE "2025-06-01T00:00:00.000Z"
#define BOTTLEROCKET_RELEASE "v1.40.0-a1b2c3d4"
#define WINDOWS_RELEASE "2025.06.01"
#define UBUNTU_SERIAL "20250601"
#define AMI_ROOT_VOLUME_GIB 20
/* Windows EKS AMIs boot from a 50 GiB /dev/sda1. */
#define WINDOWS_ROOT_VOLUME_GIB 50
/* Canonical publishes the Ubuntu images; Amazon the Windows ones. */
#define CANONICAL_OWNER_ID "099720109477"
#define WINDOWS_OWNER_ID "801119661308"

static const char *const ami_archs[] = { "x86_64", "arm64" };
static const char *const variant_names[] = { "standard", "nvidia", "neuron" };

static bool is_windows(enum aws_ami_family f)
{
	return f == AMI_WINDOWS2019 || f == AMI_WINDOWS2022 || f == AMI_WINDOWS2025;
}

static const char *windows_year(enum aws_ami_family f)
{
	return f == AMI_WINDOWS2019 ? "2019" : f == AMI_WINDOWS2022 ? "2022" : "2025";
}

const char *aws_image_windows_build(const struct aws_image *im)
{
	/* aws/karpenter-provider-aws pkg/apis/v1/labels.go */
	switch (im->family) {
	case AMI_WINDOWS2019:
		return "10.0.17763";
	case AMI_WINDOWS2022:
		return "10.0.20348";
	case AMI_WINDOWS2025:
		return "10.0.26100";
	default:
		return NULL;
	}
}

/* Which images AWS publishes: AL2's GPU image (x86_64) has the NVIDIA and
 * Neuron drivers; AL2023 has nvidia for both and neuron for x86_64;
 * Bottlerocket has -nvidia flavours, its x86_64 image runs Neuron; Windows
 * and Ubuntu have one image per architecture (Windows: x86_64 only). */
static bool image_exists(enum aws_ami_family f, bool arm, enum aws_ami_variant v)
{
	switch (f) {
	case AMI_AL2:
		return v == AMI_STANDARD || (v == AMI_NVIDIA && !arm);
	case AMI_AL2023:
		return v != AMI_NEURON || !arm;
	case AMI_BOTTLEROCKET:
		return v != AMI_NEURON;
	case AMI_UBUNTU:
		return v == AMI_STANDARD;
	default:
		return v == AMI_STANDARD && !arm;
	}
}

static void image_name(struct aws_image *im)
{
	bool arm = streq(im->arch, "arm64"), nvidia = im->variant == AMI_NVIDIA;

	switch (im->family) {
	case AMI_AL2:
		snprintf(im->name, sizeof(im->name), "amazon-eks-%s%snode-1.%u-%s",
			 arm ? "arm64-" : "", nvidia ? "gpu-" : "", im->k8s_minor, AMI_RELEASE);
		break;
	case AMI_AL2023:
		snprintf(im->name, sizeof(im->name), "amazon-eks-node-al2023-%s-%s-1.%u-%s",
			 im->arch, variant_names[im->variant], im->k8s_minor, AMI_RELEASE);
		break;
	case AMI_BOTTLEROCKET:
		snprintf(im->name, sizeof(im->name), "bottlerocket-aws-k8s-1.%u%s-%s-%s",
			 im->k8s_minor, nvidia ? "-nvidia" : "", im->arch, BOTTLEROCKET_RELEASE);
		break;
	case AMI_UBUNTU:
		snprintf(im->name, sizeof(im->name), "ubuntu-eks/k8s_1.%u/images/hvm-ssd/ubuntu-focal-20.04-%s-server-%s",
			 im->k8s_minor, arm ? "arm64" : "amd64", UBUNTU_SERIAL);
		break;
	default:
		snprintf(im->name, sizeof(im->name), "Windows_Server-%s-English-Core-EKS_Optimized-1.%u-%s",
			 windows_year(im->family), im->k8s_minor, WINDOWS_RELEASE);
	}
}

int aws_images_build(struct sim_aws *aws)
{
	size_t n = SIM_AWS_REGIONS_MAX * _AMI_FAMILY_MAX * ARRAY_SIZE(ami_archs) * _AMI_VARIANT_MAX *
		   (SIM_AWS_K8S_MINOR_LAST - SIM_AWS_K8S_MINOR_FIRST + 1);
	char key[192];

	aws->images = calloc(n, sizeof(*aws->images));
	if (!aws->images)
		return -ENOMEM;
	for (size_t r = 0; r < aws->catalog->n_regions; r++)
		for (int fam = 0; fam < _AMI_FAMILY_MAX; fam++)
			for (size_t a = 0; a < ARRAY_SIZE(ami_archs); a++)
				for (int v = 0; v < _AMI_VARIANT_MAX; v++)
					for (unsigned m = SIM_AWS_K8S_MINOR_FIRST; m <= SIM_AWS_K8S_MINOR_LAST; m++) {
						struct aws_image *im;

						if (!image_exists((enum aws_ami_family)fam, a == 1, (enum aws_ami_variant)v))
							continue;
						im = &aws->images[aws->n_images++];
						im->family = (enum aws_ami_family)fam;
						im->arch = ami_archs[a];
						im->variant = (enum aws_ami_variant)v;
						im->k8s_minor = m;
						snprintf(im->region, sizeof(im->region), "%s",
							 aws->catalog->regions[r].name);
						image_name(im);
						snprintf(key, sizeof(key), "%s/%s", im->region, im->name);
						snprintf(im->id, sizeof(im->id), "ami-%017" PRIx64,
							 aws_hash(key, aws->seed) & (uint64_t)0xfffffffffffffffULL);
					}
	return 0;
}

const struct aws_image *aws_image_lookup(const struct sim_aws *aws, const char *region,
					 enum aws_ami_family family, const char *arch,
					 enum aws_ami_variant variant, unsigned k8s_minor)
{
	for (size_t i = 0; i < aws->n_images; i++) {
		const struct aws_image *im = &aws->images[i];

		if (im->family == family && im->variant == variant && im->k8s_minor == k8s_minor &&
		    streq(im->arch, arch) && streq(im->region, region))
			return im;
	}
	return NULL;
}

const struct aws_image *aws_image_by_id(const struct sim_aws *aws, const char *region,
					const char *id)
{
	for (size_t i = 0; id && i < aws->n_images; i++)
		if (streq(aws->images[i].id, id) && streq(aws->images[i].region, region))
			return &aws->images[i];
	return NULL;
}

/* The SSM alias of an image: which == 0 the "recommended"/"latest" path,
 * which == 1 the path pinned to its name. Empty when there is none
 * (Windows and Ubuntu publish only the current image). */
void aws_image_ssm_path(const struct aws_image *im, int which, char *out, size_t len)
{
	bool arm = streq(im->arch, "arm64");

	out[0] = '\0';
	switch (im->family) {
	case AMI_AL2:
		snprintf(out, len, "/aws/service/eks/optimized-ami/1.%u/amazon-linux-2%s/%s/image_id",
			 im->k8s_minor, arm ? "-arm64" : im->variant == AMI_NVIDIA ? "-gpu" : "",
			 which ? im->name : "recommended");
		break;
	case AMI_AL2023:
		snprintf(out, len, "/aws/service/eks/optimized-ami/1.%u/amazon-linux-2023/%s/%s/%s/image_id",
			 im->k8s_minor, im->arch, variant_names[im->variant], which ? im->name : "recommended");
		break;
	case AMI_BOTTLEROCKET:
		/* SSM names Bottlerocket releases without GitHub's leading "v" */
		snprintf(out, len, "/aws/service/bottlerocket/aws-k8s-1.%u%s/%s/%s/image_id",
			 im->k8s_minor, im->variant == AMI_NVIDIA ? "-nvidia" : "", im->arch,
			 which ? &BOTTLEROCKET_RELEASE[1] : "latest");
		break;
	case AMI_UBUNTU:
		if (!which)
			snprintf(out, len, "/aws/service/canonical/ubuntu/eks/20.04/1.%u/stable/current/%s/hvm/ebs-gp2/ami-id",
				 im->k8s_minor, arm ? "arm64" : "amd64");
		break;
	default:
		if (!which)
			snprintf(out, len, "/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-1.%u/image_id",
				 windows_year(im->family), im->k8s_minor);
	}
}

static const char *image_owner(const struct aws_image *im)
{
	return im->family == AMI_UBUNTU ? CANONICAL_OWNER_ID :
	       is_windows(im->family) ? WINDOWS_OWNER_ID : SIM_AWS_AMI_OWNER_ID;
}

static const char *const image_filters[] = {
	"image-id", "name", "architecture", "owner-id", "owner-alias", "state",
	"image-type", "is-public", "root-device-type", "virtualization-type", "platform", NULL,
};

/* Owner.N: an account id, or "amazon" for Amazon's (not Canonical's). */
static bool owners_include(const struct aws_list *owners, const struct aws_image *im)
{
	return owners->n == 0 || aws_list_has(owners, image_owner(im)) ||
	       (im->family != AMI_UBUNTU && aws_list_has(owners, "amazon"));
}

static bool image_matches(const struct aws_image *im, const struct aws_list *ids,
			  const struct aws_filters *f)
{
	if (ids->n && !aws_list_has(ids, im->id))
		return false;
	for (size_t i = 0; i < f->n; i++) {
		const char *n = f->v[i].name;
		const char *v = streq(n, "image-id") ? im->id : streq(n, "name") ? im->name :
				streq(n, "architecture") ? im->arch :
				streq(n, "owner-id") ? image_owner(im) :
				streq(n, "owner-alias") ? (im->family == AMI_UBUNTU ? NULL : "amazon") :
				streq(n, "platform") ? (is_windows(im->family) ? "windows" : NULL) :
				streq(n, "state") ? "available" :
				streq(n, "image-type") ? "machine" : streq(n, "is-public") ? "true" :
				streq(n, "root-device-type") ? "ebs" :
				streq(n, "virtualization-type") ? "hvm" : NULL;

		/* The simulated AMIs carry no tags: any tag filter excludes them. */
		if (!v || !aws_filter_matches(&f->v[i], v))
			return false;
	}
	return true;
}

static void write_image(struct xml *x, const struct aws_image *im)
{
	bool windows = is_windows(im->family), canonical = im->family == AMI_UBUNTU;
	const char *root = windows || canonical ? "/dev/sda1" : "/dev/xvda";

	xml_open(x, "item");
	xml_leaf(x, "imageId", im->id);
	xml_leaff(x, "imageLocation", "%s/%s", canonical ? CANONICAL_OWNER_ID : "amazon", im->name);
	xml_leaf(x, "imageState", "available");
	xml_leaf(x, "imageOwnerId", image_owner(im));
	xml_leaf(x, "creationDate", AMI_CREATION_DATE);
	xml_leaf_bool(x, "isPublic", true);
	xml_leaf(x, "architecture", im->arch);
	xml_leaf(x, "imageType", "machine");
	xml_leaf(x, "name", im->name);
	xml_leaff(x, "description", "EKS Kubernetes Worker AMI, k8s 1.%u (kanna-sim)", im->k8s_minor);
	if (windows)
		xml_leaf(x, "platform", "windows");
	xml_leaf(x, "rootDeviceType", "ebs");
	xml_leaf(x, "rootDeviceName", root);
	xml_open(x, "blockDeviceMapping");
	xml_open(x, "item");
	xml_leaf(x, "deviceName", root);
	xml_open(x, "ebs");
	xml_leaff(x, "volumeSize", "%u", windows ? WINDOWS_ROOT_VOLUME_GIB : AMI_ROOT_VOLUME_GIB);
	xml_leaf_bool(x, "deleteOnTermination", true);
	xml_leaf(x, "volumeType", "gp3");
	xml_leaf_bool(x, "encrypted", false);
	xml_close(x, "ebs");
	xml_close(x, "item");
	xml_close(x, "blockDeviceMapping");
	xml_leaf(x, "virtualizationType", "hvm");
	xml_leaf(x, "hypervisor", "xen");
	xml_leaf_bool(x, "enaSupport", true);
	/* https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/billing-info-fields.html */
	xml_leaf(x, "platformDetails", windows ? "Windows" : "Linux/UNIX");
	xml_leaf(x, "usageOperation", windows ? "RunInstances:0002" : "RunInstances");
	if (!canonical)
		xml_leaf(x, "imageOwnerAlias", "amazon");
	xml_empty(x, "tagSet");
	xml_close(x, "item");
}

int ec2_describe_images(struct sim_aws *aws, const struct aws_request *req,
			struct aws_response *resp)
{
	struct aws_list ids = { 0 }, owners = { 0 };
	struct aws_filters f = { 0 };
	size_t start, limit, n = 0;
	bool handled;
	struct xml x;
	int r;

	if (aws_params_list(req->params, "ImageId", &ids) < 0 ||
	    aws_params_list(req->params, "Owner", &owners) < 0) {
		aws_list_clear(&ids);
		aws_list_clear(&owners);
		return -ENOMEM;
	}
	for (size_t k = 0; k < ids.n; k++)
		if (!aws_image_by_id(aws, req->region, ids.v[k])) {
			r = aws_error(resp, req, 400, "InvalidAMIID.NotFound",
				      "The image id '[%s]' does not exist", ids.v[k] ? ids.v[k] : "");
			aws_list_clear(&ids);
			aws_list_clear(&owners);
			return r;
		}
	r = aws_page_parse(req, resp, PAGE_IMAGES, &start, &limit, &handled);
	if (r >= 0 && !handled)
		r = ec2_filters_load(req, resp, image_filters, true, &f, &handled);
	if (r >= 0 && !handled)
		r = xml_begin(&x, "DescribeImagesResponse", EC2_XMLNS);
	if (r < 0 || handled) {
		aws_filters_clear(&f);
		aws_list_clear(&ids);
		aws_list_clear(&owners);
		return r;
	}
	xml_leaf(&x, "requestId", req->request_id);
	xml_open(&x, "imagesSet");
	for (size_t i = 0; i < aws->n_images; i++) {
		const struct aws_image *im = &aws->images[i];

		if (!owners_include(&owners, im) || !streq(im->region, req->region) || !image_matches(im, &ids, &f))
			continue;
		if (n >= start && n - start < limit)
			write_image(&x, im);
		n++;
	}
	xml_close(&x, "imagesSet");
	if (limit != PAGE_ALL && start + limit < n)
		aws_page_next_token(&x, start + limit);
	aws_filters_clear(&f);
	aws_list_clear(&ids);
	aws_list_clear(&owners);
	return xml_finish(&x, "DescribeImagesResponse", resp);
}
