# common/runtime: (filled in by its area)
