"""ncu and the kernel timeline: one ncu pass per run, its reuse across commits, nsys/CUPTI
timelines."""
