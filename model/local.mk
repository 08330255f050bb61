# model/: the domain model every daemon that plans or checks capacity links:
# the instance-type catalog (shipped TSV, the launcher's live one, Karpenter's
# fake types), the kubelet overhead formulas, the requirements algebra, the
# cluster model built from replicated state, and the solver (first-fit
# decreasing over the cheapest fitting offerings, topology, affinity), with
# the one-Node check the launcher runs before each bind.
noinst_LIBRARIES += libkanna-model.a
libkanna_model_a_SOURCES = \
	model/model.h model/model.c model/requirements.c \
	model/catalog.h model/catalog.c model/catalog-tsv.c model/catalog-fake.c \
	model/catalog-proto.h model/catalog-proto.c \
	model/cluster.h model/cluster.c model/kubelet.h model/kubelet.c \
	model/unavailable.h model/unavailable.c model/match.h model/match.c \
	model/solver.h model/solver-internal.h model/solver.c \
	model/what-if.h model/what-if.c model/plan.h model/plan.c \
	model/budget.h model/budget.c \
	model/shape.c model/topology.c model/host-group.c model/solve.c model/finish.c \
	model/node-check.c \
	model/from-state.h model/from-state-internal.h model/from-state.c \
	model/model-base.h model/model-base.c model/node-overlay.h model/node-overlay.c \
	model/from-state-view.c model/from-state-volumes.c
MODEL_LIBS = libkanna-model.a
