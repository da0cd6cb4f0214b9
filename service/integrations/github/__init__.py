"""GitHub, both ways: its events in (events.py: a verified push or pull request turned into
jobs, once per delivery) and what kernelwatch says back (statuses.py: a commit's status;
comments.py: a pull request's comment). The rows either way are the store's
(service.store.jobs.deliveries and pull_requests, service.store.reads.github_reads)."""
