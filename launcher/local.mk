# launcher/: kanna-launcher. libkanna-launcher.a holds the parts that are
# unit-tested alone (CreateFleet request and response, limits arithmetic,
# labels, the objects' JSON, catalog, EC2NodeClass resolution); the daemon
# (plans → NodeClaim → CreateFleet → Node → bindings) is the program.
noinst_LIBRARIES += libkanna-launcher.a
libkanna_launcher_a_SOURCES = launcher/fleet-request.h launcher/fleet-request.c
LAUNCHER_LIBS = libkanna-launcher.a $(MODEL_LIBS) $(STATE_LIBS) -lm

check_PROGRAMS += tests/unit/test_launcher_fleet
TESTS += tests/unit/test_launcher_fleet
tests_unit_test_launcher_fleet_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_fleet_LDADD = $(LAUNCHER_LIBS) $(LDADD) $(TEST_LIBS)

libkanna_launcher_a_SOURCES += launcher/limits.h launcher/limits.c
check_PROGRAMS += tests/unit/test_launcher_limits
TESTS += tests/unit/test_launcher_limits
tests_unit_test_launcher_limits_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_limits_LDADD = $(LAUNCHER_LIBS) $(LDADD) $(TEST_LIBS)

libkanna_launcher_a_SOURCES += launcher/node-labels.h launcher/node-labels.c
check_PROGRAMS += tests/unit/test_launcher_node_labels
TESTS += tests/unit/test_launcher_node_labels
tests_unit_test_launcher_node_labels_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_node_labels_LDADD = $(LAUNCHER_LIBS) $(LDADD) $(TEST_LIBS)

libkanna_launcher_a_SOURCES += launcher/fleet-response.h launcher/fleet-response.c
check_PROGRAMS += tests/unit/test_launcher_fleet_response
TESTS += tests/unit/test_launcher_fleet_response
tests_unit_test_launcher_fleet_response_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_fleet_response_LDADD = $(LAUNCHER_LIBS) $(LDADD) $(TEST_LIBS)

FUZZ_PROGS += tests/fuzz/fuzz_fleet_response
tests_fuzz_fuzz_fleet_response_SOURCES = tests/fuzz/fuzz_fleet_response.c tests/fuzz/standalone.c
tests_fuzz_fuzz_fleet_response_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/fleet_response\"
tests_fuzz_fuzz_fleet_response_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_fleet_response_LDADD = $(LAUNCHER_LIBS) $(LDADD)
EXTRA_DIST += tests/fuzz/corpus/fleet_response/launched-with-ice.xml \
	tests/fuzz/corpus/fleet_response/empty.xml

libkanna_launcher_a_SOURCES += launcher/objects.h launcher/objects.c \
	launcher/fleet.h launcher/fleet.c


check_PROGRAMS += tests/unit/test_launcher_objects
TESTS += tests/unit/test_launcher_objects
tests_unit_test_launcher_objects_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_objects_LDADD = libkanna-sched.a $(LAUNCHER_LIBS) $(LDADD) $(TEST_LIBS)

FUZZ_PROGS += tests/fuzz/fuzz_describe_instances
tests_fuzz_fuzz_describe_instances_SOURCES = tests/fuzz/fuzz_describe_instances.c tests/fuzz/standalone.c
tests_fuzz_fuzz_describe_instances_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/describe_instances\"
tests_fuzz_fuzz_describe_instances_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_describe_instances_LDADD = $(LAUNCHER_LIBS) $(LDADD)
EXTRA_DIST += tests/fuzz/corpus/describe_instances/two-instances.xml \
	tests/fuzz/corpus/fleet_response/batch-of-three.xml

# EC2NodeClass resolution: user data per AMI family, selector terms, AMIs,
# instance profile, launch templates and the EC2NodeClass status.
libkanna_launcher_a_SOURCES += launcher/catalog.h launcher/nodeclass.h \
	launcher/userdata.h launcher/userdata.c launcher/userdata-mime.c launcher/userdata-toml.c \
	launcher/userdata-windows.c
