/*
 * libFuzzer target for kanna-sim's AWS request dispatch: arbitrary bytes
 * become one request (byte 0 picks the service; then, for the query
 * protocols, "name=value" lines as the post processor would deliver them,
 * for the JSON protocols an action line and a JSON body; 4 feeds the
 * admin fault JSON, 5 is SQS's query protocol, 6 Pricing) and run through aws_dispatch() like the server
 * does after authentication. Nothing here may crash, leak or hang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/aws-internal.h"

/* The cloud's state grows with every CreateFleet; start over this often. */
#define FUZZ_RUNS_PER_SIM 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sim_aws *sim;
static unsigned runs;

static struct sim_aws *sim_get(void)
{
	struct sim_aws_config cfg;

	if (sim && ++runs % FUZZ_RUNS_PER_SIM == 0)
		sim = sim_aws_free(sim);
	if (sim)
		return sim;
	sim_aws_config_init(&cfg);
	cfg.catalog_path = KANNA_SRCDIR "/data/instance-types.tsv";
	cfg.pending_ms = 0;
	cfg.shutdown_ms = 0;
	cfg.interruption_ms = 0;
	if (sim_aws_new(&sim, &cfg) < 0)
		abort();
	return sim;
}

static void run_query(struct sim_aws *aws, enum aws_service service, char *text)
{
	struct aws_params params = { 0 };
	struct aws_request req = { .service = service, .region = aws->region, .params = &params,
				   .endpoint = "http://127.0.0.1:1", .path = "/111122223333/kanna" };
	struct aws_response resp = { 0 };
	unsigned latency;

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		*eq = '\0';
		if (aws_params_add(&params, line, eq + 1, strlen(eq + 1), 0) < 0)
			break;
	}
	req.action = aws_params_get(&params, "Action");
	snprintf(req.request_id, sizeof(req.request_id), "fuzz");
	if (aws_faults_apply(aws, &req, &resp, &latency) == 0)
		aws_dispatch(aws, &req, &resp);
	aws_response_clear(&resp);
	aws_params_clear(&params);
}

static void run_json(struct sim_aws *aws, enum aws_service service, char *text)
{
	char *nl = strchr(text, '\n');
	struct aws_request req = { .service = service, .region = aws->region,
				   .endpoint = "http://127.0.0.1:1", .json_protocol = true };
	struct aws_response resp = { 0 };

	if (!nl)
		return;
	*nl = '\0';
	req.action = text;
	req.json = json_loads(nl + 1, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(req.json)) {
		json_decref(req.json);
		return;
	}
	snprintf(req.request_id, sizeof(req.request_id), "fuzz");
	aws_dispatch(aws, &req, &resp);
	aws_response_clear(&resp);
	json_decref(req.json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_aws *aws = sim_get();
	struct aws_response resp = { 0 };
	char *text;
	unsigned kind;

	if (size < 1)
		return 0;
	kind = data[0] % 8;
	text = strndup((const char *)data + 1, size - 1);
	if (!text)
		return 0;
	switch (kind) {
	case 0:
		run_query(aws, AWS_SERVICE_EC2, text);
		break;
	case 1:
		run_query(aws, AWS_SERVICE_STS, text);
		break;
	case 2:
		run_json(aws, AWS_SERVICE_SSM, text);
		break;
	case 3:
		run_json(aws, AWS_SERVICE_SQS, text);
		break;
	case 5:
		run_query(aws, AWS_SERVICE_SQS, text);
		break;
	case 6:
		run_json(aws, AWS_SERVICE_PRICING, text);
		break;
	case 7:
		run_query(aws, AWS_SERVICE_IAM, text);
		break;
	default:
		if (aws_admin_handle(aws, "/_sim/faults", "POST", text, strlen(text), &resp) >= 0)
			aws_response_clear(&resp);
		break;
	}
	free(text);
	return 0;
}
