"""The work queued for runners: the job queue and its leases, and the GitHub deliveries and
pull requests that queue it."""
