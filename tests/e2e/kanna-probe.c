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
 *   kanna-probe send-plan --runtime-dir D --nodepool NP --types T1,T2 [--zones Z1,Z2]
 *                         [--require KEY=OP=V1,V2]... [--timeout S]
 *       stands in for a scheduler (hello as one) and sends the launcher one
 *       launch plan of one NodeClaim, "NP-forged-PID", with these requirements
 *       and candidates, each offered on-demand in each zone (us-west-2a):
 *       what a process that may write to the plans socket could forge.
 *   kanna-probe notify --socket PATH [--timeout S]
 *       binds a datagram socket at PATH (give it to a daemon as
 *       NOTIFY_SOCKET), prints each sd_notify message on one line, exits 0
 *       after the first READY=1 (1 on timeout).
 *   kanna-probe instances < aws-status.json
 *       reads kanna-sim's AWS /_sim/status from stdin and prints a line per
 *       instance: id, state, type, zone, capacity type, $/hour, its NodeClaim tag.
 *   kanna-probe compare --runtime-dir D --api FILE [--timeout S]
 *       joins replication, waits until synced and compares the replica field
 *       by field with FILE (`kubectl get pods,nodes,nodepools.v1.karpenter.sh,
 *       pvc,namespaces -A -o json`); prints the differences, exits 1 if any.
 *   kanna-probe follow --runtime-dir D --api FILE [--timeout S]
 *       one long-lived replica: stays subscribed (across watcher restarts)
 *       and compares with FILE whenever the replica or FILE (replaced by
 *       rename) changed, until they are equal; then prints what it lived
 *       through (snapshots, gaps, duplicate deltas, objects whose
 *       resourceVersion went back) and exits 0; 1 at the timeout.
 *   kanna-probe churn [--count N] [--prefix P]
 *       creates, updates and deletes N pods and their nodes, NodePools and
 *       PVCs through the API ($KUBECONFIG), see probe.h.
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

#include <sys/stat.h>
#include <time.h>

#include "state/endpoints.h"
#include "state/msg.h"
#include "common/log.h"
#include "proto/schema.h"
#include "state/replica.h"
#include "tests/e2e/probe.h"

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

static uint64_t now_msec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int wait_synced(struct replica *r, struct loop *loop, unsigned timeout)
{
	for (uint64_t end = now_msec() + timeout * 1000ULL; !replica_synced(r) && now_msec() < end;)
		sd_event_run(loop_event(loop), 10000);
	if (!replica_synced(r))
		return log_error_errno(-ETIMEDOUT, "Failed to sync a replica within %us", timeout);
	return 0;
}

static int compare_with(const struct replica *r, const char *api_path, FILE *out)
{
	json_error_t err;
	json_t *api = json_load_file(api_path, 0, &err);
	size_t compared;
	int n;

	if (!api)
		return log_error_errno(-EINVAL, "Failed to read %s: %s", api_path, err.text);
	n = probe_compare(replica_store(r), api, out, &compared);
	json_decref(api);
	if (out && n >= 0)
		fprintf(out, "compared %zu object(s): %d difference(s)\n", compared, n);
	return n;
}

static int probe_compare_once(struct sock_ctx *ctx, struct loop *loop, const char *api,
			      unsigned timeout)
{
	struct replica *r;
	int k;

	k = replica_new(&r, ctx, loop, PROTO_PROCESS_TOOL, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC, NULL);
	if (k < 0)
		return log_error_errno(k, "Failed to join state replication: %m");
	k = wait_synced(r, loop, timeout);
	if (k >= 0)
		k = compare_with(r, api, stdout);
	replica_free(r);
	return k < 0 ? k : k > 0 ? -EDOM : 0;
}

/* What a long-lived replica saw: each object's resourceVersion must only
 * grow (a stale object coming back would be a delta replayed or lost). */
struct follow {
	struct replica *r;
	struct hashmap rv; /* key → (void *)resourceVersion */
	uint64_t changes, regressions;
	bool said_synced;
};

