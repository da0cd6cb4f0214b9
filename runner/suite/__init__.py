"""A suite at a commit: its checkout in a worktree, its build, its listing of workloads."""
