"""Pairing a workload redefined in place (service.analysis.redefinition.pairs): a started series
pairs with a retired one only where their whole key (workload, kernels, metric, timing method,
GPU and work) is equal and each side holds exactly one series of that key; pairs map the new
series to the old, and one ambiguous key leaves the others' pairs alone."""

from __future__ import annotations

from service.analysis.redefinition import pairs

# What a pair must share: workload, kernels, metric, timing method, GPU, FLOPs and bytes.
REDUCE = ("Reduce", ("reduce_kernel",), "time_us", "cupti", "H100", 0, 4 << 20)
GEMM = ("Gemm", ("sgemm",), "time_us", "cupti", "H100", 2 * 1024**3, 12 << 20)


def test_a_new_definition_pairs_with_the_old_one_new_to_old() -> None:
    # Reduce(blocks=1056) (series 3) retired, Reduce(blocks=132) (series 8) started.
    assert pairs([(8, REDUCE)], [(3, REDUCE)]) == {8: 3}


def test_nothing_started_or_nothing_retired_pairs_nothing() -> None:
    assert pairs([], []) == {}
    assert pairs([(8, REDUCE)], []) == {}
    assert pairs([], [(3, REDUCE)]) == {}


def test_every_part_of_the_key_must_be_equal() -> None:
    # A size changed is not the same workload launched another way: other bytes, no pair.
    resized = (*REDUCE[:-1], 8 << 20)
    assert pairs([(8, resized)], [(3, REDUCE)]) == {}
    # Nor another GPU or timing method.
    assert pairs([(8, (*REDUCE[:4], "H200", *REDUCE[5:]))], [(3, REDUCE)]) == {}
    assert pairs([(8, (*REDUCE[:3], "events", *REDUCE[4:]))], [(3, REDUCE)]) == {}


def test_two_started_for_one_retired_is_no_pair() -> None:
    # Which of the two new definitions the old one became is unknown.
    assert pairs([(8, REDUCE), (9, REDUCE)], [(3, REDUCE)]) == {}


def test_an_ambiguous_key_leaves_the_other_keys_pairs_alone() -> None:
    started = [(8, REDUCE), (9, REDUCE), (10, GEMM)]
    retired = [(3, REDUCE), (4, GEMM)]
    assert pairs(started, retired) == {10: 4}


def test_pairs_reads_its_inputs_once() -> None:
    # Iterables, not lists: a generator of rows from a query is enough.
    started = ((i, key) for i, key in [(8, REDUCE), (10, GEMM)])
    retired = ((i, key) for i, key in [(4, GEMM), (3, REDUCE)])
    assert pairs(started, retired) == {8: 3, 10: 4}
