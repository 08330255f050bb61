# doc/: kanna(7) and kanna.yaml(5), generated from the Markdown documents by
# doc/md2man.py and committed; tests/docs-man.sh fails when one is stale,
# and checks every program's man page, --help and --version.
dist_man_MANS += doc/kanna.7 doc/kanna.yaml.5
EXTRA_DIST += doc/md2man.py doc/kanna.7.md doc/kanna.7-files.md doc/observability.md \
	doc/metrics.md doc/configuration.md
TESTS += tests/docs-man.sh
EXTRA_DIST += tests/docs-man.sh
# Every daemon's /metrics parsed and held to doc/metrics.md.
TESTS += tests/e2e/metrics.sh
EXTRA_DIST += tests/e2e/metrics.sh
