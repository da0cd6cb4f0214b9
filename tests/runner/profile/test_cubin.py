"""runner.profile.cubin on real nvcc output (tests/runner/fixtures/cubin): a kernel's hash moves
with its own code and the data every kernel reads, not with another kernel of the same file."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.profile.cubin import kernel_hashes

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cubin"


def hashes(name: str) -> dict[str, str]:
    found = kernel_hashes((FIXTURES / f"{name}.cubin").read_bytes())
    assert found is not None
    return found


def test_each_entry_kernel_gets_a_hash_and_device_functions_none() -> None:
    assert sorted(hashes("two_kernels")) == ["ka", "kb"]


def test_changing_one_kernel_leaves_the_others_hash_alone() -> None:
    before, after = hashes("two_kernels"), hashes("kb_changed")
    assert after["ka"] == before["ka"]
    assert after["kb"] != before["kb"]


def test_data_every_kernel_may_read_moves_every_hash() -> None:
    before, after = hashes("two_kernels"), hashes("constant_grown")
    assert after["ka"] != before["ka"] and after["kb"] != before["kb"]


def test_a_new_kernel_renumbers_the_symbols_and_so_moves_the_others_too() -> None:
    # conservative: the kernels' own info sections name symbols by number
    before, after = hashes("two_kernels"), hashes("kc_added")
    assert sorted(after) == ["ka", "kb", "kc"]
    assert after["ka"] != before["ka"]


@pytest.mark.parametrize(
    "data",
    [b"", b"not an elf", b"\x7fELF\x01\x01" + bytes(60), b"\x7fELF\x02\x01" + bytes(10),
     b"\x7fELF\x02\x01" + bytes(58) + b"\xff\xff"],
)  # fmt: skip
def test_anything_else_is_none_for_the_caller_to_hash_whole(data: bytes) -> None:
    assert kernel_hashes(data) is None


def test_a_truncated_cubin_is_none() -> None:
    data = (FIXTURES / "two_kernels.cubin").read_bytes()
    assert kernel_hashes(data[: len(data) // 2]) is None
