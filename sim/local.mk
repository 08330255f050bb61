# sim/: (filled in by its area)
include sim/aws.mk
