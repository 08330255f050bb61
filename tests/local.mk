# tests/: shared pieces of the end-to-end tests and the demo.
EXTRA_DIST += examples/s5-inflate.yaml tests/unit/pod-template-fixture.h
# ./quickstart demo (examples/demo/) runs as a test too, so what a new user
# sees never rots; its report is rendered by chromium (demo_render.py).
TESTS += tests/e2e/demo.sh
EXTRA_DIST += tests/e2e/demo.sh tests/e2e/demo_render.py examples/demo/demo.py examples/demo/report.py \
	examples/demo/s1-provisioner.yaml examples/demo/s1-nodepool.yaml
# Chaos: kills and faults on the scale-up path, invariants checked against
# the sim's record (short here; ./quickstart chaos runs the long campaign).
TESTS += tests/e2e/chaos.sh
EXTRA_DIST += tests/e2e/chaos.sh tests/e2e/chaos-check.py tests/e2e/chaos_invariants.py
# The same on seed scenario S1, its cost against a fault-free run's.
TESTS += tests/e2e/chaos-s1.sh
EXTRA_DIST += tests/e2e/chaos-s1.sh tests/e2e/chaos-s1-script.sh tests/e2e/chaos_budgets.py
# Karpenter's published examples, as upstream handles them (issue 16's
# measure): tests/compat/expected.txt.
TESTS += tests/e2e/compat.sh
EXTRA_DIST += tests/e2e/compat.sh tests/compat
# Static NodePools (spec.replicas): the launcher keeps the count, the reaper
# removes the surplus, a SIGKILL never doubles one, pods add no node.
TESTS += tests/e2e/static-nodepool.sh
EXTRA_DIST += tests/e2e/static-nodepool.sh
# The include graph follows the layering (common → proto → state → daemons).
TESTS += tests/layering.sh
EXTRA_DIST += tests/layering.sh
# The field table of Karpenter's CRDs (issue 16): doc/crd-support.tsv covers
# every field of data/crds/ and the decoder's refusals; doc/crd-fields.md
# is current (tools/crd-fields.py write regenerates it).
TESTS += tests/crd-fields.sh
EXTRA_DIST += tests/crd-fields.sh tools/crd-fields.py doc/crd-support.tsv doc/crd-fields.md
# Daemons trust no peer (issue 19): the runtime directory, socket modes,
# the ZAP peer check and the launcher's secrets; peer-connect is the
# stranger knocking.
check_PROGRAMS += tests/e2e/peer-connect
tests_e2e_peer_connect_SOURCES = tests/e2e/peer-connect.c
tests_e2e_peer_connect_LDADD = $(STATE_LIBS)
TESTS += tests/e2e/peer-trust.sh
EXTRA_DIST += tests/e2e/peer-trust.sh
# Per-daemon least privilege (issues 19, 20): deploy/rbac.yaml validated by
# kanna-sim, and every request the four daemons make checked against it.
TESTS += tests/e2e/rbac.sh
EXTRA_DIST += tests/e2e/rbac.sh deploy/rbac.yaml
# deploy/ (issue 20): the Containerfile checked against `make install`, the
# manifests validated by kanna-sim (kubectl --dry-run=client and =server).
TESTS += tests/e2e/deploy-manifests.sh
EXTRA_DIST += tests/e2e/deploy-manifests.sh tests/e2e/deploy_containerfile.py deploy/Containerfile \
	deploy/kanna.yaml deploy/kanna-single.yaml deploy/tokens.yaml deploy/kustomization.yaml \
	deploy/README.md data/crds/kustomization.yaml
# deploy/kanna.yaml's pod as its kubelet lays it out: a uid per container,
# the emptyDir, the ConfigMap as it is; a pod gets a node.
TESTS += tests/e2e/deploy-pod.sh
EXTRA_DIST += tests/e2e/deploy-pod.sh
# High availability (issue 20): two replicas on one Lease, the leaders
# SIGKILLed mid-scale-up and mid-drain, the standby takes over.
TESTS += tests/e2e/ha-takeover.sh
EXTRA_DIST += tests/e2e/ha-takeover.sh