libkanna_launcher_a_SOURCES += launcher/nodeclass-ec2.h launcher/nodeclass-ec2.c \
	launcher/nodeclass-template.c launcher/nodeclass-status.c \
	launcher/nodeclass-internal.h launcher/nodeclass.c launcher/nodeclass-launch.c
check_PROGRAMS += tests/unit/test_launcher_nodeclass
TESTS += tests/unit/test_launcher_nodeclass
tests_unit_test_launcher_nodeclass_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_nodeclass_LDADD = $(LAUNCHER_LIBS) $(LDADD) $(TEST_LIBS)
check_PROGRAMS += tests/unit/test_launcher_nodeclass_sim
TESTS += tests/unit/test_launcher_nodeclass_sim
tests_unit_test_launcher_nodeclass_sim_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_nodeclass_sim_LDADD = $(LAUNCHER_LIBS) libkanna-simaws.a $(LDADD) -lpthread $(TEST_LIBS)

FUZZ_PROGS += tests/fuzz/fuzz_nodeclass
tests_fuzz_fuzz_nodeclass_SOURCES = tests/fuzz/fuzz_nodeclass.c tests/fuzz/standalone.c
tests_fuzz_fuzz_nodeclass_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/nodeclass\"
tests_fuzz_fuzz_nodeclass_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_nodeclass_LDADD = $(LAUNCHER_LIBS) $(LDADD)
EXTRA_DIST += tests/fuzz/corpus/nodeclass

# The live instance-type catalog: the shipped table, refreshed from EC2.
libkanna_launcher_a_SOURCES += launcher/catalog-internal.h launcher/catalog.c launcher/catalog-ec2.c
check_PROGRAMS += tests/unit/test_launcher_catalog
TESTS += tests/unit/test_launcher_catalog
tests_unit_test_launcher_catalog_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_catalog_LDADD = $(LAUNCHER_LIBS) libkanna-simaws.a $(LDADD) -lpthread $(TEST_LIBS)
FUZZ_PROGS += tests/fuzz/fuzz_catalog_pages
tests_fuzz_fuzz_catalog_pages_SOURCES = tests/fuzz/fuzz_catalog_pages.c tests/fuzz/standalone.c
tests_fuzz_fuzz_catalog_pages_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/catalog_pages\"
tests_fuzz_fuzz_catalog_pages_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_catalog_pages_LDADD = $(LAUNCHER_LIBS) $(LDADD)
EXTRA_DIST += tests/fuzz/corpus/catalog_pages

# The daemon: plans in (admit.c), launches (launch.c, batch.c), recovery and
# the periodic pass (reconcile.c), wiring (daemon.c).
bin_PROGRAMS += launcher/kanna-launcher
# The step machine is in the library too, for its test against kanna-sim;
# it calls back into daemon.c (launcher.h: launcher_store(), the results).
libkanna_launcher_a_SOURCES += launcher/launcher.h launcher/admit.c \
	launcher/launch.c launcher/launch-fleet.c launcher/launch-node.c launcher/launch-bind.c \
	launcher/launch-undo.c launcher/batch.c launcher/reconcile.c \
	launcher/static.c
launcher_kanna_launcher_SOURCES = launcher/main.c launcher/daemon.h launcher/daemon.c \
	launcher/config.h launcher/config.c
launcher_kanna_launcher_LDADD = $(LAUNCHER_LIBS)
dist_man_MANS += launcher/kanna-launcher.1

