/* libFuzzer target: AWS XML responses (element tree, accessors, error and
 * STS credential readers) on arbitrary bytes. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "common/aws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aws_xml_node *root = NULL;
	struct aws_credentials *creds = NULL;
	struct aws_error err;

	if (aws_xml_parse((const char *)data, size, &root) == 0) {
		/* walk it as the typed readers do */
		const struct aws_xml_node *n = aws_xml_find(root, "fleetInstanceSet/item");

		for (; n; n = aws_xml_next(n))
			(void)aws_xml_text(n, "instanceIds/item");
		aws_xml_free(root);
	}
	aws_error_parse((const char *)data, size, 400, &err);
	if (aws_credentials_parse_sts_xml((const char *)data, size, &creds) == 0)
		aws_credentials_free(creds);
	if (aws_credentials_parse_json((const char *)data, size, &creds) == 0)
		aws_credentials_free(creds);
	return 0;
}
