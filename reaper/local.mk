# reaper/: kanna-reaper — termination (taint, drain through the Eviction API,
# TerminateInstances, finalizers), emptiness and expiry with budgets and
# replacements planned with the model's what-if.
# libkanna-reaper.a holds everything but the daemon's wiring (main.c,
# daemon.c, config.c), so the pieces are unit-tested alone.
noinst_LIBRARIES += libkanna-reaper.a
libkanna_reaper_a_SOURCES = reaper/reaper.h reaper/work.c reaper/termination.c reaper/drain.c \
	reaper/instances.c reaper/disruption.c reaper/inventory.c reaper/gc.c \
	reaper/static.h reaper/static.c \
	reaper/pod-events.h reaper/pod-events.c
REAPER_LIBS = libkanna-reaper.a $(MODEL_LIBS) $(STATE_LIBS) -lm
bin_PROGRAMS += reaper/kanna-reaper
reaper_kanna_reaper_SOURCES = reaper/main.c reaper/daemon.h reaper/daemon.c \
	reaper/config.h reaper/config.c
reaper_kanna_reaper_LDADD = $(REAPER_LIBS)
dist_man_MANS += reaper/kanna-reaper.1

# End-to-end: kubectl delete node/nodeclaim drain and terminate; a PDB holds
# the drain; empty and expired nodes go (replaced first when they must).
TESTS += tests/e2e/reaper.sh
EXTRA_DIST += tests/e2e/reaper.sh

# The drain order, pod by pod (drain_pod_action()).
check_PROGRAMS += tests/unit/test_reaper_drain
TESTS += tests/unit/test_reaper_drain
tests_unit_test_reaper_drain_SOURCES = tests/unit/test_reaper_drain.c \
	tests/unit/pod-template-fixture.h
tests_unit_test_reaper_drain_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_reaper_drain_LDADD = $(REAPER_LIBS) $(LDADD) $(TEST_LIBS)

# End-to-end: garbage collection (orphaned instances, instances terminated
# out of band, NodeClaims released when no launcher did) and liveness
# (a Node that never registers).
TESTS += tests/e2e/reaper-gc.sh
EXTRA_DIST += tests/e2e/reaper-gc.sh

# End-to-end: kanna-reaper SIGKILLed mid-termination (tainted, held by a
# PDB, TerminateInstances in flight, finalizers still on) and restarted:
# it converges, each instance terminated once.
TESTS += tests/e2e/reaper-kill.sh
EXTRA_DIST += tests/e2e/reaper-kill.sh

# Interruption handling (--interruption-queue): the EventBridge message
# parser (pure, unit-tested and fuzzed) and the SQS poller that acts on it.
libkanna_reaper_a_SOURCES += reaper/interruption-message.h reaper/interruption-message.c \
	reaper/interruption.c
check_PROGRAMS += tests/unit/test_reaper_interruption_message
TESTS += tests/unit/test_reaper_interruption_message
tests_unit_test_reaper_interruption_message_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_reaper_interruption_message_LDADD = $(REAPER_LIBS) $(LDADD) $(TEST_LIBS)
FUZZ_PROGS += tests/fuzz/fuzz_interruption_message
tests_fuzz_fuzz_interruption_message_SOURCES = tests/fuzz/fuzz_interruption_message.c \
	tests/fuzz/standalone.c
tests_fuzz_fuzz_interruption_message_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/interruption_message\"
tests_fuzz_fuzz_interruption_message_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_interruption_message_LDADD = $(REAPER_LIBS) $(LDADD)
EXTRA_DIST += tests/fuzz/corpus/interruption_message/spot-interruption.json \
	tests/fuzz/corpus/interruption_message/rebalance-recommendation.json \
	tests/fuzz/corpus/interruption_message/scheduled-change.json \
	tests/fuzz/corpus/interruption_message/state-change.json \
	tests/fuzz/corpus/interruption_message/sns-envelope.json \
	tests/fuzz/corpus/interruption_message/wrong-types.json
# End-to-end: an interruption in the sim's SQS queue drains the node while
# its replacement comes up; malformed messages are deleted; a rebalance
# recommendation only records an Event.
TESTS += tests/e2e/reaper-interruption.sh
EXTRA_DIST += tests/e2e/reaper-interruption.sh

