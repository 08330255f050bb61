/*
 * kanna-scheduler --simulate FILE.yaml [--json]: "what would kanna launch
 * for this cluster?", answered offline. Wires the loader, the solver and
 * the output together; holds no state of its own. main.c calls it when
 * --simulate is given; otherwise the daemon runs.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "dump/dump.h"
#include "scheduler/simulate.h"

/* Inputs larger than this are refused (a 50k-pod dump is ~150 MB). */
#define SIMULATE_MAX_INPUT (1024L << 20)

static void usage(FILE *out)
{
	fputs("Usage: kanna-scheduler --simulate FILE.yaml [--json] [--catalog FILE.tsv]\n"
	      "\n"
	      "Decide offline which NodeClaims kanna would launch for a cluster dump\n"
	      "(kubectl get nodepools,ec2nodeclasses,nodes,pods,deployments -A -o yaml).\n"
	      "\n"
	      "  --simulate FILE  YAML stream of NodePools (v1, v1beta1, v1alpha5 Provisioners),\n"
	      "                   Nodes, NodeClaims, Pods, Deployments/ReplicaSets/StatefulSets,\n"
	      "                   DaemonSets, PVCs, PVs, StorageClasses, Namespaces and\n"
	      "                   kanna.dev/v1alpha1 InstanceTypes; \"-\" reads standard input\n"
	      "  --json           print {\"nodeClaims\",\"existingNodes\",\"unschedulable\"} as JSON\n"
	      "  --catalog FILE   instance-type catalog (default: the shipped instance-types.tsv)\n"
	      "  --help           show this help\n"
	      "\n"
	      "Exit status: 0 when solved (pods that cannot be placed are listed), 2 on invalid\n"
	      "input (with file:line:column), 1 on other failures.\n"
	      "\n"
	      "Without --simulate, kanna-scheduler runs as the daemon: see\n"
	      "kanna-scheduler --help without --simulate.\n",
	      out);
}

static int read_input(const char *path, char **ret, size_t *size)
{
	FILE *f = streq(path, "-") ? stdin : fopen(path, "re");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return -errno;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > SIMULATE_MAX_INPUT) {
				free(buf);
				if (f != stdin)
					fclose(f);
				return -EFBIG;
			}
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				if (f != stdin)
					fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		size_t k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	int err = ferror(f);
	if (f != stdin)
		fclose(f);
	if (err) {
		free(buf);
		return -EIO;
	}
	*ret = buf;
	*size = n;
	return 0;
}

int simulate_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "simulate", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "catalog", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct dump_options so = { 0 };
	const char *file = NULL;
	bool json = false;
	char err[1024];
	_cleanup_free_ char *data = NULL;
	_cleanup_(cluster_freep) struct cluster *c = NULL;
	_cleanup_(sched_result_freep) struct sched_result *res = NULL;
	size_t size = 0;
	int o, r;

	log_setup("kanna-scheduler", LOG_FORMAT_TEXT, LOG_LEVEL_INFO);
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
		switch (o) {
		case 's':
			file = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			so.catalog_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	if (!file || optind < argc) {
		usage(stderr);
		fprintf(stderr, "\nkanna-scheduler: --simulate needs one FILE.yaml (\"-\" for standard input).\n");
		return 2;
	}
	r = read_input(file, &data, &size);
	if (r < 0) {
		log_error_errno(r, "Failed to read %s: %m", file);
		return r == -EFBIG ? 2 : 1;
	}
	r = dump_load(file, data, size, &so, &c, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return r == -EINVAL ? 2 : 1;
	}
	r = sched_solve(c, &res);
	if (r < 0) {
		log_error_errno(r, "Failed to solve: %m");
		return 1;
	}
	if (json) {
		r = simulate_print_json(stdout, c, res);
		if (r < 0) {
			log_error_errno(r, "Failed to print JSON: %m");
			return 1;
		}
	} else
		simulate_print_table(stdout, c, res);
	return fflush(stdout) == 0 ? 0 : 1;
}
