/* Fuzz target: any bytes through the YAML → JSON loader. */
#include <stdint.h>
#include <stdlib.h>

#include "common/yaml-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct yaml_docs *d = NULL;
	char err[256];

	if (yaml_docs_load_buffer((const char *)data, size, "fuzz", &d, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < d->n_docs; i++) {
			char *s = json_dumps(d->docs[i], JSON_ENCODE_ANY);
			free(s);
		}
		yaml_docs_free(d);
	}
	return 0;
}
