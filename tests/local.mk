# tests/: (filled in by its area)
