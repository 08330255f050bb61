# tests/: shared pieces of the end-to-end tests and the demo.
EXTRA_DIST += tests/e2e/demo.sh examples/s5-inflate.yaml tests/unit/pod-template-fixture.h
# The demo runs as a test too, so what a new user sees never rots.
TESTS += tests/e2e/demo.sh
