"""runner.profile.cubin on real nvcc output (tests/runner/fixtures/cubin): a kernel's hash moves
with its own code and the data every kernel reads, not with another kernel of the same file."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.profile.cubin import is_debug, kernel_hashes

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


@pytest.mark.parametrize("name", ["lineinfo", "triton_softmax"])
def test_the_same_code_from_another_path_and_lines_keeps_its_hash(name: str) -> None:
    """Line tables name the source's path and lines: a commit that adds a line above a kernel,
    or a checkout in another folder, leaves the code (and so the ncu section) as it was."""
    assert hashes(f"{name}_moved") == hashes(name)


def test_the_line_tables_are_what_differs_between_the_moved_builds() -> None:
    """The moved builds are no copies: their line tables differ, so the test above holds a rule."""
    raw = [(FIXTURES / f"triton_softmax{s}.cubin").read_bytes() for s in ("", "_moved")]
    assert raw[0] != raw[1]
    assert all(b".debug_line" in r for r in raw)


@pytest.mark.parametrize(
    ("section", "debug"),
    [(".debug_line", True), (".rela.debug_line", True), (".nv_debug_line_sass", True),
     (".rel.nv_debug_info_reg_sass", True), (".text.debug_kernel", False),
     (".nv.info.ka", False), (".rela.text.ka", False)],
)  # fmt: skip
def test_debug_sections_are_told_by_their_names(section: str, debug: bool) -> None:
    assert is_debug(section) is debug
