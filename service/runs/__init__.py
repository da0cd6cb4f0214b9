"""A result document arrives: from a runner's post, or from another tool's output (imports)."""
