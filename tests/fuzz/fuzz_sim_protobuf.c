/*
 * Fuzzes kanna-sim's protobuf body decoder (sim/k8s-protobuf.c): the input
 * is a request body as client-go sends it ("k8s\0" + runtime.Unknown),
 * decoded for a built-in resource the input's length picks (it names the
 * kind in errors). Nothing may crash, leak or read past the input; what
 * decodes must be a JSON object that serialises.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/k8s-protobuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const plurals[][2] = {
	{ "", "namespaces" },	 { "", "configmaps" },		     { "", "services" },
	{ "", "serviceaccounts" }, { "apps", "deployments" },	     { "", "pods" },
	{ "policy", "poddisruptionbudgets" },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct k8s_registry *reg;
	const struct k8s_resource *res;
	struct k8s_error err = {};
	json_t *obj = NULL;
	uint8_t *copy;

	if (!reg) {
		reg = k8s_registry_new();
		if (!reg)
			abort();
	}
	res = k8s_registry_find(reg, plurals[size % 7][0], "v1", plurals[size % 7][1]);
	if (!res)
		abort();
	/* An exact-size copy, so that ASan sees any read past the body. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (k8s_protobuf_decode(copy, size, res, &obj, &err) == 0) {
		char *s = json_dumps(obj, JSON_COMPACT);

		if (!json_is_object(obj) || !s)
			abort();
		free(s);
		json_decref(obj);
	} else if (err.code != 400 && err.code != 415 && err.code != 0)
		abort();
	k8s_error_clear(&err);
	free(copy);
	return 0;
}
