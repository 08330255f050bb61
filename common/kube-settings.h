/*
 * The configuration keys of every daemon that talks to the Kubernetes API
 * (where it is, how fast to call it, leader election), declared once and
 * embedded in each daemon's table, like CONFIG_COMMON_OPTIONS. Shared: they
 * may stand at the top level of kanna.yaml and apply to every daemon.
 */
#ifndef KANNA_COMMON_KUBE_SETTINGS_H
#define KANNA_COMMON_KUBE_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"

struct kube_settings {
	char *kubeconfig;
	char *context;
	double qps;
	uint64_t burst;
	bool allow_insecure_http;
	bool leader_elect;
	char *leader_namespace;
	char *leader_identity; /* NULL: the hostname */
	uint64_t lease_duration_usec, lease_renew_deadline_usec, lease_retry_period_usec;
};

#define KUBE_SETTINGS_OPTIONS(cfg_type, member)                                              \
	{ .name = "kubeconfig", .type = CONFIG_STRING,                                       \
	  .offset = offsetof(cfg_type, member.kubeconfig), .flags = CONFIG_SHARED,           \
	  .default_env = "KUBECONFIG", .metavar = "FILE",                                    \
	  .help = "kubeconfig file; without one, in-cluster configuration or "              \
		  "~/.kube/config." },                                                       \
	{ .name = "context", .type = CONFIG_STRING,                                          \
	  .offset = offsetof(cfg_type, member.context), .flags = CONFIG_SHARED,              \
	  .metavar = "NAME", .help = "kubeconfig context (default: its current-context)." }, \
	{ .name = "kube-client-qps", .type = CONFIG_DOUBLE,                                  \
	  .offset = offsetof(cfg_type, member.qps), .flags = CONFIG_SHARED,                  \
	  .default_value = "200", .min_double = 1, .max_double = 100000,                     \
	  .env_alias = "KUBE_CLIENT_QPS", .help = "Kubernetes API requests per second." },   \
	{ .name = "kube-client-burst", .type = CONFIG_UINT,                                  \
	  .offset = offsetof(cfg_type, member.burst), .flags = CONFIG_SHARED,                \
	  .default_value = "300", .min = 1, .max = 100000, .env_alias = "KUBE_CLIENT_BURST", \
	  .help = "Kubernetes API request burst." },                                         \
	{ .name = "kube-client-allow-insecure-http", .type = CONFIG_BOOL,                    \
	  .offset = offsetof(cfg_type, member.allow_insecure_http), .flags = CONFIG_SHARED,  \
	  .default_value = "false",                                                          \
	  .help = "Accept a kubeconfig server that is plain http:// (a local test API "     \
		  "server); no token or client certificate is ever sent to it." },           \
	{ .name = "leader-elect", .type = CONFIG_BOOL,                                       \
	  .offset = offsetof(cfg_type, member.leader_elect), .default_value = "true",        \
	  .help = "Work only while this replica holds the Lease kanna-leader-election "      \
		  "(watcher, launcher, reaper; the scheduler does not elect), so a standby " \
		  "replica can take over; disable for local runs." },                       \
	{ .name = "leader-election-namespace", .type = CONFIG_STRING,                        \
	  .offset = offsetof(cfg_type, member.leader_namespace), .flags = CONFIG_SHARED,     \
	  .default_value = "kube-system", .metavar = "NS",                                   \
	  .help = "Namespace of the leader election Lease." },                               \
	{ .name = "leader-election-identity", .type = CONFIG_STRING,                         \
	  .offset = offsetof(cfg_type, member.leader_identity), .flags = CONFIG_SHARED,      \
	  .default_value = NULL, .metavar = "ID",                                            \
	  .help = "The replica's holderIdentity, the same for its watcher, launcher and "    \
		  "reaper (default: the hostname, in a pod the pod's name)." },             \
	{ .name = "lease-duration", .type = CONFIG_DURATION,                                 \
	  .offset = offsetof(cfg_type, member.lease_duration_usec), .flags = CONFIG_SHARED,  \
	  .default_value = "15s", .min = 3000000, .max = 300000000,                          \
	  .help = "How long a silent leader keeps its Lease before a standby takes over." }, \
	{ .name = "lease-renew-deadline", .type = CONFIG_DURATION,                           \
	  .offset = offsetof(cfg_type, member.lease_renew_deadline_usec),                    \
	  .flags = CONFIG_SHARED, .default_value = "10s", .min = 1000000, .max = 300000000,  \
	  .help = "How long a leader goes on without renewing its Lease before it stops "    \
		  "(exits); less than lease-duration." },                                    \
	{ .name = "lease-retry-period", .type = CONFIG_DURATION,                             \
	  .offset = offsetof(cfg_type, member.lease_retry_period_usec),                      \
	  .flags = CONFIG_SHARED, .default_value = "2s", .min = 200000, .max = 60000000,     \
	  .help = "How often the Lease is read and renewed or tried; lease-renew-deadline "  \
		  "must exceed it by a fifth." }

#endif
