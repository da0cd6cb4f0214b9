"""Timing and checking in worker processes: the phases, the samplers and timers, the steps of a
kernel timeline."""
