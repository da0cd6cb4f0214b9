"""A run judged: its verdicts against their baselines (controls, redefinitions, work counters,
confirmations' findings), the backlog that claims runs to judge, and change points."""
