"""The history of measurements: a document stored (its commit, run, workloads, results and
profiles), its first-parent line, and the series read back along a branch."""
