/*
 * Who may reach a daemon's sockets (issue 19, "daemons trust no peer"): the
 * runtime directory check at start, ipc sockets bound with an explicit mode
 * and group, and a ZAP handler (ZeroMQ RFC 27, libzmq's
 * inproc://zeromq.zap.01) that admits or refuses each connecting peer by
 * the uid/gid the kernel gives for it (SO_PEERCRED: libzmq passes an ipc
 * peer's address to ZAP as ":uid:gid:pid"). ZAP runs once per connection,
 * in the daemon's loop, never per message. Called by common/sock.c (the
 * guard) and common/daemon.c (configuration); it must never admit a peer it
 * cannot identify.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/ratelimit.h"
#include "common/sock-guard.h"

/* Where libzmq sends ZAP requests (RFC 27), in each context. */
#define SOCK_ZAP_ENDPOINT "inproc://zeromq.zap.01"
/* A request: version, id, domain, address, routing id, mechanism, credentials. */
#define SOCK_ZAP_MAX_FRAMES 8
#define SOCK_ZAP_DOMAIN_MAX 64
#define SOCK_ZAP_ROLES_MAX 128
/* Refusals logged: a peer retrying every 100 ms must not flood the log. */
#define SOCK_REFUSAL_LOG_PER_SEC 1.0
#define SOCK_REFUSAL_LOG_BURST 10
/* Groups looked at per user when checking tap-group membership. */
#define SOCK_MAX_GROUPS 1024
/* getpwnam_r()/getgrnam_r() buffer. */
#define SOCK_NSS_BUFFER 16384

static const char *const sock_roles[] = { "watcher", "scheduler", "launcher", "reaper" };

struct sock_policy {
	char domain[SOCK_ZAP_DOMAIN_MAX];
	char roles[SOCK_ZAP_ROLES_MAX]; /* ",scheduler,reaper," */
};

struct sock_guard {
	struct loop *loop;
	void *zap;
	uid_t self;
	gid_t socket_group, tap_group;
	struct sock_identity *ids;
	size_t n_ids;
	struct metrics_counter *refused;
	uint64_t n_refused;
	struct ratelimit refusal_log;
	unsigned refusals_unlogged;
	struct sock_policy *policies;
	size_t n_policies;
};

/* ---- configuration ----------------------------------------------------------- */

int sock_refused_metric_new(struct metrics_registry *reg, struct metrics_counter **ret)
{
	return metrics_counter_new(reg, ret, "kanna_socket_peers_refused_total",
				   "Connections refused on a bound socket, by socket and reason "
				   "(identity: a uid/gid not allowed there; no_credentials; "
				   "unknown_socket).",
				   "socket", "reason", NULL);
}

