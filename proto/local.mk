# proto/: (filled in by its area)
