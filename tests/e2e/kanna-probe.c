/*
 * Test probe for end-to-end scripts: looks at the daemons from outside the
 * way another kanna process would.
 *   kanna-probe replica --runtime-dir D [--timeout S]
 *       joins state replication, waits until synced, prints one JSON line
 *       per object ({"key":…, "object":{…}}) sorted by key, exits 0.
 *   kanna-probe pending --runtime-dir D [--shard N] [--timeout S]
 *       receives one pending_pods message and prints its pods' keys.
 *   kanna-probe plan --runtime-dir D [--timeout S] [--count N]
 *       binds the launcher's "plans" socket, receives N launch plans (1) and
 *       prints a line per plan and per NodeClaim: nodepool, pods,
 *       candidates, cheapest.
 *   kanna-probe notify --socket PATH [--timeout S]
 *       binds a datagram socket at PATH (give it to a daemon as
 *       NOTIFY_SOCKET), prints each sd_notify message on one line, exits 0
 *       after the first READY=1 (1 on timeout).
 *   kanna-probe instances < aws-status.json
 *       reads kanna-sim's AWS /_sim/status from stdin and prints a line per
 *       instance: id, state, type, zone, capacity type, $/hour, its NodeClaim tag.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/replica.h"
#include "common/endpoints.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int probe_replica(struct sock_ctx *ctx, struct loop *loop, unsigned timeout)
{
	struct replica *r;
	const struct state_entry *e;
	size_t it = 0, n = 0;
	char **lines;
	int k;

	k = replica_new(&r, ctx, loop, PROTO_PROCESS_TOOL, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC, NULL);
	if (k < 0)
		return log_error_errno(k, "Failed to join state replication: %m");
	for (unsigned i = 0; i < timeout * 100 && !replica_synced(r); i++)
		sd_event_run(loop_event(loop), 10000);
	if (!replica_synced(r)) {
		log_error("Failed to sync a replica within %us", timeout);
		replica_free(r);
		return -ETIMEDOUT;
	}
	lines = calloc(replica_store(r)->objects.n + 1, sizeof(char *));
	while (lines && (e = state_store_next(replica_store(r), &it))) {
		struct proto_msg m = { .env.type = PROTO_MSG_SNAPSHOT_ITEM };
		char key[STATE_KEY_MAX];
		json_t *j, *line;

		m.body.snapshot_item.object = e->obj;
		state_key(&e->obj, key, sizeof(key));
		j = proto_to_json(&m);
		line = json_pack("{s:s, s:O}", "key", key, "object",
				 json_object_get(json_object_get(j, "body"), "object"));
		lines[n++] = json_dumps(line, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(line);
		json_decref(j);
	}
	qsort(lines, n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n; i++) {
		puts(lines[i]);
		free(lines[i]);
	}
	free(lines);
	replica_free(r);
	return 0;
}

static int probe_pending(struct sock_ctx *ctx, unsigned shard, unsigned timeout)
{
	struct proto_decoder *d = proto_decoder_new();
	const struct proto_msg *m;
	struct proto_error err;
	struct sock *s;
	struct sock_msg msg;
	char name[64];
	int k, ms = (int)timeout * 1000;
	size_t size;
	const void *body;

	snprintf(name, sizeof(name), ENDPOINT_PENDING_PREFIX ".%u", shard);
	if ((k = sock_new(&s, ctx, ZMQ_PULL, name)) < 0 || (k = sock_connect(s, name)) < 0)
		return log_error_errno(k, "Failed to connect to %s: %m", name);
	zmq_setsockopt(sock_zsock(s), ZMQ_RCVTIMEO, &ms, sizeof(ms));
	k = sock_recv(s, &msg, 0);
	if (k < 0) {
		sock_free(s); /* the context cannot close with a socket open */
		proto_decoder_free(d);
		return log_error_errno(k, "Failed to receive pending pods on %s: %m", name);
	}
	body = sock_msg_body(&msg, &size);
	k = proto_decode(d, body, size, &m, &err);
	if (k < 0 || m->env.type != PROTO_MSG_PENDING_PODS) {
		log_error("Failed to decode pending pods: %s", k < 0 ? err.text : "wrong type");
		return -EBADMSG;
	}
	for (uint32_t i = 0; i < m->body.pending_pods.n_pods; i++)
		printf("%s/%s\n", m->body.pending_pods.pods[i].ns, m->body.pending_pods.pods[i].name);
	sock_msg_close(&msg);
	sock_free(s);
	proto_decoder_free(d);
	return 0;
}

