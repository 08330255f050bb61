# tools/: (filled in by its area)
