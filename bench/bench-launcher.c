/*
 * ./quickstart bench launcher, the client side: sends kanna-launcher one
 * launch plan of COUNT NodeClaims (one pod each, one candidate type offered
 * on-demand in every zone) on its "plans" socket, as a scheduler would, and
 * listens on "results" until every NodeClaim is reported bound. Prints
 * key-value lines: wall time from send to the last "bound", and the p50 /
 * p99 of per-NodeClaim send → bound.
 *   bench-launcher --runtime-dir D --count N --nodepool P --type T
 *                  --zones a,b,c --pod-prefix default/bench- [--timeout S]
 *                  [--requirement KEY=VALUE]...
 * Each NodeClaim asks karpenter.sh/nodepool In [P] and KEY In [VALUE] for
 * each --requirement (the NodePool's labels), as the solver's plans do: the
 * launcher admits no plan whose requirements leave out the NodePool's.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "state/endpoints.h"
#include "common/log.h"
#include "state/msg.h"
#include "common/sock.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runtime-dir", required_argument, NULL, 'r' }, { "count", required_argument, NULL, 'n' },
		{ "nodepool", required_argument, NULL, 'p' }, { "type", required_argument, NULL, 't' },
		{ "zones", required_argument, NULL, 'z' }, { "pod-prefix", required_argument, NULL, 'P' },
		{ "timeout", required_argument, NULL, 'T' }, { "requirement", required_argument, NULL, 'R' },
		{ 0 },
	};
	const char *dir = NULL, *pool = "bench", *type = "m5.large", *prefix = "default/bench-";
	char *zones_arg = strdup("us-west-2a,us-west-2b,us-west-2c"), *zones[8], *save = NULL;
	unsigned count = 100, n_zones = 0, timeout = 60, bound = 0;
	struct proto_offering offs[8];
	/* karpenter.sh/nodepool first, then --requirement KEY=VALUE. */
	struct proto_requirement reqs[9];
	char *req_values[9];
	unsigned n_reqs = 1;
	struct proto_msg m;
	struct msg_io io;
	struct sock_ctx *ctx;
	struct sock *push, *sub;
	double t0, *lat;
	char **names, **pods;
	int c, r;

	log_setup("bench-launcher", LOG_FORMAT_TEXT, LOG_LEVEL_WARN);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		switch (c) {
		case 'r': dir = optarg; break;
		case 'n': count = (unsigned)atoi(optarg); break;
		case 'p': pool = optarg; break;
		case 't': type = optarg; break;
		case 'z': free(zones_arg); zones_arg = strdup(optarg); break;
		case 'P': prefix = optarg; break;
		case 'T': timeout = (unsigned)atoi(optarg); break;
		case 'R': {
			char *eq = strchr(optarg, '=');
			if (!eq || n_reqs == 9)
				return 2;
			*eq = '\0';
			req_values[n_reqs] = eq + 1;
			reqs[n_reqs] = (struct proto_requirement){ .key = optarg, .op = PROTO_OP_IN,
								   .values = &req_values[n_reqs],
								   .n_values = 1 };
			n_reqs++;
			break;
		}
		default: return 2;
		}
	}
	if (!dir || count == 0 || !zones_arg) {
		fprintf(stderr, "usage: bench-launcher --runtime-dir DIR [--count N] ...\n");
		return 2;
	}
	req_values[0] = (char *)pool;
	reqs[0] = (struct proto_requirement){ .key = "karpenter.sh/nodepool", .op = PROTO_OP_IN,
					      .values = &req_values[0], .n_values = 1 };
	for (char *z = strtok_r(zones_arg, ",", &save); z && n_zones < 8; z = strtok_r(NULL, ",", &save))
		zones[n_zones++] = z;
	for (unsigned i = 0; i < n_zones; i++)
		offs[i] = (struct proto_offering){ .zone = zones[i], .capacity_type = PROTO_CAPACITY_ON_DEMAND,
						   .price = 0.096, .available = true };
	names = calloc(count, sizeof(*names));
	pods = calloc(count, sizeof(*pods));
	lat = calloc(count, sizeof(*lat));
	proto_msg_init(&m, PROTO_MSG_LAUNCH_PLAN, PROTO_PROCESS_SCHEDULER, 0, 0);
	m.body.launch_plan.plan_id = "bench-plan";
	m.body.launch_plan.nodeclaims = calloc(count, sizeof(struct proto_planned_nodeclaim));
	m.body.launch_plan.n_nodeclaims = count;
	if (!names || !pods || !lat || !m.body.launch_plan.nodeclaims)
		return 1;
	for (unsigned i = 0; i < count; i++) {
		struct proto_planned_nodeclaim *p = &m.body.launch_plan.nodeclaims[i];
		struct proto_candidate *cand = calloc(1, sizeof(*cand));

		if (asprintf(&names[i], "%s-%05u", pool, i) < 0 || asprintf(&pods[i], "%s%u", prefix, i) < 0 ||
		    !cand)
			return 1;
		*cand = (struct proto_candidate){ .name = (char *)type, .offerings = offs, .n_offerings = n_zones };
		*p = (struct proto_planned_nodeclaim){ .id = names[i], .nodepool = (char *)pool,
						       .requirements = reqs, .n_requirements = n_reqs,
						       .instance_types = cand, .n_instance_types = 1,
						       .pods = &pods[i], .n_pods = 1 };
	}
	/* It stands in for a scheduler: the launcher takes plans from no one else. */
	if (msg_io_init(&io, PROTO_PROCESS_SCHEDULER, 0) < 0 || sock_ctx_new(&ctx, NULL, "bench", dir) < 0 ||
	    sock_new(&push, ctx, ZMQ_PUSH, ENDPOINT_PLANS) < 0 || sock_connect(push, ENDPOINT_PLANS) < 0 ||
	    msg_send_hello(&io, push, 0) < 0 ||
	    sock_new(&sub, ctx, ZMQ_SUB, ENDPOINT_RESULTS) < 0 || sock_subscribe(sub, "", 0) < 0 ||
	    sock_connect(sub, ENDPOINT_RESULTS) < 0)
		return 1;
	usleep(300 * 1000); /* let the subscription reach the publisher */
	t0 = now_ms();
	r = msg_send(&io, push, &m, 0);
	if (r < 0) {
		fprintf(stderr, "bench-launcher: send failed: %s\n", io.last_error.text);
		return 1;
	}
	while (bound < count && now_ms() - t0 < timeout * 1000.0) {
		const struct proto_msg *res;
		struct sock_msg msg;

		if (sock_recv(sub, &msg, ZMQ_DONTWAIT) < 0) {
			usleep(200);
			continue;
		}
		if (msg_decode(&io, &msg, &res) >= 0 && res->env.type == PROTO_MSG_LAUNCH_RESULT &&
		    res->body.launch_result.outcome == PROTO_LAUNCH_BOUND)
			for (unsigned i = 0; i < count; i++)
				if (!lat[i] && !strcmp(names[i], res->body.launch_result.nodeclaim)) {
					lat[i] = now_ms() - t0;
					bound++;
				}
		sock_msg_close(&msg);
	}
	printf("nodeclaims %u\nbound %u\n", count, bound);
	if (bound == count) {
		qsort(lat, count, sizeof(*lat), cmp_double);
		printf("all_bound_ms %.1f\nbound_p50_ms %.1f\nbound_p99_ms %.1f\n", lat[count - 1],
		       lat[count / 2], lat[(count * 99 + 99) / 100 - 1]);
	}
	sock_free(push);
	sock_free(sub);
	sock_ctx_free(ctx);
	return bound == count ? 0 : 1;
}
