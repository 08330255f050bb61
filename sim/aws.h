/*
 * kanna-sim's AWS side: one plain-HTTP server on 127.0.0.1 answering the
 * EC2, SSM, STS, SQS and IAM APIs kanna uses (real wire formats, every request
 * SigV4-verified against the sim's test credentials), plus an admin endpoint
 * (POST/GET /_sim/faults, GET /_sim/status). Link libkanna-simaws.a.
 *
 * Plain HTTP is deliberate: AWS SDKs accept http:// endpoint URLs, the port
 * is bound to loopback only, and SigV4 already authenticates every request.
 * The server runs on libmicrohttpd's own threads; every entry point below is
 * thread safe (one mutex guards the simulated cloud).
 *
 * Faults (config faults_json and POST /_sim/faults; a POST replaces the
 * whole set, all or nothing; unknown keys are rejected):
 *   {"insufficientCapacity": [{"instanceType": "m5.large", "zone": "us-west-2a",
 *                              "capacityType": "spot", "errorCode": "UnfulfillableCapacity"}],
 *    "throttleRate": 0.1,        fraction of AWS requests answered RequestLimitExceeded
 *    "throttlePerSecond": 20,    request budget per second beyond which all are throttled
 *    "errorRate": 0.05,          fraction answered 500 InternalError
 *    "lostAnswerRate": 0.05,     fraction of EC2 requests carried out, then
 *                                answered 500 InternalError (the answer lost)
 *    "latencyMs": 200,           added to every AWS answer
 *    "stateChangeEvents": true,  queue "EC2 Instance State-change Notification"s
 *    "neverBoot": ["m5.large"],  instances of these types launched now never join
 *                                (the kubelet-lite leaves their Node NotReady)
 *    "interrupt": ["i-..."]}     spot interruption warnings now
 * Omitted or "*" match any type, zone or capacity type; errorCode defaults to
 * InsufficientInstanceCapacity. POST /_sim/interrupt {"instanceIds": [...],
 * "kind": "spot-interruption" | "rebalance-recommendation"} queues
 * EventBridge events; a warned spot instance terminates interruption_ms
 * later. POST /_sim/sqs/send queues its raw body as one message, as
 * SendMessage would. GET /_sim/status: instances (launch/terminate time,
 * price, cost accrued), total cost, the timeline of launches, terminations and faults,
 * and faultsInjected: what hit since the sim started, by kind
 * (insufficientCapacity per offering refused, throttle, internalError,
 * latency per request delayed).
 */
#ifndef KANNA_SIM_AWS_H
#define KANNA_SIM_AWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sim_aws;

struct sim_aws_config {
	const char *access_key_id;     /* NULL: derived from seed ("AKIA...") */
	const char *secret_access_key; /* NULL: derived from seed */
	const char *region;            /* default region: "us-west-2" */
	const char *cluster_name;      /* discovery tag value: "kanna" */
	const char *catalog_path;      /* NULL: <pkgdatadir or srcdir>/instance-types.tsv */
	uint64_t seed;                 /* ids, default credentials, fault draws (not prices) */
	unsigned pending_ms;           /* pending -> running */
	unsigned shutdown_ms;          /* shutting-down -> terminated */
	unsigned interruption_ms;      /* spot interruption warning -> terminated */
	const char *faults_json;       /* initial faults, same JSON as POST /_sim/faults */
};

/* Fills cfg with the defaults named above. */
void sim_aws_config_init(struct sim_aws_config *cfg);

/* Loads the catalog and builds regions, subnets, images. No socket yet. */
int sim_aws_new(struct sim_aws **ret, const struct sim_aws_config *cfg);
/* Listens on 127.0.0.1:port (0 = ephemeral) and serves until freed. */
int sim_aws_start(struct sim_aws *aws, uint16_t port);
/* Bound port after sim_aws_start(), 0 before. */
uint16_t sim_aws_port(const struct sim_aws *aws);
/* Writes aws.env: shell export lines for AWS_ENDPOINT_URL(_EC2/_SSM/_STS/
 * _SQS/_PRICING/_IAM), AWS_REGION, AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, KANNA_CLUSTER_NAME, KANNA_INTERRUPTION_QUEUE (the
 * queue's name, = cluster name) and KANNA_SIM_INTERRUPTION_QUEUE_URL. */
int sim_aws_write_env(struct sim_aws *aws, FILE *f);
/* Replaces the fault set (JSON as POST /_sim/faults); err gets the reason. */
int sim_aws_set_faults(struct sim_aws *aws, const char *json, char *err, size_t errlen);
/* Stops the server (waits for in-flight requests) and frees everything. */
struct sim_aws *sim_aws_free(struct sim_aws *aws);

/* Read access for the kubelet-lite. All strings live only during the call. */
struct sim_aws_tag {
	const char *key;
	const char *value;
};

struct sim_aws_instance_info {
	const char *id;            /* "i-0123456789abcdef0" */
	const char *instance_type; /* "m5.large" */
	const char *region;        /* "us-west-2" */
	const char *zone;          /* "us-west-2a" */
	const char *zone_id;       /* "usw2-az1" */
	const char *capacity_type; /* "spot" | "on-demand" */
	const char *state;         /* pending|running|shutting-down|terminated */
	const char *image_id;
	const char *subnet_id;
	const char *private_ip;
	const char *private_dns_name; /* "ip-10-0-1-7.us-west-2.compute.internal" */
	const char *arch;             /* "amd64" | "arm64" (Kubernetes names) */
	const char *os;               /* "linux" | "windows": its image's platform */
	const char *windows_build;    /* node.kubernetes.io/windows-build; NULL off Windows */
	uint64_t launch_time_ms;      /* CLOCK_REALTIME, ms */
	bool never_boots;             /* the neverBoot fault held at its launch */
	uint64_t terminate_time_ms;   /* 0 while not terminating */
	double price_per_hour;        /* USD, the price it was launched at */
	unsigned vcpu;
	uint64_t memory_mib;
	unsigned max_pods;
	unsigned gpus;
	unsigned alloc_cpu_millicores;
	uint64_t alloc_memory_mib;
	const struct sim_aws_tag *tags;
	size_t n_tags;
};

/* Calls fn for every instance (oldest first) under the sim's lock; fn must
 * not call back into sim_aws_*. A non-zero return from fn stops the walk
 * and is returned. */
typedef int (*sim_aws_instance_fn)(const struct sim_aws_instance_info *info,
				   void *userdata);
int sim_aws_foreach_instance(struct sim_aws *aws, sim_aws_instance_fn fn,
			     void *userdata);

#endif
