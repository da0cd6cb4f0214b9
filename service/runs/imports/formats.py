"""The formats an import reads, one entry each: what reads a file of it, and whether it reads
binary sample files the JSON names beside it. The API's and the CLI's `format` is one of these
(service.schemas.imports.ImportFormat names them for the API's description)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from service.runs.imports import ImportedFile, gbench, nvbench

Reader = Callable[[bytes, Mapping[str, bytes] | None], ImportedFile]


@dataclass(frozen=True)
class Format:
    title: str
    read: Reader
    sample_files: bool = False  # the JSON names binary sample files (nvbench's --jsonbin)


FORMATS: dict[str, Format] = {
    "gbench": Format("Google Benchmark JSON (--benchmark_format=json)",
                     lambda data, _samples: gbench.parse(data)),
    "nvbench": Format("nvbench JSON (--json; --jsonbin sample files read from beside it)",
                      nvbench.parse, sample_files=True),
}  # fmt: skip
