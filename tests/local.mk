# tests/: shared pieces of the end-to-end tests and the demo.
EXTRA_DIST += tests/e2e/demo.sh examples/s5-inflate.yaml
