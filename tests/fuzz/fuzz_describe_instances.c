/* libFuzzer target for launcher/fleet.c's DescribeInstances reader: any
 * response body must parse (expat) and be read, or be rejected, never crash
 * or read out of bounds. */
#include <stddef.h>
#include <stdint.h>

#include "common/aws.h"
#include "launcher/fleet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aws_xml_node *root = NULL;
	struct ec2_instance found[4];

	if (aws_xml_parse((const char *)data, size, &root) < 0)
		return 0;
	(void)ec2_instances_parse(root, found, 4);
	aws_xml_free(root);
	return 0;
}