# Drift (reaper/drift.c, called by disruption.c): the decision over a
# NodeClaim, its NodePool and EC2NodeClass (static hashes from
# decode/decode-hash.c, requirements, AMI, subnet, security groups).
libkanna_reaper_a_SOURCES += reaper/drift.h reaper/drift.c
check_PROGRAMS += tests/unit/test_reaper_drift
TESTS += tests/unit/test_reaper_drift
tests_unit_test_reaper_drift_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_reaper_drift_LDADD = libkanna-decode.a $(REAPER_LIBS) $(LDADD) $(TEST_LIBS)
# End-to-end: an EC2NodeClass's AMI selector changed, then a NodePool's
# template: every node replaced, its replacement Ready before it drains,
# one at a time under a budget of nodes "1".
TESTS += tests/e2e/reaper-drift.sh
EXTRA_DIST += tests/e2e/reaper-drift.sh

# End-to-end: seed scenario S1 with a v1alpha5 Provisioner (0 → 5 → 20 →
# 10 → 5, expiry replaced first, 5 → 0 after ttlSecondsAfterEmpty), and
# disruption budgets over a whole run (nodes "1", "0" for Empty, "50%",
# v1 expiry outside them).
TESTS += tests/e2e/s1-provisioner.sh tests/e2e/reaper-budget.sh
EXTRA_DIST += tests/e2e/s1-provisioner.sh tests/e2e/reaper-budget.sh
# A NodeClaim not initialized is no disruption candidate.
TESTS += tests/e2e/reaper-uninitialized.sh
EXTRA_DIST += tests/e2e/reaper-uninitialized.sh

# End-to-end: seed scenarios S2 (scheduling constraints, a v1alpha5
# Provisioner in eu-west-1), S4 (how it works inside), S5 (the workshop's
# inflate, its log lines), and bad input mid-run.
TESTS += tests/e2e/s2-constraints.sh tests/e2e/s4-inside.sh tests/e2e/s5-inflate.sh tests/e2e/bad-input.sh
EXTRA_DIST += tests/e2e/s2-constraints.sh tests/e2e/s4-inside.sh tests/e2e/s5-inflate.sh tests/e2e/bad-input.sh

# Consolidation (issue 18): underutilized nodes deleted or replaced by a
# cheaper one, multi-node then single-node (Karpenter v1's methods), the
# search on a worker thread (consolidation-search.c is pure and unit-tested),
# validation after consolidation-validation-delay, execution through the
# shared replacement path (replace.c, disruption.h).
libkanna_reaper_a_SOURCES += reaper/disruption.h reaper/replace.c reaper/disruption-resume.c \
	reaper/consolidation.h \
	reaper/consolidation-search.c reaper/consolidation.c reaper/consolidation-execute.c \
	reaper/candidate.h reaper/candidate.c \
	reaper/consolidation-state.h reaper/consolidation-state.c
# Which nodes are candidates and what disrupting them costs (candidate.c,
# the daemon's and --what-if's alike, over a state store; the order moves
# with the pod deletion cost annotation), and the skipped search while the
# cluster is as it was when a search found nothing (consolidation-state.c).
check_PROGRAMS += tests/unit/test_reaper_static
TESTS += tests/unit/test_reaper_static
tests_unit_test_reaper_static_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_reaper_static_LDADD = libkanna-decode.a $(REAPER_LIBS) $(LDADD) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_reaper_candidate tests/unit/test_reaper_consolidation_state
TESTS += tests/unit/test_reaper_candidate tests/unit/test_reaper_consolidation_state
tests_unit_test_reaper_candidate_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_reaper_candidate_LDADD = libkanna-decode.a $(REAPER_LIBS) $(LDADD) $(TEST_LIBS)
tests_unit_test_reaper_consolidation_state_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_reaper_consolidation_state_LDADD = $(REAPER_LIBS) $(LDADD) $(TEST_LIBS)
# The last pod event: read from the NodeClaim, changed, written back (pod-events.c).
check_PROGRAMS += tests/unit/test_reaper_pod_events
TESTS += tests/unit/test_reaper_pod_events
tests_unit_test_reaper_pod_events_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_reaper_pod_events_LDADD = $(REAPER_LIBS) $(LDADD) $(TEST_LIBS)
check_PROGRAMS += tests/unit/test_reaper_consolidation
TESTS += tests/unit/test_reaper_consolidation
tests_unit_test_reaper_consolidation_SOURCES = tests/unit/test_reaper_consolidation.c \
	tests/unit/sched-fixture.h