static uint64_t rv_of(const struct proto_object *o)
{
	const char *rv = NULL;

	switch (o->kind) {
#define RV_CASE(c, s) case c: rv = o->s->resource_version; break;
	RV_CASE(PROTO_OBJECT_POD, pod) RV_CASE(PROTO_OBJECT_NODE, node)
	RV_CASE(PROTO_OBJECT_NODEPOOL, nodepool) RV_CASE(PROTO_OBJECT_NODECLAIM, nodeclaim)
	RV_CASE(PROTO_OBJECT_NODECLASS, nodeclass) RV_CASE(PROTO_OBJECT_PDB, pdb)
	RV_CASE(PROTO_OBJECT_PVC, pvc) RV_CASE(PROTO_OBJECT_PV, pv)
	RV_CASE(PROTO_OBJECT_STORAGECLASS, storageclass) RV_CASE(PROTO_OBJECT_DAEMONSET, daemonset)
	RV_CASE(PROTO_OBJECT_NAMESPACE, namespace) RV_CASE(PROTO_OBJECT_NODEOVERLAY, nodeoverlay)
#undef RV_CASE
	}
	return rv ? strtoull(rv, NULL, 10) : 0;
}

static void follow_saw(struct follow *f, const struct proto_object *o)
{
	char key[STATE_KEY_MAX];
	uint64_t rv = rv_of(o), prev;

	if (state_key(o, key, sizeof(key)) < 0)
		return;
	prev = (uintptr_t)hashmap_get(&f->rv, key);
	if (rv < prev) {
		f->regressions++;
		fprintf(stderr, "kanna-probe: %s went back from resourceVersion %" PRIu64 " to %" PRIu64 "\n",
			key, prev, rv);
	}
	if (rv > prev)
		(void)hashmap_put(&f->rv, key, (void *)(uintptr_t)rv, NULL);
}

static void follow_change(enum proto_delta_op op, const struct proto_object *old,
			  const struct proto_object *now, void *userdata)
{
	struct follow *f = userdata;
	char key[STATE_KEY_MAX];

	f->changes++;
	if (op == PROTO_DELTA_DELETE) {
		if (old && state_key(old, key, sizeof(key)) >= 0)
			hashmap_remove(&f->rv, key);
		return;
	}
	follow_saw(f, now);
}

static void follow_synced(uint64_t seq, void *userdata)
{
	struct follow *f = userdata;
	const struct state_entry *e;
	size_t it = 0;

	(void)seq;
	while ((e = state_store_next(replica_store(f->r), &it)))
		follow_saw(f, &e->obj);
	if (!f->said_synced) {
		/* The script waits for this before it disturbs the watcher. */
		printf("synced %zu object(s)\n", replica_store(f->r)->objects.n);
		fflush(stdout);
		f->said_synced = true;
	}
}

