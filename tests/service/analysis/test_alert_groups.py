"""One cause, one headline (issue 36 item 7): alerts grouped on plain data, no database."""

from __future__ import annotations

from dataclasses import replace

from service.analysis.alert_groups import AlertFacts, GroupKey, group_alerts, top_cause

GEMM = AlertFacts(
    id=2,
    repository="acme/kernels",
    branch="main",
    commit="head",
    first_bad_commit=None,
    kernel="gemm_splitk_epilogue",
    cause="access_pattern",
    workload="gemm_fwd",
    change=0.145,
    summary="gemm_fwd 1024³ gelu +14.5%: kernel gemm_splitk_epilogue +128%: uncoalesced access",
)
TRAIN = replace(GEMM, id=3, workload="train_step", change=0.018, summary="train_step +1.8%")


def ids(groups: list) -> list[list[int]]:
    return [[a.id for a in g.alerts] for g in groups]


def test_one_commit_kernel_and_cause_is_one_group_with_one_headline() -> None:
    (group,) = group_alerts([TRAIN, GEMM])
    assert group.key == GroupKey(
        "acme/kernels", "main", "head", "gemm_splitk_epilogue", "access_pattern"
    )
    assert [a.id for a in group.alerts] == [2, 3]  # the largest change first
    assert group.headline == (
        "gemm_splitk_epilogue: uncoalesced global access — slowed gemm_fwd +14.5%, train_step +1.8%"
    )


def test_another_cause_or_kernel_or_commit_is_another_group() -> None:
    spills = replace(TRAIN, cause="spills")
    assert ids(group_alerts([GEMM, spills])) == [[3], [2]]  # the newest alert's group first
    (lone,) = group_alerts([spills])
    assert lone.headline == "gemm_splitk_epilogue: register spills — slowed train_step +1.8%"
    assert ids(group_alerts([GEMM, replace(TRAIN, kernel="gemm_main")])) == [[3], [2]]
    assert ids(group_alerts([GEMM, replace(TRAIN, commit="later")])) == [[3], [2]]
    assert ids(group_alerts([GEMM, replace(TRAIN, branch="release")])) == [[3], [2]]
    assert ids(group_alerts([GEMM, replace(TRAIN, repository="acme/other")])) == [[3], [2]]


def test_alerts_bisected_to_one_first_bad_commit_are_one_group() -> None:
    """Found at different heads (two pushes, or a push and a later run), bisected to the same
    commit: one change. An alert found at that commit itself joins them."""
    a = replace(GEMM, commit="push-head", first_bad_commit="culprit")
    b = replace(TRAIN, commit="later-head", first_bad_commit="culprit")
    at_culprit = replace(GEMM, id=4, commit="culprit", workload="gemm_bwd", change=0.05)
    (group,) = group_alerts([a, b, at_culprit])
    assert group.key.commit == "culprit" and [x.id for x in group.alerts] == [2, 4, 3]
    # Bisected elsewhere: not the same change, though found at the same head.
    c = replace(TRAIN, commit="push-head", first_bad_commit="other")
    assert ids(group_alerts([a, c])) == [[3], [2]]


def test_alerts_without_a_ranked_cause_stay_alone() -> None:
    bare = [replace(GEMM, kernel=None, cause=None), replace(TRAIN, kernel=None, cause=None)]
    groups = group_alerts(bare)
    assert ids(groups) == [[3], [2]]
    assert [g.key.cause for g in groups] == [None, None]
    assert groups[0].headline == "train_step +1.8%"  # the alert's own summary
    assert group_alerts([replace(GEMM, summary="", cause=None)])[0].headline == "gemm_fwd +14.5%"


def test_a_workload_twice_in_a_group_is_told_apart_by_its_parameters() -> None:
    big = replace(GEMM, described="gemm_fwd 4096³ gelu")
    small = replace(GEMM, id=5, change=0.08, described="gemm_fwd 1024³ gelu")
    (group,) = group_alerts([big, small, TRAIN])
    assert group.headline.endswith(
        "slowed gemm_fwd 4096³ gelu +14.5%, gemm_fwd 1024³ gelu +8.0%, train_step +1.8%"
    )


def test_the_top_cause_is_the_attributions_first() -> None:
    attribution = {
        "causes": [
            {"kind": "access_pattern", "kernel": "gemm_splitk_epilogue", "workload_share": 0.67},
            {"kind": "dram", "kernel": "gemm_main", "workload_share": 0.2},
        ]
    }
    assert top_cause(attribution) == ("gemm_splitk_epilogue", "access_pattern")
    for none in ({}, {"causes": []}, {"causes": [{"kind": "dram"}]}, {"causes": "?"}):
        assert top_cause(none) is None