static int probe_plan(struct sock_ctx *ctx, unsigned timeout, unsigned count)
{
	struct proto_decoder *d = proto_decoder_new();
	const struct proto_msg *m;
	struct proto_error err;
	struct sock *s;
	struct sock_msg msg;
	int k, ms = (int)timeout * 1000;
	size_t size;
	const void *body;

	if ((k = sock_new(&s, ctx, ZMQ_PULL, ENDPOINT_PLANS)) < 0 ||
	    (k = sock_bind(s, ENDPOINT_PLANS)) < 0)
		return log_error_errno(k, "Failed to bind %s: %m", ENDPOINT_PLANS);
	zmq_setsockopt(sock_zsock(s), ZMQ_RCVTIMEO, &ms, sizeof(ms));
	for (unsigned n = 0; n < count; n++) {
		k = sock_recv(s, &msg, 0);
		if (k < 0) {
			sock_free(s); /* the context cannot close with a socket open */
			proto_decoder_free(d);
			return log_error_errno(k, "Failed to receive a launch plan: %m");
		}
		body = sock_msg_body(&msg, &size);
		k = proto_decode(d, body, size, &m, &err);
		if (k < 0 || m->env.type != PROTO_MSG_LAUNCH_PLAN) {
			log_error("Failed to decode a launch plan: %s", k < 0 ? err.text : "wrong type");
			sock_msg_close(&msg);
			sock_free(s);
			proto_decoder_free(d);
			return -EBADMSG;
		}
		printf("plan %s shard=%u\n", m->body.launch_plan.plan_id, m->body.launch_plan.shard);
		for (uint32_t i = 0; i < m->body.launch_plan.n_nodeclaims; i++) {
			const struct proto_planned_nodeclaim *nc = &m->body.launch_plan.nodeclaims[i];
			printf("nodeclaim %s nodepool=%s nodeclass=%s pods=%u candidates=%u cheapest=%s\n",
			       nc->id, nc->nodepool, nc->nodeclass ? nc->nodeclass : "-", nc->n_pods,
			       nc->n_instance_types,
			       nc->n_instance_types ? nc->instance_types[0].name : "-");
			for (uint32_t p = 0; p < nc->n_pods; p++)
				printf("  pod %s\n", nc->pods[p]);
		}
		fflush(stdout);
		sock_msg_close(&msg);
	}
	sock_free(s);
	proto_decoder_free(d);
	return 0;
}

static int probe_instances(void)
{
	json_error_t err;
	json_t *status = json_loadf(stdin, 0, &err), *inst;
	size_t i;

	if (!status) {
		fprintf(stderr, "kanna-probe: stdin is not JSON: %s\n", err.text);
		return -EINVAL;
	}
	json_array_foreach(json_object_get(status, "instances"), i, inst) {
		json_t *tags = json_object_get(inst, "tags");
		const char *nc = json_string_value(json_object_get(tags, "karpenter.sh/nodeclaim"));

		printf("instance %s state=%s type=%s zone=%s capacity=%s price=%.4f nodeclaim=%s\n",
		       json_string_value(json_object_get(inst, "instanceId")),
		       json_string_value(json_object_get(inst, "state")),
		       json_string_value(json_object_get(inst, "instanceType")),
		       json_string_value(json_object_get(inst, "zone")),
		       json_string_value(json_object_get(inst, "capacityType")),
		       json_number_value(json_object_get(inst, "pricePerHour")), nc ? nc : "-");
	}
	json_decref(status);
	return 0;
}

static int probe_notify(const char *path, unsigned timeout)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	time_t deadline = time(NULL) + timeout;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = -ETIMEDOUT;

	if (fd < 0 || strlen(path) >= sizeof(sun.sun_path))
		return -EINVAL;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		perror("kanna-probe: bind");
		close(fd);
		return -errno;
	}
	while (time(NULL) < deadline) {
		struct pollfd p = { fd, POLLIN, 0 };
		char buf[4096];
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (char *c = buf; *c; c++)
			if (*c == '\n')
				*c = ' ';
		printf("%s\n", buf);
		fflush(stdout);
		if (strstr(buf, "READY=1")) {
			r = 0;
			break;
		}
	}
	close(fd);
	unlink(path);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "shard", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "count", required_argument, NULL, 'n' },
		{ "socket", required_argument, NULL, 'S' },
		{ 0 },
	};
	const char *dir = NULL, *socket_path = NULL;
	unsigned shard = 0, timeout = 30, count = 1;
	struct loop *loop;
	struct sock_ctx *ctx;
	int c, r;

	log_setup("kanna-probe", LOG_FORMAT_TEXT, LOG_LEVEL_WARN);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		if (c == 'r')
			dir = optarg;
		else if (c == 's')
			shard = (unsigned)atoi(optarg);
		else if (c == 't')
			timeout = (unsigned)atoi(optarg);
		else if (c == 'n')
			count = (unsigned)atoi(optarg);
		else if (c == 'S')
			socket_path = optarg;
		else
			return 2;
	}
	if (optind < argc && strcmp(argv[optind], "instances") == 0)
		return probe_instances() < 0 ? 1 : 0;
	if (optind < argc && strcmp(argv[optind], "notify") == 0 && socket_path)
		return probe_notify(socket_path, timeout) < 0 ? 1 : 0;
	if (optind >= argc || !dir) {
		fprintf(stderr, "usage: kanna-probe replica|pending|plan|instances|notify --runtime-dir DIR | --socket PATH [--shard N] [--timeout S]\n");
		return 2;
	}
	if (loop_new(&loop, "kanna-probe") < 0 || sock_ctx_new(&ctx, NULL, "probe", dir) < 0)
		return 1;
	if (strcmp(argv[optind], "replica") == 0) {
		sock_ctx_free(ctx);
		if (sock_ctx_new(&ctx, loop, "probe", dir) < 0)
			return 1;
		r = probe_replica(ctx, loop, timeout);
	} else if (strcmp(argv[optind], "pending") == 0) {
		r = probe_pending(ctx, shard, timeout);
	} else if (strcmp(argv[optind], "plan") == 0) {
		r = probe_plan(ctx, timeout, count);
	} else {
		fprintf(stderr, "kanna-probe: unknown command %s\n", argv[optind]);
		r = -EINVAL;
	}
	sock_ctx_free(ctx);
	loop_free(loop);
	return r < 0 ? 1 : 0;
}
