/* SPDX-License-Identifier: MIT */
/* libFuzzer target for launcher/catalog-ec2.c: any DescribeInstanceTypes,
 * DescribeInstanceTypeOfferings or DescribeSpotPriceHistory page is read
 * (or rejected) and built into a catalog without crashing or reading out of
 * bounds. One input is tried as each of the three pages in turn. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "launcher/catalog-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	struct ec2_described d = { 0 };
	struct aws_xml_node *root = NULL;
	struct proto_instance_type *types;
	struct arena a = { 0 };
	double *spot = NULL;
	int64_t *spot_ms = NULL;
	uint32_t n;

	if (aws_xml_parse((const char *) data, size, &root) < 0)
		return 0;
	if (ec2_read_types_page(root, &d) < 0)
		goto out;
	ec2_described_sort(&d);
	if (ec2_read_offerings_page(root, &d) < 0)
		goto out;
	spot = malloc((d.n * d.n_zones + 1) * sizeof(*spot));
	spot_ms = calloc(d.n * d.n_zones + 1, sizeof(*spot_ms));
	if (!spot || !spot_ms)
		goto out;
	for (size_t i = 0; i < d.n * d.n_zones; i++)
		spot[i] = -1;
	if (ec2_read_spot_page(root, &d, spot, spot_ms) < 0)
		goto out;
	{
		struct ec2_build b = { .d = &d, .spot = spot, .region = "us-west-2",
				       .vm_memory_overhead = 0.075 };
		(void) ec2_build_catalog(&b, &a, &types, &n);
	}
out:
	arena_done(&a);
	free(spot);
	free(spot_ms);
	ec2_described_clear(&d);
	aws_xml_free(root);
	return 0;
}
