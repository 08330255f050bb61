# scheduler/: kanna-scheduler (the daemon, and --simulate, which reads its
# YAML through dump/), its batching, plans and reasons (libkanna-sched.a,
# over the model in model/), its unit and scenario tests, the --simulate
# YAML fuzz target and the benchmark.
noinst_LIBRARIES += libkanna-sched.a
libkanna_sched_a_SOURCES = \
	scheduler/simulate.h scheduler/simulate-output.c \
	scheduler/batch.h scheduler/batch.c \
	scheduler/unschedulable.h scheduler/unschedulable.c scheduler/solve.h scheduler/solve.c

bin_PROGRAMS += scheduler/kanna-scheduler
scheduler_kanna_scheduler_SOURCES = scheduler/main.c scheduler/simulate-main.c \
	scheduler/daemon.h scheduler/daemon.c scheduler/config.h scheduler/config.c
scheduler_kanna_scheduler_LDADD = libkanna-sched.a $(DUMP_LIBS)
SCHED_LIBS = libkanna-sched.a $(DUMP_LIBS)

check_PROGRAMS += tests/unit/test_requirements
TESTS += tests/unit/test_requirements
tests_unit_test_requirements_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_requirements_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_sched_catalog
TESTS += tests/unit/test_sched_catalog
tests_unit_test_sched_catalog_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_catalog_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_sched_kubelet
TESTS += tests/unit/test_sched_kubelet
tests_unit_test_sched_kubelet_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_kubelet_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_model_what_if
TESTS += tests/unit/test_model_what_if
tests_unit_test_model_what_if_SOURCES = tests/unit/test_model_what_if.c tests/unit/sched-fixture.h
tests_unit_test_model_what_if_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_model_what_if_LDADD = $(SCHED_LIBS) $(TEST_LIBS)
check_PROGRAMS += tests/unit/test_model_budget
TESTS += tests/unit/test_model_budget
tests_unit_test_model_budget_SOURCES = tests/unit/test_model_budget.c
tests_unit_test_model_budget_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_model_budget_LDADD = $(SCHED_LIBS) $(TEST_LIBS)
check_PROGRAMS += tests/unit/test_sched_solver
TESTS += tests/unit/test_sched_solver
tests_unit_test_sched_solver_SOURCES = tests/unit/test_sched_solver.c tests/unit/sched-fixture.h
tests_unit_test_sched_solver_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_solver_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

BENCH_PROGS += bench/bench-scheduler
bench_bench_scheduler_SOURCES = bench/bench-scheduler.c
bench_bench_scheduler_LDADD = $(SCHED_LIBS)
EXTRA_DIST += bench/scheduler.sh

check_PROGRAMS += tests/unit/test_sched_scenarios
TESTS += tests/unit/test_sched_scenarios
tests_unit_test_sched_scenarios_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_scenarios_LDADD = $(SCHED_LIBS) $(TEST_LIBS)
EXTRA_DIST += \
	tests/scheduling/daemonset-overhead-instancetypes.yaml \
	tests/scheduling/existing-node-first.yaml \
	tests/scheduling/gpu-extended-resources.yaml \
	tests/scheduling/host-ports.yaml \
	tests/scheduling/min-values.yaml \
	tests/scheduling/min-values-within-limits.yaml \
	tests/scheduling/node-affinity-terms-and-preferences.yaml \
	tests/scheduling/nodepool-node-limit.yaml \
	tests/scheduling/nodepool-weights.yaml \
	tests/scheduling/provisioner-name-not-well-known.yaml \
	tests/scheduling/windows-build-linux-pool.yaml \
	tests/scheduling/windows-pods-not-eni-limited.yaml \
	tests/scheduling/pod-anti-affinity-hostname.yaml \
	tests/scheduling/pod-anti-affinity-namespace-selector.yaml \
	tests/scheduling/pod-anti-affinity-all-namespaces.yaml \
	tests/scheduling/s1-provisioner-scale-to-5.yaml \
	tests/scheduling/s1-scale-5-to-20.yaml \
	tests/scheduling/s2-limits.yaml \
	tests/scheduling/s2-preferred-anti-affinity.yaml \
	tests/scheduling/s2-volume-topology-bound-pv.yaml \
	tests/scheduling/s2-volume-topology-wffc.yaml \
	tests/scheduling/s2-volume-topology-any-term.yaml \
	tests/scheduling/s2-zone-pod-affinity.yaml \
	tests/scheduling/s3-no-requirements-no-metal.yaml \
	tests/scheduling/s3-nodepool-requirements.yaml \
	tests/scheduling/s5-inflate-nodeselector.yaml \
	tests/scheduling/taints-and-tolerations.yaml \
	tests/scheduling/topology-spread-counts-existing.yaml \
	tests/scheduling/topology-spread-nodepool-zones.yaml \
	tests/scheduling/topology-spread-zone.yaml \
	tests/scheduling/inflight-nodeclaim.yaml \
	tests/scheduling/kubelet-settings.yaml \
	tests/scheduling/pod-affinity-hostname.yaml \
	tests/scheduling/pod-affinity-preferred.yaml \
	tests/scheduling/replicaset-and-pdb.yaml \
	tests/scheduling/requirement-lt.yaml \
	tests/scheduling/topology-spread-hostname.yaml \
	tests/scheduling/topology-spread-match-label-keys.yaml \
	tests/scheduling/topology-spread-schedule-anyway.yaml \
	tests/scheduling/invalid/bad-operator.yaml \
	tests/scheduling/invalid/bad-quantity.yaml \
	tests/scheduling/invalid/bad-yaml.yaml \
	tests/scheduling/invalid/missing-name.yaml \
	tests/scheduling/invalid/nodepool-weight.yaml \
	tests/scheduling/invalid/duplicate-nodepool.yaml \
	tests/scheduling/invalid/statefulset-template.yaml \
	tests/scheduling/invalid/replicas.yaml \
	tests/scheduling/invalid/requirement-gt-not-integer.yaml

