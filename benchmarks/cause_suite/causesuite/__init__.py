"""The cause benchmark's suite (benchmarks/cause_gpu.py): one kernel pair per known cause."""
