# scheduler/: (filled in by its area)
