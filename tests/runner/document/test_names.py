"""runner.document.names: a kernel name as the service stores it, within its 1,000 characters.
A name that fits is kept as it is; a longer one is cut to exactly the limit and ends in a digest
of the whole name, so that two long names sharing their first 980 characters stay two kernels
and the same name always comes out the same."""

from __future__ import annotations

import hashlib

from runner.document.names import MAX_KERNEL_NAME, document_kernel_name


def test_a_name_of_up_to_the_limit_is_kept_as_it_is() -> None:
    for length in (1, 999, MAX_KERNEL_NAME):
        name = "k" * length
        assert document_kernel_name(name) is name


def test_one_character_over_the_limit_is_cut_to_exactly_the_limit() -> None:
    name = "void gemm<" + "f" * (MAX_KERNEL_NAME - 10) + ">"
    assert len(name) == MAX_KERNEL_NAME + 1
    short = document_kernel_name(name)
    assert len(short) == MAX_KERNEL_NAME
    # 980 characters of the name, "...#", then 16 hex digits of SHA-1 over the whole name
    digest = hashlib.sha1(name.encode()).hexdigest()[:16]
    assert short == f"{name[:980]}...#{digest}"


def test_long_names_that_differ_only_past_the_cut_stay_distinct() -> None:
    common = "void cutlass::Kernel<" + "x" * 1200
    first, second = document_kernel_name(common + "A>"), document_kernel_name(common + "B>")
    assert first != second
    assert first[:980] == second[:980]  # only the digest tells them apart


def test_a_shortened_name_is_stable_and_shortening_it_again_changes_nothing() -> None:
    """A name the runner stored once must match the one it stores for the next commit."""
    name = "é" * 1500  # the limit counts characters, not UTF-8 bytes
    short = document_kernel_name(name)
    assert short == document_kernel_name(name)
    assert document_kernel_name(short) == short
