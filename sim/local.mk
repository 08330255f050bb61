# sim/: (filled in by its area)
