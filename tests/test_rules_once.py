"""Rules written once (issue 48): each of these lives in one module, and a second copy of it
anywhere else in the product fails here, read from the source. (Finding nvcc is written twice
on purpose: by the runner's doctor, and by the default suite, which a user's repository carries
without the runner: kernels/ imports nothing of ours.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("service", "dashboards", "runner", "kernels")

# (what, its one home, a pattern of the source a copy of it would carry)
RULES = [
    ("the repository-name pattern", "service/schemas/names.py", re.escape(r"[\w.-]+(/[\w.-]+)*")),
    ("the git branch rule", "service/schemas/names.py", re.escape(r"(?!.*@\{)")),
    ("the workload's params key", "service/schemas/document.py",
     r"json\.dumps\(params,\s*sort_keys=True"),
    ("the alert states", "service/models/alert.py", r"[\"']suspected[\"'],\s*[\"']open[\"']"),
    ("a pull request's branch", "service/models/pull_request.py", r"[\"']pull/[\"']"),
    ("the suite's AdamW settings", "kernels/reference.py", r"[\"']beta2[\"']:\s*0\.999"),
    ("the runner's digest of a key", "runner/profile/launch_key.py",
     r"sha256\(json\.dumps\(value, sort_keys=True"),
]  # fmt: skip


def sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text()
        for top in PRODUCT
        for path in sorted((ROOT / top).rglob("*.py"))
    }


@pytest.mark.parametrize(("what", "home", "pattern"), RULES, ids=[r[0] for r in RULES])
def test_a_rule_has_one_home(what: str, home: str, pattern: str) -> None:
    found = sorted(path for path, text in sources().items() if re.search(pattern, text))
    assert found == [home], f"{what} is written in {found}, only {home} may hold it"


def test_every_list_of_verdicts_follows_their_one_order() -> None:
    """The overview, the badges, the commit status and the pull request's comment list
    verdicts worst first, in dashboards.style's order (the status and the comment disagreed)."""
    from dashboards.style import VERDICT_ORDER
    from service.integrations.github.comments import SHOWN
    from service.integrations.github.statuses import COUNT_ORDER
    from service.models.verdict import VERDICTS

    assert set(VERDICT_ORDER) == set(VERDICTS)
    for listed in (COUNT_ORDER, SHOWN):
        known = [v for v in listed if v in VERDICT_ORDER]
        assert known == sorted(known, key=VERDICT_ORDER.index), listed
