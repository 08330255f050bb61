/*
 * libFuzzer target for kanna-reaper --what-if: any bytes must either load
 * through the cluster dump loader (dump/, with PodDisruptionBudgets) and then be
 * decided over and printed, or fail with a message — never crash or leak.
 * Karpenter's fake catalog, so that no file is read; a fixed clock.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dump/dump.h"
#include "reaper/what-if.h"

/* Keep each run fast: big inputs and huge expansions teach nothing new. */
#define FUZZ_MAX_INPUT (64 << 10)
#define FUZZ_MAX_PODS 500
/* 2026-01-01T00:00:00Z */
#define FUZZ_NOW_MS 1767225600000LL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dump_options opts = { .fake_types = 16, .pdbs = true, .now_ms = FUZZ_NOW_MS };
	struct state_store store;
	struct cluster *c = NULL;
	struct wi_report rep;
	char err[1024];

	if (size > FUZZ_MAX_INPUT)
		return 0;
	state_store_init(&store);
	if (dump_load_store("fuzz.yaml", (const char *)data, size, &opts, &store, &c, err,
			    sizeof(err)) < 0) {
		if (!err[0])
			abort(); /* every failure must say why */
		state_store_done(&store);
		return 0;
	}
	if (c->n_pods <= FUZZ_MAX_PODS && wi_compute(c, &store, FUZZ_NOW_MS, true, size & 1, &rep) == 0) {
		FILE *out = fopen("/dev/null", "w");
		if (out) {
			wi_print_table(out, &rep);
			(void)wi_print_json(out, &rep);
			fclose(out);
		}
		wi_report_done(&rep);
	}
	cluster_free(c);
	state_store_done(&store);
	return 0;
}
