"""Where a series' baseline starts: the history since its last accepted level shift.

A series' results along the branch's first-parent ancestry form a line of levels. After a real
step, the next commits must be compared with the new level, not with a mixture of old and new:
the baseline of a commit is the newest *segment* of its ancestors' results, from the last level
shift to the nearest ancestor. A level shift is one of

- a marker recorded at an ancestor: a regression or an improvement the verdicts found there
  (unless its alert was dismissed by the confirmation or marked invalid by a person), or an
  alert a person acknowledged (the regressed level is accepted) or marked fixed (the level from
  its fixing commit on is accepted);
- a change point in the ancestors' medians (`changepoints.detect`, on the ancestors only, so
  that a verdict never depends on results that came after it).

Pure functions on plain sequences, nearest ancestor first: the database side
(`service.evaluation.verdicts.baseline`) reads the points and the markers and calls `segment_of`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from service.analysis.steps import detect

# Why a segment starts where it does. "history": no shift within the points read.
KINDS = ("history", "regression", "improvement", "acknowledged", "fixed", "change_point")


@dataclass(frozen=True)
class Point:
    """One ancestor result of a series: its commit, its median and the level shift recorded
    there (one of KINDS but "history"/"change_point", or None)."""

    commit_id: int
    median: float
    marker: str | None = None
    note: str = ""  # what the marker stands for, for a person ("alert 12 acknowledged by ada")


@dataclass(frozen=True)
class Segment:
    """The newest segment of a line of points: points[0 : length] (nearest first); the
    segment's first commit (oldest point) is points[length - 1]."""

    length: int
    kind: str
    change: float | None = None  # the shift's size where known: (after - before) / before
    note: str = ""

    def start(self, points: Sequence[Point]) -> Point:
        return points[self.length - 1]


def segment_of(points: Sequence[Point]) -> Segment:
    """The newest segment of `points` (nearest ancestor first); a whole line without any shift
    is one segment of kind "history". An empty line gives length 0."""
    if not points:
        return Segment(0, "history")
    best: Segment | None = None
    for i, p in enumerate(points):
        if p.marker is not None:
            best = Segment(i + 1, p.marker, _step(points, i), p.note)
            break
    # The change points of the ancestors' medians, oldest first: index j is the first point
    # after the shift, i.e. points[n - 1 - j]; the newest one bounds the segment.
    medians = [p.median for p in reversed(points)]
    shifts = detect(medians)
    if shifts:
        newest = shifts[-1]
        length = len(points) - newest.index
        if best is None or length < best.length:
            best = Segment(length, "change_point", newest.change)
    return best or Segment(len(points), "history")


def _step(points: Sequence[Point], i: int) -> float | None:
    """The marker's step against the point before it (for a note; the verdict that set the
    marker knows its own change, which the caller prefers)."""
    if i + 1 >= len(points) or points[i + 1].median <= 0:
        return None
    return points[i].median / points[i + 1].median - 1


def describe(segment: Segment, start_sha: str, results: int) -> str:
    """One line for a person: where the baseline starts and why."""
    sha = start_sha[:12]
    size = f" ({segment.change:+.1%})" if segment.change is not None else ""
    what = {
        "history": f"no level shift in the {results} results read; the baseline starts at {sha}",
        "regression": f"a regression at {sha}{size} started a new level",
        "improvement": f"an improvement at {sha}{size} started a new level",
        "acknowledged": f"the regressed level since {sha} was acknowledged",
        "fixed": f"the level since the fix at {sha} is accepted",
        "change_point": f"a change point at {sha}{size} started a new level",
    }[segment.kind]
    if segment.note:
        what += f" ({segment.note})"
    return what
