# reaper/: kanna-reaper — termination (taint, drain through the Eviction API,
# TerminateInstances, finalizers), emptiness and expiry with budgets and
# replacements planned with the model's what-if.
# libkanna-reaper.a holds everything but the daemon's wiring (main.c,
# daemon.c, config.c), so the pieces are unit-tested alone.
noinst_LIBRARIES += libkanna-reaper.a
libkanna_reaper_a_SOURCES = reaper/reaper.h reaper/work.c reaper/termination.c reaper/drain.c \
	reaper/instances.c reaper/disruption.c reaper/inventory.c reaper/gc.c
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

# End-to-end: garbage collection (orphaned instances, instances terminated
# out of band, NodeClaims released when no launcher did) and liveness
# (a Node that never registers).
TESTS += tests/e2e/reaper-gc.sh
EXTRA_DIST += tests/e2e/reaper-gc.sh
