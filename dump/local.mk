# dump/: the cluster dump loader — a YAML stream of Kubernetes objects
# (kubectl get ... -o yaml, plus kanna.dev/v1alpha1 InstanceTypes) admitted
# and expanded as the API server and controllers would, decoded by decode/
# and modelled by model/'s from-state.c. A library between those and the
# daemons: kanna-scheduler --simulate and kanna-reaper --what-if both read
# their input through it, so neither includes the other's headers.
noinst_LIBRARIES += libkanna-dump.a
libkanna_dump_a_SOURCES = \
	dump/dump.h dump/dump-internal.h dump/load.c dump/workloads.c dump/catalog.c
DUMP_LIBS = libkanna-dump.a libkanna-decode.a $(MODEL_LIBS) $(STATE_LIBS) -lm