static int probe_follow(struct sock_ctx *ctx, struct loop *loop, const char *api,
			unsigned timeout)
{
	struct follow f = { 0 };
	struct replica_handlers h = { follow_change, follow_synced, &f };
	struct replica_stats st;
	uint64_t end = now_msec() + timeout * 1000ULL, seen_seq = 0;
	ino_t seen_ino = 0;
	int k, n = -1;

	k = replica_new(&f.r, ctx, loop, PROTO_PROCESS_TOOL, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC, &h);
	if (k < 0)
		return log_error_errno(k, "Failed to join state replication: %m");
	while (n != 0 && now_msec() < end) {
		struct stat sb;

		sd_event_run(loop_event(loop), 100000);
		if (!replica_synced(f.r) || stat(api, &sb) < 0 ||
		    (sb.st_ino == seen_ino && replica_store(f.r)->seq == seen_seq))
			continue;
		seen_ino = sb.st_ino;
		seen_seq = replica_store(f.r)->seq;
		n = compare_with(f.r, api, NULL);
	}
	if (n != 0 && replica_synced(f.r))
		n = compare_with(f.r, api, stdout);
	replica_get_stats(f.r, &st);
	printf("snapshots=%" PRIu64 " gaps=%" PRIu64 " duplicates=%" PRIu64 " deltas=%" PRIu64
	       " changes=%" PRIu64 " rv_regressions=%" PRIu64 " equal=%s\n", st.snapshots, st.gaps,
	       st.duplicates, st.deltas, f.changes, f.regressions, n == 0 ? "yes" : "no");
	hashmap_done(&f.rv);
	replica_free(f.r);
	return n == 0 ? 0 : -ETIMEDOUT;
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
	do { /* the watcher's hello opens the connection */
		k = sock_recv(s, &msg, 0);
		if (k < 0) {
			sock_free(s); /* the context cannot close with a socket open */
			proto_decoder_free(d);
			return log_error_errno(k, "Failed to receive pending pods on %s: %m", name);
		}
		body = sock_msg_body(&msg, &size);
		k = proto_decode(d, body, size, &m, &err);
		if (k >= 0 && m->env.type == PROTO_MSG_HELLO)
			sock_msg_close(&msg);
	} while (k >= 0 && m->env.type == PROTO_MSG_HELLO);
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
		if (k >= 0 && m->env.type == PROTO_MSG_HELLO) {
			/* each scheduler's hello opens its connection */
			sock_msg_close(&msg);
			n--;
			continue;
		}
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

/* Splits a comma list in place into v (at most max); returns how many. */
static uint32_t split_list(char *s, char **v, uint32_t max)
{
	uint32_t n = 0;

	for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
		v[n++] = tok;
	return n;
}

#define SEND_PLAN_MAX 16
static int probe_send_plan(struct sock_ctx *ctx, unsigned timeout, const char *nodepool, char *types,
			   char *zones, char **requires, uint32_t n_requires)
{
	char *type_v[SEND_PLAN_MAX], *zone_v[SEND_PLAN_MAX], id[256];
	char *values[SEND_PLAN_MAX][SEND_PLAN_MAX];
	struct proto_requirement reqs[SEND_PLAN_MAX];
	struct proto_candidate cands[SEND_PLAN_MAX];
	struct proto_offering offs[SEND_PLAN_MAX];
	uint32_t n_types = split_list(types, type_v, SEND_PLAN_MAX);
	uint32_t n_zones = zones ? split_list(zones, zone_v, SEND_PLAN_MAX) : 0;
	struct proto_planned_nodeclaim claim;
	struct proto_msg m = { .env.type = PROTO_MSG_LAUNCH_PLAN };
	struct msg_io io;
	struct sock *s;
	int k, ms = (int)timeout * 1000;

	if (!n_zones)
		zone_v[n_zones++] = "us-west-2a";
	for (uint32_t z = 0; z < n_zones; z++)
		offs[z] = (struct proto_offering){ .zone = zone_v[z], .capacity_type = PROTO_CAPACITY_ON_DEMAND,
						   .price = 0.01, .available = true };
	for (uint32_t t = 0; t < n_types; t++)
		cands[t] = (struct proto_candidate){ .name = type_v[t], .offerings = offs,
						     .n_offerings = n_zones };
	for (uint32_t i = 0; i < n_requires && i < SEND_PLAN_MAX; i++) {
		char *key = requires[i], *op = strchr(key, '='), *vals;
		enum proto_requirement_op o = PROTO_OP_IN;

		if (!op)
			return log_error_errno(-EINVAL, "Failed to read --require %s: not KEY=OP[=V1,V2]", key);
		*op++ = '\0';
		vals = strchr(op, '=');
		if (vals)
			*vals++ = '\0';
		for (o = 0; o <= PROTO_OP_LT && strcmp(proto_enum_name(&proto_enum_desc_requirement_op, o), op); o++)
			;
		if (o > PROTO_OP_LT)
			return log_error_errno(-EINVAL, "Failed to read --require: no operator %s", op);
		reqs[i] = (struct proto_requirement){
			.key = key, .op = o, .values = values[i],
			.n_values = vals ? split_list(vals, values[i], SEND_PLAN_MAX) : 0,
		};
	}
	snprintf(id, sizeof(id), "%s-forged-%ld", nodepool, (long)getpid());
	claim = (struct proto_planned_nodeclaim){ .id = id, .nodepool = (char *)nodepool,
						  .requirements = reqs, .n_requirements = n_requires,
						  .instance_types = cands, .n_instance_types = n_types };
	m.body.launch_plan = (struct proto_launch_plan){ .plan_id = "plan-forged", .nodeclaims = &claim,
							 .n_nodeclaims = 1 };
	if ((k = msg_io_init(&io, PROTO_PROCESS_SCHEDULER, 0)) < 0)
		return k;
	if ((k = sock_new(&s, ctx, ZMQ_PUSH, ENDPOINT_PLANS)) < 0 ||
	    (k = sock_connect(s, ENDPOINT_PLANS)) < 0) {
		msg_io_done(&io);
		return log_error_errno(k, "Failed to connect to %s: %m", ENDPOINT_PLANS);
	}
	zmq_setsockopt(sock_zsock(s), ZMQ_SNDTIMEO, &ms, sizeof(ms));
	if ((k = msg_send_hello(&io, s, 0)) >= 0)
		k = msg_send(&io, s, &m, 0);
	if (k < 0)
		log_error_errno(k, "Failed to send the plan: %m");
	else
		printf("sent plan plan-forged: nodeclaim %s of nodepool %s, %u candidate(s)\n", id, nodepool,
		       n_types);
	sock_free(s); /* lingers until the plan is out */
	msg_io_done(&io);
	return k < 0 ? k : 0;
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
		{ "api", required_argument, NULL, 'a' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "socket", required_argument, NULL, 'S' },
		{ "nodepool", required_argument, NULL, 'N' },
		{ "types", required_argument, NULL, 'T' },
		{ "zones", required_argument, NULL, 'Z' },
		{ "require", required_argument, NULL, 'R' },
		{ 0 },
	};
	const char *dir = NULL, *api = NULL, *prefix = "churn", *socket_path = NULL, *nodepool = NULL;
	char *types = NULL, *zones = NULL, *requires[SEND_PLAN_MAX];
	uint32_t n_requires = 0;
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
		else if (c == 'a')
			api = optarg;
		else if (c == 'p')
			prefix = optarg;
		else if (c == 'S')
			socket_path = optarg;
		else if (c == 'N')
			nodepool = optarg;
		else if (c == 'T')
			types = optarg;
		else if (c == 'Z')
			zones = optarg;
		else if (c == 'R' && n_requires < SEND_PLAN_MAX)
			requires[n_requires++] = optarg;
		else
			return 2;
	}
	if (optind < argc && strcmp(argv[optind], "instances") == 0)
		return probe_instances() < 0 ? 1 : 0;
	if (optind < argc && strcmp(argv[optind], "churn") == 0) {
		if (loop_new(&loop, "kanna-probe") < 0)
			return 1;
		r = probe_churn(loop, count > 1 ? count : 1000, prefix);
		loop_free(loop);
		return r < 0 ? 1 : 0;
	}
	if (optind < argc && strcmp(argv[optind], "notify") == 0 && socket_path)
		return probe_notify(socket_path, timeout) < 0 ? 1 : 0;
	if (optind >= argc || !dir) {
		fprintf(stderr, "usage: kanna-probe replica|pending|plan|send-plan|compare|follow|instances|churn "
				"--runtime-dir DIR [--shard N] [--timeout S] [--api FILE] [--count N]\n"
				"       kanna-probe notify --socket PATH [--timeout S]\n");
		return 2;
	}
	if (loop_new(&loop, "kanna-probe") < 0 || sock_ctx_new(&ctx, NULL, "probe", dir) < 0)
		return 1;
	if (strcmp(argv[optind], "replica") == 0 || strcmp(argv[optind], "compare") == 0 ||
	    strcmp(argv[optind], "follow") == 0) {
		sock_ctx_free(ctx);
		if (sock_ctx_new(&ctx, loop, "probe", dir) < 0)
			return 1;
		if (strcmp(argv[optind], "replica") == 0)
			r = probe_replica(ctx, loop, timeout);
		else if (!api)
			r = log_error_errno(-EINVAL, "Failed to compare: no --api FILE");
		else if (strcmp(argv[optind], "compare") == 0)
			r = probe_compare_once(ctx, loop, api, timeout);
		else
			r = probe_follow(ctx, loop, api, timeout);
	} else if (strcmp(argv[optind], "pending") == 0) {
		r = probe_pending(ctx, shard, timeout);
	} else if (strcmp(argv[optind], "plan") == 0) {
		r = probe_plan(ctx, timeout, count);
	} else if (strcmp(argv[optind], "send-plan") == 0 && nodepool && types) {
		r = probe_send_plan(ctx, timeout, nodepool, types, zones, requires, n_requires);
	} else {
		fprintf(stderr, "kanna-probe: unknown command %s\n", argv[optind]);
		r = -EINVAL;
	}
	sock_ctx_free(ctx);
	loop_free(loop);
	return r < 0 ? 1 : 0;
}
