/*
 * Shared by the kanna-sim AWS tests: a sim on an ephemeral loopback port
 * with fixed test credentials, libcurl requests signed with common/sigv4.h,
 * the admin endpoint, and tiny XML probes for assertions (the tests check
 * wire text; the client-side parser is exercised in test_sim_aws_client).
 */
#ifndef KANNA_TESTS_TEST_SIM_AWS_HTTP_H
#define KANNA_TESTS_TEST_SIM_AWS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "sim/aws.h"

#define TEST_AKID "AKIASIMTEST000000001"
#define TEST_SECRET "simTestSecretKeyDoNotUseAnywhere0000000"

extern struct sim_aws *aws;
extern char host[64];

struct reply {
	long status;
	char *body;
	size_t len;
};

struct call {
	const char *service;    /* credential scope service */
	const char *target;     /* X-Amz-Target for JSON protocols */
	const char *akid;       /* default TEST_AKID */
	const char *secret;     /* default TEST_SECRET */
	time_t when;            /* default now */
	const char *send_body;  /* body actually sent, if not the signed one */
	bool unsigned_request;
	const char *region;     /* credential scope region, default us-west-2 */
};

/* Fresh sim (cluster "demo", seed 42) with these state delays. */
void start(unsigned pending_ms, unsigned shutdown_ms);
void setup(void);    /* start(0, 0) */
void teardown(void);
struct reply call_full(const struct call *c, const char *path, const char *body);
/* Signed EC2 POST with "Version=2016-11-15&" + params. */
struct reply ec2(const char *params);
/* Signed EC2 GET with the parameters in the query string. */
struct reply get_ec2(const char *query);
/* Unsigned admin call; json is the POST body (NULL for GET). */
struct reply admin(const char *method, const char *path, const char *json);
const char *xml_nth(const char *body, const char *tag, int n, char *out, size_t len);
int xml_count(const char *body, const char *needle);
void create_template(const char *name);
const char *subnet(char zone, char *out, size_t len);
/* A two-override on-demand fleet: m5.large in zone a, m5.2xlarge in zone b. */
struct reply fleet(const char *extra);
/* fleet() tagged pool=<pool>; the launched instance id in id. */
void launch_tagged(const char *pool, char *id, size_t len);
/* Query-protocol ReceiveMessage on the "demo" queue; the XML body. */
char *receive_all(void);

#endif
