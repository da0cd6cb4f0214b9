"""What a run reports as it goes (its stages, each workload done, its log lines); the CLI draws
it with rich (runner.run.console), the agent logs it (runner.agent.job)."""

from __future__ import annotations

from runner.measure.phase import Outcome


class Progress:
    """What a run reports as it goes; the CLI draws it with rich, the agent logs it."""

    def stage(self, name: str, total: int | None = None) -> None:
        pass

    def advance(self, label: str, outcome: Outcome | None = None) -> None:
        pass

    def log(self, line: str) -> None:
        pass