# End-to-end: the scale-up path (S5, ICE), recovery after kill -9, and a
# binding retried after the Node filled up.
TESTS += tests/e2e/launcher.sh tests/e2e/launcher-recovery.sh tests/e2e/launcher-bind.sh
EXTRA_DIST += tests/e2e/launcher.sh tests/e2e/launcher-recovery.sh tests/e2e/launcher-bind.sh
# startupTaints: only the pods that tolerate them are bound early; the
# others wait for the default scheduler until the taint is removed.
TESTS += tests/e2e/launcher-startup-taints.sh
EXTRA_DIST += tests/e2e/launcher-startup-taints.sh
# Spot runs out: every capacity error read, no empty launch template, a
# NodeClaim left without candidates fails at once and its pods are re-planned.
TESTS += tests/e2e/launcher-capacity.sh
EXTRA_DIST += tests/e2e/launcher-capacity.sh
# A NodeClaim deleted mid-launch: nothing more sent, nothing left running.
TESTS += tests/e2e/launcher-deleted.sh
EXTRA_DIST += tests/e2e/launcher-deleted.sh
# An EC2NodeClass launches cannot use (user data, AMI) is Ready=False with
# why and gets no NodeClaim; Karpenter's AL2023 userData example launches.
TESTS += tests/e2e/nodeclass-readiness.sh
EXTRA_DIST += tests/e2e/nodeclass-readiness.sh
# A node class field kanna does not implement: ValidationSucceeded=False
# naming it, no NodeClaim; associatePublicIPAddress launches.
TESTS += tests/e2e/nodeclass-unsupported.sh
EXTRA_DIST += tests/e2e/nodeclass-unsupported.sh
# A Windows2022 class boots its Windows AMI with the PowerShell bootstrap;
# a g5 GPU pod gets the AL2023 nvidia variant (checked in the sim's records).
TESTS += tests/e2e/nodeclass-families.sh
EXTRA_DIST += tests/e2e/nodeclass-families.sh

# ./quickstart bench launcher
BENCH_PROGS += bench/bench-launcher
bench_bench_launcher_SOURCES = bench/bench-launcher.c
bench_bench_launcher_LDADD = $(STATE_LIBS)
EXTRA_DIST += bench/launcher.sh

# The re-check at admission: each planned candidate offering against its
# NodePool's requirements (the scheduler's model), EC2NodeClass and the
# unavailable offerings; a plan naming what the NodePool forbids launches nothing.
libkanna_launcher_a_SOURCES += launcher/admit-requirements.h launcher/admit-requirements.c
check_PROGRAMS += tests/unit/test_launcher_admit_requirements
TESTS += tests/unit/test_launcher_admit_requirements
tests_unit_test_launcher_admit_requirements_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_admit_requirements_LDADD = $(LAUNCHER_LIBS) $(LDADD) $(TEST_LIBS)
TESTS += tests/e2e/launcher-forged-plan.sh
EXTRA_DIST += tests/e2e/launcher-forged-plan.sh

# The check before each bind: the planned pods against their Node as it is
# now (the scheduler's own predicates), with the launcher's recent writes.
libkanna_launcher_a_SOURCES += launcher/bind-check.h launcher/bind-check.c
check_PROGRAMS += tests/unit/test_launcher_bind_check
TESTS += tests/unit/test_launcher_bind_check
tests_unit_test_launcher_bind_check_SOURCES = tests/unit/test_launcher_bind_check.c \
	tests/unit/pod-template-fixture.h
tests_unit_test_launcher_bind_check_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_bind_check_LDADD = $(LAUNCHER_LIBS) $(LDADD) $(TEST_LIBS)

# The launcher's step machine against kanna-sim in-process (its AWS side, its
# API server, the watcher's informers): plan → NodeClaim → CreateFleet →
# Node → bind, and the failure branches. It links the step machine
# (libkanna-launcher.a) and stands in for daemon.c's few callbacks.
check_PROGRAMS += tests/unit/test_launcher_launch_sim
TESTS += tests/unit/test_launcher_launch_sim
tests_unit_test_launcher_launch_sim_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_launcher_launch_sim_LDADD = libkanna-watcher.a libkanna-decode.a libkanna-simk8s.a \
	libkanna-simaws.a $(LAUNCHER_LIBS) $(LDADD) -lpthread $(TEST_LIBS)
