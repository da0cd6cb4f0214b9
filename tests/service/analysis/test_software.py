"""Software two runs' environments name differently, on plain dictionaries."""

from __future__ import annotations

from service.analysis.software import changes, describe, versions


def test_versions_are_read_from_the_known_keys_and_the_frameworks() -> None:
    environment = {"cupy_version": "14.0.1", "nvcc_version": "13.0", "ncu_version": "2025.3",
                   "frameworks": {"torch": "2.11.0", "triton": "3.6.0", "jax": ""}}  # fmt: skip
    assert versions(environment) == {"CuPy": "14.0.1", "nvcc": "13.0", "PyTorch": "2.11.0",
                                     "Triton": "3.6.0"}  # fmt: skip
    assert versions({"frameworks": "torch 2.11"}) == {}  # not a mapping: nothing read


def test_what_changed_between_two_environments() -> None:
    base = {"cupy_version": "14.0.1", "frameworks": {"torch": "2.10.0"}}
    head = {"cupy_version": "14.0.1", "nvcc_version": "13.0", "frameworks": {"torch": "2.11.0"}}
    found = changes(base, head)
    assert found == [
        {"name": "PyTorch", "base": "2.10.0", "head": "2.11.0"},
        {"name": "nvcc", "base": None, "head": "13.0"},
    ]
    assert [describe(c) for c in found] == ["PyTorch 2.10.0→2.11.0", "nvcc absent→13.0"]
    assert changes(head, head) == []