check_PROGRAMS += tests/unit/test_sched_from_state
TESTS += tests/unit/test_sched_from_state
tests_unit_test_sched_from_state_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_from_state_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_sched_checker
TESTS += tests/unit/test_sched_checker
tests_unit_test_sched_checker_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_checker_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

FUZZ_PROGS += tests/fuzz/fuzz_simulate_yaml
tests_fuzz_fuzz_simulate_yaml_SOURCES = tests/fuzz/fuzz_simulate_yaml.c tests/fuzz/standalone.c
tests_fuzz_fuzz_simulate_yaml_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/simulate_yaml\"
tests_fuzz_fuzz_simulate_yaml_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_simulate_yaml_LDADD = $(SCHED_LIBS)
EXTRA_DIST += \
	tests/fuzz/corpus/simulate_yaml/daemonset-overhead-instancetypes.yaml \
	tests/fuzz/corpus/simulate_yaml/host-ports.yaml \
	tests/fuzz/corpus/simulate_yaml/inflight-nodeclaim.yaml \
	tests/fuzz/corpus/simulate_yaml/kubelet-settings.yaml \
	tests/fuzz/corpus/simulate_yaml/invalid-operator.yaml \
	tests/fuzz/corpus/simulate_yaml/invalid-yaml.yaml \
	tests/fuzz/corpus/simulate_yaml/min-values.yaml \
	tests/fuzz/corpus/simulate_yaml/node-affinity-terms-and-preferences.yaml \
	tests/fuzz/corpus/simulate_yaml/s1-provisioner-scale-to-5.yaml \
	tests/fuzz/corpus/simulate_yaml/s2-volume-topology-bound-pv.yaml \
	tests/fuzz/corpus/simulate_yaml/s2-volume-topology-wffc.yaml \
	tests/fuzz/corpus/simulate_yaml/s2-volume-topology-any-term.yaml \
	tests/fuzz/corpus/simulate_yaml/pod-anti-affinity-namespace-selector.yaml \
	tests/fuzz/corpus/simulate_yaml/s2-zone-pod-affinity.yaml \
	tests/fuzz/corpus/simulate_yaml/s3-nodepool-requirements.yaml \
	tests/fuzz/corpus/simulate_yaml/s5-inflate-nodeselector.yaml \
	tests/fuzz/corpus/simulate_yaml/taints-and-tolerations.yaml \
	tests/fuzz/corpus/simulate_yaml/topology-spread-counts-existing.yaml

# End-to-end: kanna-sim → kanna-watcher → kanna-scheduler (kanna-probe is the launcher).
TESTS += tests/e2e/scheduler.sh
EXTRA_DIST += tests/e2e/scheduler.sh
# A slow solve leaves the loop free: probes, Lease renewal, intake.
TESTS += tests/e2e/scheduler-slow-solve.sh
EXTRA_DIST += tests/e2e/scheduler-slow-solve.sh

check_PROGRAMS += tests/unit/test_sched_preference_policy
TESTS += tests/unit/test_sched_preference_policy
tests_unit_test_sched_preference_policy_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_preference_policy_SOURCES = tests/unit/test_sched_preference_policy.c \
	tests/unit/sched-fixture.h scheduler/config.c
tests_unit_test_sched_preference_policy_LDADD = $(SCHED_LIBS) $(TEST_LIBS)
check_PROGRAMS += tests/unit/test_sched_daemon
TESTS += tests/unit/test_sched_daemon
tests_unit_test_sched_daemon_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_daemon_SOURCES = tests/unit/test_sched_daemon.c scheduler/config.c
tests_unit_test_sched_daemon_LDADD = $(SCHED_LIBS) $(TEST_LIBS)
dist_man_MANS += scheduler/kanna-scheduler.1
TESTS += tests/e2e/shards.sh
EXTRA_DIST += tests/e2e/shards.sh

check_PROGRAMS += tests/unit/test_sched_unschedulable
TESTS += tests/unit/test_sched_unschedulable
tests_unit_test_sched_unschedulable_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_unschedulable_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_sched_catalog_proto
TESTS += tests/unit/test_sched_catalog_proto
tests_unit_test_sched_catalog_proto_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_catalog_proto_LDADD = $(SCHED_LIBS) $(TEST_LIBS)
# The catalog part of the model kept between batches: the same plans.
check_PROGRAMS += tests/unit/test_sched_model_base
TESTS += tests/unit/test_sched_model_base
tests_unit_test_sched_model_base_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_model_base_LDADD = $(SCHED_LIBS) $(TEST_LIBS)
# NodeOverlays on the catalog: prices, weights, extended resources.
check_PROGRAMS += tests/unit/test_model_node_overlay
TESTS += tests/unit/test_model_node_overlay
tests_unit_test_model_node_overlay_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_model_node_overlay_LDADD = $(SCHED_LIBS) $(TEST_LIBS)
# Standby readiness of every daemon, and the scheduler's SIGHUP and SIGTERM.
TESTS += tests/e2e/daemon-signals.sh
EXTRA_DIST += tests/e2e/daemon-signals.sh
