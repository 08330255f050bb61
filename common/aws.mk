# common/aws: (filled in by its area)
