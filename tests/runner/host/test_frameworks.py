"""The suite frameworks a runner host has (PyTorch, Triton): their versions in every run's
environment and in doctor's report, read from package metadata without importing them."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.host import environment
from runner.host.checks import framework_checks


def installed(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_the_versions_of_the_installed_frameworks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed(tmp_path, "torch", "2.11.0")
    installed(tmp_path, "pytorch-triton", "3.6.0")  # PyTorch's own build of Triton
    monkeypatch.syspath_prepend(str(tmp_path))
    assert environment.framework_versions() == {"torch": "2.11.0", "triton": "3.6.0"}
    checks = {c.name: c for c in framework_checks()}
    assert checks["torch"].ok and checks["torch"].detail.startswith("2.11.0")
    assert not checks["torch"].required


def test_they_are_in_the_environment_and_leave_the_fingerprint_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = environment.collect("cpu", {})
    installed(tmp_path, "torch", "2.11.0")
    monkeypatch.syspath_prepend(str(tmp_path))
    after = environment.collect("cpu", {})
    assert after["frameworks"]["torch"] == "2.11.0"
    assert after["fingerprint"] == before["fingerprint"]  # an upgrade keeps the series
