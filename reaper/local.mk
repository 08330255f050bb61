# reaper/: kanna-reaper — termination (taint, drain through the Eviction API,
# TerminateInstances, finalizers), emptiness and expiry with budgets and
# replacements planned with the model's what-if.
bin_PROGRAMS += reaper/kanna-reaper
reaper_kanna_reaper_SOURCES = reaper/main.c reaper/daemon.h reaper/daemon.c \
	reaper/config.h reaper/config.c reaper/reaper.h reaper/termination.c reaper/drain.c \
	reaper/instances.c reaper/disruption.c
reaper_kanna_reaper_LDADD = $(MODEL_LIBS) $(STATE_LIBS) -lm
dist_man_MANS += reaper/kanna-reaper.1

# End-to-end: kubectl delete node/nodeclaim drain and terminate; a PDB holds
# the drain; empty and expired nodes go (replaced first when they must).
TESTS += tests/e2e/reaper.sh
EXTRA_DIST += tests/e2e/reaper.sh
