/*
 * libFuzzer target for the kanna-scheduler --simulate loader: any bytes
 * must either load (and then solve and print) or fail with a message, never
 * crash or leak. Uses Karpenter's fake catalog so that no file is read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dump/dump.h"
#include "scheduler/simulate.h"

/* Keep each run fast: big inputs and huge expansions teach nothing new. */
#define FUZZ_MAX_INPUT (64 << 10)
#define FUZZ_MAX_PODS 2000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dump_options opts = { .fake_types = 16 };
	struct cluster *c = NULL;
	struct sched_result *res = NULL;
	char err[1024];

	if (size > FUZZ_MAX_INPUT)
		return 0;
	if (dump_load("fuzz.yaml", (const char *)data, size, &opts, &c, err, sizeof(err)) < 0) {
		if (!err[0])
			abort(); /* every failure must say why */
		return 0;
	}
	if (c->n_pods <= FUZZ_MAX_PODS && sched_solve(c, &res) == 0) {
		FILE *out = fopen("/dev/null", "w");
		if (out) {
			simulate_print_table(out, c, res);
			(void)simulate_print_json(out, c, res);
			fclose(out);
		}
		sched_result_free(res);
	}
	cluster_free(c);
	return 0;
}
