/*
 * kanna-probe's churn (see probe.h): thousands of creates, updates and
 * deletes of pods, nodes, NodePools and PVCs through the API, many in
 * flight, so that a watcher sees bursts of every event type across kinds.
 * Pods are bound to the churned nodes (no scheduler touches them) and the
 * nodes have no instance (no kubelet touches them), so the cluster is
 * still once the churn is over.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kube-client.h"
#include "common/log.h"
#include "tests/e2e/probe.h"

/* Requests in flight: enough to keep kanna-sim's threads busy. */
#define CHURN_IN_FLIGHT 64
/* Client-side rate: far above what a test cluster takes, so it never waits. */
#define CHURN_QPS 100000.0

struct churn_req {
	const char *method;
	char *path, *body;
};

struct churn {
	struct kube_client *kube;
	struct churn_req *reqs;
	size_t n, cap, next, done, in_flight;
	unsigned failed;
};

static int add(struct churn *c, const char *method, char *path, char *body)
{
	if (!path || (!body && !streq(method, "DELETE")))
		return -ENOMEM;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		struct churn_req *n = realloc(c->reqs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->reqs = n;
		c->cap = cap;
	}
	c->reqs[c->n++] = (struct churn_req){ method, path, body };
	return 0;
}

static char *fmt(const char *f, ...) _printf_(1, 2);

