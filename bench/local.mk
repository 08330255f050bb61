# bench/: the shared row format (lib.sh), the collector of bench/results.json
# (collect.py, its schema and the list of figures), and the pipeline's test.
EXTRA_DIST += bench/lib.sh bench/collect.py bench/results.schema.json bench/figures.txt
# ./quickstart bench system: whole-system figures through the real daemons.
EXTRA_DIST += bench/system.sh
TESTS += tests/bench-results.sh
EXTRA_DIST += tests/bench-results.sh
# The scheduler's regression guard: callgrind's count of a 1,000-pod solve
# against bench/baseline.json (the gcc build only).
TESTS += tests/bench-callgrind.sh
EXTRA_DIST += tests/bench-callgrind.sh bench/baseline.json
