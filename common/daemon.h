/*
 * The life of every kanna daemon, written once: configuration (already read
 * by config_handle_command_line()) → event loop → metrics registry (the
 * daemon registers its own) → /metrics, /healthz and /readyz → Kubernetes
 * client and Event recorder → ZeroMQ context → the daemon's own start-up →
 * work, at once or once its replica holds the Lease (a standby reports
 * itself started to systemd with STATUS= saying what it waits for, and is
 * healthy but not ready) → SIGHUP reloads the
 * configuration all or nothing → SIGTERM runs the shutdown hook and the
 * loop ends → teardown in reverse order. A daemon's main is its hooks.
 *
 * Every start-up failure is logged here with what failed and its real
 * error; a hook that fails logs its own and returns a negative errno.
 */
#ifndef KANNA_COMMON_DAEMON_H
#define KANNA_COMMON_DAEMON_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"
#include "common/health.h"
#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/kube-settings.h"
#include "common/lease.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "common/sock.h"

/* One Lease for the replica group: a replica is the daemons sharing a
 * runtime directory (one pod, one host), and they lead together. */
#define DAEMON_LEASE_NAME "kanna-leader-election"

/* What the skeleton owns; valid from the hook that first sees it until
 * teardown returns. */
struct daemon {
	struct loop *loop;
	struct metrics_registry *metrics;
	struct health_server *health;
	struct kube_client *kube;
	struct kube_events *events;
	struct sock_ctx *socks;
	struct lease *lease; /* NULL without leader election */
	char host[256];      /* gethostname(), for Events and the default Lease identity */
};

struct daemon_hooks {
	/* Registers the daemon's metrics in d->metrics (loop and registry exist). */
	int (*register_metrics)(struct daemon *d, void *userdata);
	/* Start-up a standby does too, once the client and sockets exist
	 * (may be NULL). */
	int (*prepare)(struct daemon *d, void *userdata);
	/* The work: at once without leader election, else once the Lease is
	 * held. A failure ends the daemon (exit 1). */
	int (*start_work)(struct daemon *d, void *userdata);
	/* After SIGHUP put a new configuration in place (may be NULL). */
	void (*reloaded)(struct daemon *d, void *userdata);
	/* SIGTERM or SIGINT, before the loop ends (may be NULL). */
	void (*shutdown)(struct daemon *d, void *userdata);
	/* Frees what the daemon made, before the skeleton's parts go (may be
	 * NULL); called whatever point start-up reached. */
	void (*teardown)(struct daemon *d, void *userdata);
};

struct daemon_options {
	const char *program;    /* "kanna-launcher": user agent, loop name */
	const char *process;    /* "launcher", "scheduler-0": sockets, logs */
	/* Work only while the replica holds DAEMON_LEASE_NAME (watcher,
	 * launcher, reaper; not the scheduler's shards), unless leader-elect
	 * is false. */
	bool leader_election;
	const char *events_component; /* the Events' source.component */
	/* The daemon's configuration, replaced in place by a reload; common
	 * and kube point into it. */
	const struct config_schema *schema;
	void *cfg;
	size_t cfg_size;
	const struct kube_settings *kube;
	int argc;
	char **argv; /* a reload reads the same command line */
};

/* Runs the daemon to its end; returns its exit status. */
int daemon_run(const struct daemon_options *o, const struct daemon_hooks *h, void *userdata);

#endif