static char *fmt(const char *f, ...)
{
	char *s;
	va_list ap;
	int r;

	va_start(ap, f);
	r = vasprintf(&s, f, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

static void start_next(struct churn *c);

static void on_done(struct kube_client *k, const struct kube_response *resp, void *userdata)
{
	struct churn *c = userdata;
	/* 404: a delete of what the cluster already removed (pods of a deleted node). */
	bool ok = resp->status / 100 == 2 || resp->status == 404;

	(void)k;
	if (!ok && c->failed++ < 5)
		log_warn("Failed to churn: %ld %s", resp->status, resp->error ? resp->error : "");
	c->in_flight--;
	c->done++;
	start_next(c);
}

static void start_next(struct churn *c)
{
	while (c->next < c->n && c->in_flight < CHURN_IN_FLIGHT) {
		const struct churn_req *q = &c->reqs[c->next++];
		const char *type = streq(q->method, "PATCH") ? "application/merge-patch+json" : NULL;

		c->in_flight++;
		if (kube_request(c->kube, q->method, q->path, type, q->body, on_done, c) < 0) {
			c->in_flight--;
			c->done++;
			c->failed++;
		}
	}
}

/* Sends every request queued so far and waits for the answers. */
static int run(struct churn *c, struct loop *loop)
{
	start_next(c);
	while (c->done < c->n)
		if (sd_event_run(loop_event(loop), 100000) < 0)
			return -EIO;
	for (size_t i = 0; i < c->n; i++) {
		free(c->reqs[i].path);
		free(c->reqs[i].body);
	}
	c->n = c->next = c->done = 0;
	return c->failed ? -EIO : 0;
}

#define NODES_PATH "/api/v1/nodes"
#define PODS_PATH "/api/v1/namespaces/default/pods"
#define NODEPOOLS_PATH "/apis/karpenter.sh/v1/nodepools"
#define PVCS_PATH "/api/v1/namespaces/default/persistentvolumeclaims"

static int creates(struct churn *c, const char *p, unsigned pods, unsigned nodes, unsigned pools,
		   unsigned pvcs)
{
	static const char *const zones[] = { "us-west-2a", "us-west-2b", "us-west-2c" };
	int r = 0;

	for (unsigned i = 0; r >= 0 && i < nodes; i++)
		r = add(c, "POST", fmt(NODES_PATH), fmt(
			"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s-node-%u\","
			"\"labels\":{\"churn\":\"%s\",\"topology.kubernetes.io/zone\":\"%s\"}},"
			"\"spec\":{\"providerID\":\"aws:///%s/i-%s%u\"%s},\"status\":{"
			"\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"110\"},"
			"\"allocatable\":{\"cpu\":\"3920m\",\"memory\":\"15Gi\",\"pods\":\"110\"}}}",
			p, i, p, zones[i % 3], zones[i % 3], p, i,
			i % 4 ? "" : ",\"taints\":[{\"key\":\"dedicated\",\"value\":\"churn\",\"effect\":\"NoSchedule\"}]"));
	for (unsigned i = 0; r >= 0 && i < pods; i++)
		r = add(c, "POST", fmt(PODS_PATH), fmt(
			"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-pod-%u\","
			"\"labels\":{\"app\":\"%s-%u\",\"churn\":\"%s\"}},\"spec\":{\"nodeName\":\"%s-node-%u\","
			"\"priority\":%u,\"containers\":[{\"name\":\"c\",\"image\":\"pause\",\"resources\":{"
			"\"requests\":{\"cpu\":\"%um\",\"memory\":\"%uMi\"}%s}}]}}",
			p, i, p, i % 10, p, p, nodes ? i % nodes : 0, i % 5, 100 + i % 7, 64 + i % 100,
			i % 3 ? "" : ",\"limits\":{\"nvidia.com/gpu\":\"1\"}"));
	for (unsigned i = 0; r >= 0 && i < pools; i++)
		r = add(c, "POST", fmt(NODEPOOLS_PATH), fmt(
			"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":"
			"\"%s-np-%u\"},\"spec\":{\"weight\":%u,\"limits\":{\"cpu\":\"%u\"},\"template\":{"
			"\"metadata\":{\"labels\":{\"team\":\"t%u\"}},\"spec\":{\"nodeClassRef\":{"
			"\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
			"\"requirements\":[{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\","
			"\"values\":[\"spot\",\"on-demand\"]},{\"key\":\"karpenter.k8s.aws/instance-cpu\","
			"\"operator\":\"Gt\",\"values\":[\"%u\"]}]}}}}",
			p, i, 1 + i % 10, 100 * (i + 1), i % 3, i % 8));
	for (unsigned i = 0; r >= 0 && i < pvcs; i++)
		r = add(c, "POST", fmt(PVCS_PATH), fmt(
			"{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":"
			"\"%s-pvc-%u\",\"labels\":{\"churn\":\"%s\"}},\"spec\":{\"accessModes\":"
			"[\"ReadWriteOnce\"],\"storageClassName\":\"churn\",\"resources\":{\"requests\":"
			"{\"storage\":\"%uGi\"}}}}", p, i, p, 1 + i % 50));
	return r;
}

/* A third updated, a fifth (another fifth than those) deleted. */
static int changes(struct churn *c, const char *p, unsigned pods, unsigned nodes, unsigned pools,
		   unsigned pvcs, bool deletes)
{
	int r = 0;

	for (unsigned i = 0; r >= 0 && i < nodes; i++)
		if (deletes ? i % 5 == 1 : i % 3 == 0)
			r = add(c, deletes ? "DELETE" : "PATCH", fmt(NODES_PATH "/%s-node-%u", p, i),
				deletes ? NULL : fmt("{\"spec\":{\"unschedulable\":true}}"));
	for (unsigned i = 0; r >= 0 && i < pods; i++)
		if (deletes ? i % 5 == 1 : i % 3 == 0)
			r = add(c, deletes ? "DELETE" : "PATCH",
				fmt(PODS_PATH "/%s-pod-%u%s", p, i, deletes ? "?gracePeriodSeconds=0" : ""),
				deletes ? NULL : fmt("{\"metadata\":{\"labels\":{\"rev\":\"2\"}}}"));
	for (unsigned i = 0; r >= 0 && i < pools; i++)
		if (deletes ? i % 5 == 1 : i % 3 == 0)
			r = add(c, deletes ? "DELETE" : "PATCH", fmt(NODEPOOLS_PATH "/%s-np-%u", p, i),
				deletes ? NULL : fmt("{\"spec\":{\"weight\":50}}"));
	for (unsigned i = 0; r >= 0 && i < pvcs; i++)
		if (deletes ? i % 5 == 1 : i % 3 == 0)
			r = add(c, deletes ? "DELETE" : "PATCH", fmt(PVCS_PATH "/%s-pvc-%u", p, i),
				deletes ? NULL : fmt("{\"metadata\":{\"labels\":{\"rev\":\"2\"}}}"));
	return r;
}

int probe_churn(struct loop *loop, unsigned count, const char *prefix)
{
	struct kube_client_options opts = { .qps = CHURN_QPS, .burst = CHURN_IN_FLIGHT * 4,
					    .user_agent = "kanna-probe" };
	struct kube_config *cfg = NULL;
	struct churn c = { 0 };
	unsigned nodes = MAX(count / 10, 1u), pools = MAX(count / 50, 1u), pvcs = count / 5;
	char err[512];
	int r;

	r = kube_config_resolve(NULL, NULL, &cfg, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "Failed to load Kubernetes configuration: %s", err);
	r = kube_client_new(&c.kube, loop, cfg, &opts);
	if (r < 0)
		return log_error_errno(r, "Failed to create the Kubernetes client: %m");
	if ((r = creates(&c, prefix, count, nodes, pools, pvcs)) >= 0)
		r = run(&c, loop);
	if (r >= 0 && (r = changes(&c, prefix, count, nodes, pools, pvcs, false)) >= 0)
		r = run(&c, loop);
	if (r >= 0 && (r = changes(&c, prefix, count, nodes, pools, pvcs, true)) >= 0)
		r = run(&c, loop);
	printf("churned %u pods, %u nodes, %u NodePools, %u PVCs: %u request(s) failed\n", count,
	       nodes, pools, pvcs, c.failed);
	for (size_t i = 0; i < c.n; i++) {
		free(c.reqs[i].path);
		free(c.reqs[i].body);
	}
	free(c.reqs);
	kube_client_free(c.kube);
	return r < 0 ? log_error_errno(r, "Failed to churn: %m") : 0;
}
