# common/metrics: (filled in by its area)
