"""The agent's exit statuses, for whatever restarts it (docs/runner-host.md's systemd units keep
it down on EXIT_REFUSED and EXIT_CONFIG: restarting does not help, a person must act). Standard
library only: the CLI returns them before the runner's own dependencies are checked."""

EXIT_OK = 0  # stopped (SIGTERM, SIGINT)
EXIT_REFUSED = 1  # the service refused the runner itself (token, URL): a person must act
# 2: a usage error, or a host check other than the GPU's failed at start (git, disk, NumPy)
EXIT_HOST = 3  # this host cannot run jobs (its GPU stack broke): its job went back to the queue
# The agent was started for suites this host cannot run: no usable GPU and no --cpu, or --cpu and
# a token that hands it CUDA suites. sysexits.h's EX_CONFIG: systemd shows "status=78/CONFIG".
EXIT_CONFIG = 78
