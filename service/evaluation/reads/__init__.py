"""What analysis says read back: a commit's metrics with baselines and verdicts, two commits
compared, a kernel's work counters along its history."""
