/*
 * Fuzz target: the watcher's Kubernetes decoders. The first byte picks the
 * kind; the rest is the object's JSON.
 */
#include <jansson.h>
#include <stdint.h>

#include "watcher/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kinds[] = {
	"Pod", "Node", "NodePool", "Provisioner", "NodeClaim", "EC2NodeClass",
	"AWSNodeTemplate", "PodDisruptionBudget", "PersistentVolumeClaim",
	"PersistentVolume", "StorageClass", "DaemonSet",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arena arena = { 0 };
	struct decoder d = { .arena = &arena };
	struct proto_object obj;
	json_t *j;

	if (size < 1)
		return 0;
	j = json_loadb((const char *)data + 1, size - 1, 0, NULL);
	if (j) {
		decode_object(&d, kinds[data[0] % ARRAY_SIZE(kinds)], j, &obj);
		json_decref(j);
	}
	arena_done(&arena);
	return 0;
}
