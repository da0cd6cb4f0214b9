"""`python -m runner.worker CONFIG.json`: one worker process (runner.worker.process)."""

import sys

from runner.worker.process import main

sys.exit(main(sys.argv[1]))