tests_unit_test_reaper_consolidation_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_reaper_consolidation_LDADD = $(REAPER_LIBS) $(LDADD) $(TEST_LIBS)
# End-to-end: delete, replace (replacement Ready before the drain),
# multi-node (three half-empty nodes → one), do-not-disrupt and a PDB
# blocking with an Event naming them.
TESTS += tests/e2e/reaper-consolidation.sh
EXTRA_DIST += tests/e2e/reaper-consolidation.sh
# End-to-end: a consolidation replace survives the reaper SIGKILLed between
# decision and drain and while its replacement comes up (one replacement,
# drained only once it is Ready); seed scenario S3 on v1beta1 NodePools
# (delete, replace, WhenEmpty) and 1→N behind ConsolidationSplit.
TESTS += tests/e2e/reaper-replace.sh tests/e2e/reaper-s3.sh
EXTRA_DIST += tests/e2e/reaper-replace.sh tests/e2e/reaper-s3.sh
# End-to-end: a replace whose command no longer holds once its replacement
# is Ready (a pod took the replacement's room) is given up — a log line at
# once, DisruptionBlocked, the node untainted — not waited on in silence.
TESTS += tests/e2e/reaper-replace-invalid.sh
EXTRA_DIST += tests/e2e/reaper-replace-invalid.sh
# End-to-end, one sim for all: a budget nodes "0" in an open schedule
# window, a pod that fits nowhere else, spot → spot only with
# SpotToSpotConsolidation and 15 cheaper types (the gate flipped by
# SIGHUP), each with its Event; kanna-tap shows the decision.
TESTS += tests/e2e/reaper-blocks.sh
EXTRA_DIST += tests/e2e/reaper-blocks.sh

# kanna-reaper --what-if FILE.yaml [--json]: what emptiness, expiration,
# drift and consolidation would do to a cluster dump (the scheduler's
# --simulate input, loaded by dump/ as --simulate loads it), checked
# against the fixtures' expected output and fuzzed through the same loader.
libkanna_reaper_a_SOURCES += reaper/what-if.h reaper/what-if.c reaper/what-if-output.c
reaper_kanna_reaper_SOURCES += reaper/what-if-main.c
reaper_kanna_reaper_LDADD += $(DUMP_LIBS)
TESTS += tests/reaper-what-if/run.sh
EXTRA_DIST += tests/reaper-what-if/run.sh \
	tests/reaper-what-if/consolidation.yaml tests/reaper-what-if/consolidation.expected \
	tests/reaper-what-if/consolidation.json.expected \
	tests/reaper-what-if/methods.yaml tests/reaper-what-if/methods.expected \
	tests/reaper-what-if/min-savings.yaml tests/reaper-what-if/min-savings.expected \
	tests/reaper-what-if/deletion-cost.yaml tests/reaper-what-if/deletion-cost.expected \
	tests/reaper-what-if/deletion-cost-malformed.yaml \
	tests/reaper-what-if/deletion-cost-malformed.expected \
	tests/reaper-what-if/invalid.yaml tests/reaper-what-if/invalid.expected \
	tests/reaper-what-if/pod-events.yaml tests/reaper-what-if/pod-events.expected
FUZZ_PROGS += tests/fuzz/fuzz_what_if
tests_fuzz_fuzz_what_if_SOURCES = tests/fuzz/fuzz_what_if.c tests/fuzz/standalone.c
tests_fuzz_fuzz_what_if_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/what_if\"
tests_fuzz_fuzz_what_if_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_what_if_LDADD = $(REAPER_LIBS) $(DUMP_LIBS) $(LDADD)
# The fixtures are its seeds (./quickstart check fuzzes tests/fuzz/corpus/NAME).
EXTRA_DIST += tests/fuzz/corpus/what_if/consolidation.yaml tests/fuzz/corpus/what_if/methods.yaml \
	tests/fuzz/corpus/what_if/min-savings.yaml tests/fuzz/corpus/what_if/invalid.yaml \
	tests/fuzz/corpus/what_if/deletion-cost.yaml

# ./quickstart bench reaper (bench/reaper.sh): one consolidation pass at
# 1,000 nodes / 20,000 pods and 5,000 / 100,000 (bench-reaper), then
# Karpenter's performance-suite shape on kanna-sim.
BENCH_PROGS += bench/bench-reaper
bench_bench_reaper_SOURCES = bench/bench-reaper.c
bench_bench_reaper_LDADD = libkanna-decode.a $(REAPER_LIBS)
EXTRA_DIST += bench/reaper.sh
