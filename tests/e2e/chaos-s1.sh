#!/bin/sh
# End-to-end chaos on seed scenario S1, the short run `make check` does: the
# S1 script played while a daemon is SIGKILLed every few seconds and
# kanna-sim injects faults, with every invariant of tests/e2e/chaos.sh,
# the disruption budgets, and nothing left at scale 0 after the
# garbage-collection interval (tests/e2e/chaos-s1-script.sh). The cost
# comparison with a fault-free run is skipped here (it says so): in 8 s
# holds a restart's few seconds weigh more than the 10% it allows, and the
# run would take twice as long. `./quickstart chaos` runs it long, with it
# (KANNA_CHAOS_COST=compare here does too).
KANNA_CHAOS_SCRIPT=s1
KANNA_CHAOS_COST=${KANNA_CHAOS_COST:-skip}
export KANNA_CHAOS_SCRIPT KANNA_CHAOS_COST
exec sh "$(dirname "$0")/chaos.sh"
