"""The agent: the loop with the service (claim, heartbeat, post, release) and the job it runs."""