static bool parse_id(const char *s, unsigned long *ret)
{
	char *end;

	if (!*s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*ret = strtoul(s, &end, 10);
	return errno == 0 && !*end && *ret < UINT32_MAX;
}

int sock_lookup_group(const char *name, gid_t *ret)
{
	char buf[SOCK_NSS_BUFFER];
	struct group gr, *found = NULL;
	unsigned long id;

	if (parse_id(name, &id)) {
		*ret = (gid_t)id;
		return 0;
	}
	if (getgrnam_r(name, &gr, buf, sizeof(buf), &found) != 0 || !found)
		return -ENOENT;
	*ret = found->gr_gid;
	return 0;
}

static int lookup_user(const char *name, uid_t *ret)
{
	char buf[SOCK_NSS_BUFFER];
	struct passwd pw, *found = NULL;
	unsigned long id;

	if (parse_id(name, &id)) {
		*ret = (uid_t)id;
		return 0;
	}
	if (getpwnam_r(name, &pw, buf, sizeof(buf), &found) != 0 || !found)
		return -ENOENT;
	*ret = found->pw_uid;
	return 0;
}

static bool known_role(const char *role)
{
	for (size_t i = 0; i < ARRAY_SIZE(sock_roles); i++)
		if (streq(role, sock_roles[i]))
			return true;
	return false;
}

static int parse_identity(const char *entry, struct sock_identity *id, char *err, size_t errlen)
{
	char user[256], *group;
	const char *eq = strchr(entry, '=');
	size_t len = eq ? (size_t)(eq - entry) : 0;

	if (!eq || len == 0 || len >= sizeof(id->role) || strlen(eq + 1) >= sizeof(user)) {
		snprintf(err, errlen, "peer-identities entry '%s': expected ROLE=USER[:GROUP]", entry);
		return -EINVAL;
	}
	memcpy(id->role, entry, len);
	id->role[len] = '\0';
	if (!known_role(id->role)) {
		snprintf(err, errlen, "peer-identities entry '%s': unknown role '%s' (watcher, "
			 "scheduler, launcher or reaper)", entry, id->role);
		return -EINVAL;
	}
	snprintf(user, sizeof(user), "%s", eq + 1);
	group = strchr(user, ':');
	if (group)
		*group++ = '\0';
	if (!*user || lookup_user(user, &id->uid) < 0) {
		snprintf(err, errlen, "peer-identities entry '%s': no such user '%s'", entry, user);
		return -ENOENT;
	}
	id->gid = SOCK_NO_GROUP;
	if (group && (!*group || sock_lookup_group(group, &id->gid) < 0)) {
		snprintf(err, errlen, "peer-identities entry '%s': no such group '%s'", entry, group);
		return -ENOENT;
	}
	return 0;
}

int sock_identities_parse(char *const *entries, struct sock_identity **ret, size_t *ret_n,
			  char *err, size_t errlen)
{
	_cleanup_free_ struct sock_identity *ids = NULL;
	size_t n = 0;
	int r;

	while (entries && entries[n])
		n++;
	if (n && !(ids = calloc(n, sizeof(*ids))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if ((r = parse_identity(entries[i], &ids[i], err, errlen)) < 0)
			return r;
	*ret = TAKE_PTR(ids);
	*ret_n = n;
	return 0;
}

int sock_runtime_dir_check(const char *dir, const struct sock_access *a, char *err, size_t errlen)
{
	gid_t socket_group = a->socket_group;
	uid_t self = geteuid();
	struct stat st;
	bool owner_ok, group_ok;

	if (stat(dir, &st) < 0) {
		snprintf(err, errlen, "runtime directory %s: %s", dir, strerror(errno));
		return -errno;
	}
	owner_ok = st.st_uid == self || st.st_uid == 0;
	for (size_t i = 0; i < a->n_identities && !owner_ok; i++)
		owner_ok = st.st_uid == a->identities[i].uid;
	group_ok = !(st.st_mode & S_IWGRP) ||
		   (socket_group != SOCK_NO_GROUP && st.st_gid == socket_group);
	if (owner_ok && group_ok && !(st.st_mode & S_IWOTH))
		return 0;
	snprintf(err, errlen,
		 "runtime directory %s has mode %04o, owner uid %u gid %u: expected it owned by "
		 "uid %u (this daemon), root or a daemon of peer-identities, writable by no "
		 "other user, and by its group only "
		 "when that is the socket-group (%s); anyone who can write there can replace "
		 "the sockets", dir, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
		 (unsigned)st.st_gid, (unsigned)self,
		 socket_group == SOCK_NO_GROUP ? "none is set" : "set");
	return -EPERM;
}

/* ---- policies ------------------------------------------------------------------- */

static struct sock_policy *policy_find(struct sock_guard *g, const char *domain, size_t len)
{
	for (size_t i = 0; i < g->n_policies; i++)
		if (strlen(g->policies[i].domain) == len && !memcmp(g->policies[i].domain, domain, len))
			return &g->policies[i];
	return NULL;
}

int sock_guard_admit(struct sock_guard *g, const char *domain, const char *roles)
{
	struct sock_policy *p;

	if (strlen(domain) >= SOCK_ZAP_DOMAIN_MAX || strlen(roles) + 2 >= SOCK_ZAP_ROLES_MAX)
		return -ENAMETOOLONG;
	p = policy_find(g, domain, strlen(domain));
	if (!p) {
		p = reallocarray(g->policies, g->n_policies + 1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		g->policies = p;
		p = &g->policies[g->n_policies++];
		snprintf(p->domain, sizeof(p->domain), "%s", domain);
	}
	snprintf(p->roles, sizeof(p->roles), ",%s,", roles);
	return 0;
}

static bool policy_has_role(const struct sock_policy *p, const char *role)
{
	char token[sizeof(((struct sock_identity *)0)->role) + 2];

	snprintf(token, sizeof(token), ",%s,", role);
	return strstr(p->roles, token) != NULL;
}

/* Primary or supplementary member of gid (the user's groups by NSS). */
static bool user_in_group(uid_t uid, gid_t peer_gid, gid_t gid)
{
	char buf[SOCK_NSS_BUFFER];
	struct passwd pw, *found = NULL;
	gid_t groups[SOCK_MAX_GROUPS];
	int n = SOCK_MAX_GROUPS;

	if (peer_gid == gid)
		return true;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || !found)
		return false;
	if (getgrouplist(found->pw_name, found->pw_gid, groups, &n) < 0)
		n = SOCK_MAX_GROUPS; /* the first SOCK_MAX_GROUPS are filled in */
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

static bool peer_admitted(const struct sock_guard *g, const struct sock_policy *p, uid_t uid,
			  gid_t gid)
{
	if (uid == 0 || uid == g->self)
		return true;
	for (size_t i = 0; i < g->n_ids; i++) {
		const struct sock_identity *id = &g->ids[i];

		if (id->uid == uid && (id->gid == SOCK_NO_GROUP || id->gid == gid) &&
		    policy_has_role(p, id->role))
			return true;
	}
	return g->tap_group != SOCK_NO_GROUP && policy_has_role(p, SOCK_ROLE_OPERATORS) &&
	       user_in_group(uid, gid, g->tap_group);
}

/* ---- the ZAP handler ------------------------------------------------------------ */

/* ":uid:gid:pid" at the end of an ipc peer's address. */
static bool parse_peer(const char *addr, size_t len, unsigned long cred[3])
{
	char text[128], *field[3], *p;

	if (len >= sizeof(text))
		return false;
	memcpy(text, addr, len);
	text[len] = '\0';
	for (int i = 2; i >= 0; i--) {
		p = strrchr(text, ':');
		if (!p)
			return false;
		*p = '\0';
		field[i] = p + 1;
	}
	for (int i = 0; i < 3; i++)
		if (!parse_id(field[i], &cred[i]))
			return false;
	return true;
}

static void refused(struct sock_guard *g, const char *domain, const char *reason,
		    const char *peer)
{
	uint64_t now = clock_monotonic_usec();

	g->n_refused++;
	if (g->refused)
		(void)metrics_counter_add(g->refused, 1, domain, reason, NULL);
	if (!ratelimit_try(&g->refusal_log, now)) {
		g->refusals_unlogged++;
		return;
	}
	log_error("refusing a connection on socket %s from %s: %s%s", domain, peer,
		  streq(reason, "identity") ? "not an identity allowed on this socket (see "
					      "peer-identities)" :
		  streq(reason, "no_credentials") ? "the kernel gave no credentials for it" :
						    "no policy for this socket",
		  g->refusals_unlogged ? " (and more since the last such line)" : "");
	g->refusals_unlogged = 0;
}

/* Decides one request (frames after REP's envelope); returns the status code. */
static const char *zap_decide(struct sock_guard *g, zmq_msg_t *f, size_t n)
{
	char domain[SOCK_ZAP_DOMAIN_MAX], peer[160];
	const struct sock_policy *p;
	unsigned long cred[3];
	size_t dlen;

	if (n < 6 || zmq_msg_size(&f[0]) != 3 || memcmp(zmq_msg_data(&f[0]), "1.0", 3))
		return "500";
	dlen = MIN(zmq_msg_size(&f[2]), sizeof(domain) - 1);
	memcpy(domain, zmq_msg_data(&f[2]), dlen);
	domain[dlen] = '\0';
	if (!parse_peer(zmq_msg_data(&f[3]), zmq_msg_size(&f[3]), cred)) {
		snprintf(peer, sizeof(peer), "an unidentified peer (%.*s)",
			 (int)MIN(zmq_msg_size(&f[3]), 64), (const char *)zmq_msg_data(&f[3]));
		refused(g, domain, "no_credentials", peer);
		return "400";
	}
	snprintf(peer, sizeof(peer), "uid %lu gid %lu pid %lu", cred[0], cred[1], cred[2]);
	p = policy_find(g, domain, dlen);
	if (!p) {
		refused(g, domain, "unknown_socket", peer);
		return "400";
	}
	if (!peer_admitted(g, p, (uid_t)cred[0], (gid_t)cred[1])) {
		refused(g, domain, "identity", peer);
		return "400";
	}
	log_debug("admitted %s on socket %s", peer, domain);
	return "200";
}

/* Reads one request, keeping its first SOCK_ZAP_MAX_FRAMES frames in f. */
static int zap_read(void *zsock, zmq_msg_t *f, size_t *ret_n)
{
	bool more = true;
	size_t n = 0;

	while (more) {
		zmq_msg_t extra, *m = n < SOCK_ZAP_MAX_FRAMES ? &f[n] : &extra;

		zmq_msg_init(m);
		if (zmq_msg_recv(m, zsock, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
			int r = -errno;

			zmq_msg_close(m);
			*ret_n = n;
			return r;
		}
		more = zmq_msg_more(m);
		if (m == &extra)
			zmq_msg_close(m);
		else
			n++;
	}
	*ret_n = n;
	return 0;
}

/* Reply: version, request id, status code, status text, user id, metadata. */
static int zap_reply(void *zsock, zmq_msg_t *request_id, const char *status)
{
	bool ok = streq(status, "200");

	if (zmq_send(zsock, "1.0", 3, ZMQ_SNDMORE) < 0 ||
	    zmq_send(zsock, request_id ? zmq_msg_data(request_id) : "",
		     request_id ? zmq_msg_size(request_id) : 0, ZMQ_SNDMORE) < 0 ||
	    zmq_send(zsock, status, 3, ZMQ_SNDMORE) < 0 ||
	    zmq_send(zsock, ok ? "OK" : "refused", ok ? 2 : 7, ZMQ_SNDMORE) < 0 ||
	    zmq_send(zsock, "", 0, ZMQ_SNDMORE) < 0 || zmq_send(zsock, "", 0, 0) < 0)
		return -errno;
	return 0;
}

static int on_zap_request(void *zsock, void *userdata)
{
	struct sock_guard *g = userdata;
	zmq_msg_t f[SOCK_ZAP_MAX_FRAMES];
	size_t n = 0;
	int r;

	r = zap_read(zsock, f, &n);
	if (r >= 0) {
		r = zap_reply(zsock, n > 1 ? &f[1] : NULL, zap_decide(g, f, n));
		if (r < 0)
			log_error_errno(r, "Failed to answer a ZAP request: %m");
	}
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&f[i]);
	return r == -EAGAIN ? 0 : r;
}

int sock_guard_new(struct sock_guard **ret, void *zmq, struct loop *loop,
		   const struct sock_access *access)
{
	_cleanup_(sock_guard_freep) struct sock_guard *g = NULL;
	int linger = 0, r;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->self = geteuid();
	g->socket_group = access ? access->socket_group : SOCK_NO_GROUP;
	g->tap_group = access ? access->tap_group : SOCK_NO_GROUP;
	g->refused = access ? access->refused : NULL;
	if (access && access->n_identities) {
		g->ids = calloc(access->n_identities, sizeof(*g->ids));
		if (!g->ids)
			return -ENOMEM;
		memcpy(g->ids, access->identities, access->n_identities * sizeof(*g->ids));
		g->n_ids = access->n_identities;
	}
	ratelimit_init(&g->refusal_log, SOCK_REFUSAL_LOG_PER_SEC, SOCK_REFUSAL_LOG_BURST,
		       clock_monotonic_usec());
	if (!loop || !access) {
		*ret = TAKE_PTR(g);
		return 0;
	}
	g->zap = zmq_socket(zmq, ZMQ_REP);
	if (!g->zap)
		return -errno;
	if (zmq_setsockopt(g->zap, ZMQ_LINGER, &linger, sizeof(linger)) < 0 ||
	    zmq_bind(g->zap, SOCK_ZAP_ENDPOINT) < 0)
		return -errno;
	r = loop_add_zsock(loop, g->zap, on_zap_request, g);
	if (r < 0)
		return r;
	g->loop = loop;
	*ret = TAKE_PTR(g);
	return 0;
}

struct sock_guard *sock_guard_free(struct sock_guard *g)
{
	if (!g)
		return NULL;
	if (g->zap) {
		if (g->loop)
			(void)loop_remove_zsock(g->loop, g->zap);
		zmq_close(g->zap);
	}
	free(g->ids);
	free(g->policies);
	free(g);
	return NULL;
}

uint64_t sock_guard_refused(const struct sock_guard *g)
{
	return g ? g->n_refused : 0;
}

/* ---- binding with a mode ----------------------------------------------------------- */

int sock_guard_bind(struct sock_guard *g, void *zsock, const char *domain, const char *url,
		    bool tap)
{
	const char *path = url + strlen("ipc://");
	struct stat st;
	gid_t group;
	mode_t mode, old;
	int r;

	if (strncmp(url, "ipc://", strlen("ipc://")) != 0 || *path == '@')
		return zmq_bind(zsock, url) < 0 ? -errno : 0;
	if (g->zap) {
		if (!policy_find(g, domain, strlen(domain)) && (r = sock_guard_admit(g, domain, "")) < 0)
			return r;
		if (zmq_setsockopt(zsock, ZMQ_ZAP_DOMAIN, domain, strlen(domain)) < 0)
			return -errno;
	}
	group = tap ? g->tap_group : g->socket_group;
	mode = group == SOCK_NO_GROUP ? SOCK_MODE_OWNER : SOCK_MODE_GROUP;
	/* bind(2) happens in this thread, inside zmq_bind(): the umask makes
	 * the file with no more than `mode` from its first instant (other
	 * threads' files made meanwhile are only the stricter for it). */
	old = umask(~mode & 0777);
	r = zmq_bind(zsock, url) < 0 ? -errno : 0;
	umask(old);
	if (r < 0)
		return r;
	/* Not chown() when the file has the group already (made in a setgid
	 * runtime directory of that group, as tmpfiles.d/kanna.conf makes
	 * /run/kanna): the hardened units' SystemCallFilter refuses @chown. */
	if (group != SOCK_NO_GROUP && (stat(path, &st) < 0 || st.st_gid != group) &&
	    chown(path, (uid_t)-1, group) < 0)
		return log_error_errno(errno, "Failed to give socket %s the group %u: %m", path,
				       (unsigned)group);
	if (chmod(path, mode) < 0)
		return log_error_errno(errno, "Failed to set the mode of socket %s: %m", path);
	return 0;
}
