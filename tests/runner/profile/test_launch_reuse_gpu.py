"""Issue 33 on a real GPU: sections reused by what each launch ran (runner.profile.launch_key),
through the real pipeline on the default suite's transpose, dropout and AdamW workloads (AdamW's
one launch reads its tensors through a table of their addresses, which differ with every
process): a commit that only edits the module every workload imports re-profiles nothing; one
that changes the transpose kernel re-profiles only its launches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.runner_cost import ROOT, change, snapshot
from runner.run.pipeline import RunRequest, execute

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(900)]
ONLY = r"^transpose\[cols=70,|^dropout\[n=4099,|^adamw\[sizes=1001x"
AUTHOR = "Ada Lovelace <ada@example.com>"


def sections(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    assert doc["status"] == "succeeded", doc["log_tail"][-3000:]
    return {f"{w['name']}{sorted(w['params'].items())}": w["ncu"] for w in doc["workloads"]}


def test_python_edits_keep_every_section_and_a_kernel_edit_reprofiles_its_launches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("cupti")
    monkeypatch.setenv("KERNELWATCH_LAUNCH_SIGNATURES", "1")
    repo = tmp_path / "repo"
    repo.mkdir()
    first = snapshot(ROOT, repo, AUTHOR, "the working tree")

    def run(sha: str) -> dict[str, dict[str, Any]]:
        return sections(execute(RunRequest(source=str(repo), rev=sha, only=ONLY,
                                           cache_dir=tmp_path / "cache")))  # fmt: skip

    base = run(first)
    assert base and all(s["status"] == "ok" for s in base.values()), base
    python_only = change(repo, "kernels/__init__.py", 2, AUTHOR)
    after_python = run(python_only)
    for wid, section in after_python.items():
        assert section["reason"].startswith(f"reused: profiled at commit {first[:12]}"), wid
        assert "launch configuration" in section["reason"], wid
        assert [k["determinants"] for k in section["kernels"]] == [
            k["determinants"] for k in base[wid]["kernels"]]  # fmt: skip
    kernel = change(repo, "kernels/cuda/transpose.cu:transpose_tiled", 3, AUTHOR)
    after_kernel = run(kernel)
    for wid, section in after_kernel.items():
        at = {k["profiled_at"] for k in section["kernels"]}
        assert at == ({kernel} if wid.startswith("transpose") else {first}), (wid, at)
