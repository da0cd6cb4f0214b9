"""Results of other benchmark tools (Google Benchmark, nvbench) read into kernelwatch's terms.

Each reader (`gbench`, `nvbench`) turns one output file into an `ImportedFile`: the host it ran
on and one `ImportedSeries` per benchmark configuration with its samples. `document` makes a
result document of it, which is stored and judged like a runner's. Plain data only: no
database, no pydantic; a file that is not what it claims raises `ImportFileError` naming what
is wrong, before anything is stored.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

ParamValue = str | int | float | bool
_WORKLOAD_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")


class ImportFileError(ValueError):
    """The file cannot be imported; the message says what is wrong and where."""


@dataclass
class ImportedSeries:
    """One benchmark configuration: a workload of the result document."""

    name: str  # a workload name: [A-Za-z_][\w.-]*, at most 200 characters
    params: dict[str, ParamValue]
    samples: list[float]  # > 0, in `unit`; empty where status is not "ok"
    unit: str = "ns"  # ns, us, ms or s
    method: Literal["host", "cuda_events", "cupti"] = "host"
    kernel: str = ""  # the timing's kernel label; the name where empty
    note: str = ""  # where the samples come from (the timing's stop_reason)
    status: Literal["ok", "failed", "skipped"] = "ok"
    error: str = ""  # why it failed or was skipped


@dataclass
class ImportedFile:
    tool: Literal["gbench", "nvbench"]
    suite: str  # the suite name of the document, e.g. "gbench:bench_gemm"
    environment: dict[str, Any]  # the document's environment section, fingerprint included
    series: list[ImportedSeries] = field(default_factory=list)
    started_at: datetime | None = None  # when the tool ran, where the file says


def workload_name(text: str) -> str:
    """A valid workload name from a tool's benchmark name: other characters become '_'."""
    name = re.sub(r"[^\w.-]", "_", text.strip())[:200] or "benchmark"
    return name if _WORKLOAD_NAME.match(name) else f"_{name}"[:200]


def fingerprint(identity: dict[str, Any]) -> str:
    """The environment fingerprint of a host identity (the same host gives the same one)."""
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_json(data: bytes, tool: str) -> Any:
    """The parsed file, or ImportFileError saying it is not JSON."""
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFileError(f"not {tool} JSON output: {exc}") from None
    except RecursionError:
        raise ImportFileError(f"not {tool} JSON output: nested too deeply") from None
