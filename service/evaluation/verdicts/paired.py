"""What a confirmation and a bisection share: the paired document's samples of a series and a
commit's sha (the rule a re-measured regression must pass: service.analysis.confirmation)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from service.core.units import to_microseconds_factor
from service.models import Commit, Series


def commit_sha(session: Session, commit_id: int | None) -> str:
    commit = session.get(Commit, commit_id) if commit_id else None
    return commit.sha if commit else ""


def series_samples(document: dict[str, Any], series: Series) -> list[np.ndarray] | None:
    """A document's timing samples of `series`' workload, in microseconds, process by process."""
    for w in document.get("workloads", []):
        if w["name"] == series.workload and w["params"] == series.params and w.get("timing"):
            timing = w["timing"]
            factor = to_microseconds_factor(timing["unit"])
            return [
                np.asarray(p["samples"], dtype=np.float64) * factor for p in timing["processes"]
            ]
    return None
