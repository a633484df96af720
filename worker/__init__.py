"""The child side of a cell: preflight, one workload through pytest, the result file."""
