/*
 * kanna-reaper --what-if FILE.yaml [--json]: the command line. The input
 * goes through the cluster dump loader (dump/dump.h), as kanna-scheduler
 * --simulate's does (the same format, the same file:line:column errors,
 * exit 2); nothing here touches a daemon or the network. main.c calls
 * what_if_main() when --what-if is given.
 * Cleanup style: cleanup attributes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/read-file.h"
#include "dump/dump.h"
#include "reaper/what-if.h"

/* Inputs larger than this are refused, as --simulate does. */
#define WHAT_IF_MAX_INPUT (1024UL << 20)

static void usage(FILE *out)
{
	fputs("Usage: kanna-reaper --what-if FILE.yaml [--json] [--catalog FILE.tsv] [--now SECONDS]\n"
	      "                   [--feature-gates SpotToSpotConsolidation=true,ConsolidationSplit=true]\n"
	      "\n"
	      "Show offline what kanna-reaper would disrupt in a cluster dump now: emptiness,\n"
	      "expiration, drift and consolidation, each method's nodes removed or replaced with\n"
	      "their cost before and after ($/h), and the nodes each method left with why.\n"
	      "\n"
	      "  --what-if FILE   the input of kanna-scheduler --simulate (NodePools, NodeClaims,\n"
	      "                   Nodes, Pods, PodDisruptionBudgets, ...); \"-\" reads standard input\n"
	      "  --json           print {\"decisions\",\"blocked\",\"cost\"} as JSON\n"
	      "  --catalog FILE   instance-type catalog (default: the shipped instance-types.tsv)\n"
	      "  --now SECONDS    the time to judge at, in Unix seconds (default: now)\n"
	      "  --feature-gates  SpotToSpotConsolidation=true lets spot replace spot;\n"
	      "                   ConsolidationSplit=true lets one node be replaced by several\n"
	      "  --help           show this help\n"
	      "\n"
	      "Exit status: 0 when decided, 2 on invalid input (with file:line:column), 1 on other\n"
	      "failures.\n",
	      out);
}

static void state_store_donep(struct state_store *s)
{
	state_store_done(s);
}

static void wi_report_donep(struct wi_report *r)
{
	wi_report_done(r);
}

int what_if_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "what-if", required_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "catalog", required_argument, NULL, 'c' },
		{ "now", required_argument, NULL, 'n' },
		{ "feature-gates", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct dump_options so = { .pdbs = true };
	const char *file = NULL;
	bool json = false, spot_to_spot = false, split = false;
	char err[1024], *end;
	_cleanup_free_ char *data = NULL;
	_cleanup_(cluster_freep) struct cluster *c = NULL;
	_cleanup_(state_store_donep) struct state_store store;
	_cleanup_(wi_report_donep) struct wi_report rep = { 0 };
	size_t size = 0;
	int o, r;

	state_store_init(&store);
	log_setup("kanna-reaper", LOG_FORMAT_TEXT, LOG_LEVEL_INFO);
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
		switch (o) {
		case 'w':
			file = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			so.catalog_path = optarg;
			break;
		case 'n':
			errno = 0;
			so.now_ms = strtoll(optarg, &end, 10) * 1000;
			if (errno || end == optarg || *end || so.now_ms <= 0) {
				fprintf(stderr, "kanna-reaper: --now needs Unix seconds, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 'g':
			spot_to_spot = strstr(optarg, "SpotToSpotConsolidation=true") != NULL;
			split = strstr(optarg, "ConsolidationSplit=true") != NULL;
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
		fprintf(stderr, "\nkanna-reaper: --what-if needs one FILE.yaml (\"-\" for standard input).\n");
		return 2;
	}
	r = read_file(streq(file, "-") ? "/dev/stdin" : file, WHAT_IF_MAX_INPUT, &data, &size);
	if (r < 0) {
		log_error_errno(r, "Failed to read %s: %m", file);
		return r == -EFBIG ? 2 : 1;
	}
	r = dump_load_store(file, data, size, &so, &store, &c, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return r == -EINVAL ? 2 : 1;
	}
	r = wi_compute(c, &store, so.now_ms ?: clock_realtime_ms(), spot_to_spot, split, &rep);
	if (r < 0) {
		log_error_errno(r, "Failed to decide what the reaper would do: %m");
		return 1;
	}
	if (json) {
		if ((r = wi_print_json(stdout, &rep)) < 0) {
			log_error_errno(r, "Failed to print JSON: %m");
			return 1;
		}
	} else {
		wi_print_table(stdout, &rep);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
