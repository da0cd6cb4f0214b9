"""The process that runs a suite's workloads for the runner: `python -m runner.worker CONFIG`."""
