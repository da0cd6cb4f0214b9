"""`kernelwatch runner-token`, `enqueue` and `repo runner-labels` (service.cli_admin) on SQLite and
PostgreSQL: what each prints and stores, what it refuses, and its helpers on their own."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from service import cli
from service.cli_admin import CliError, parse_labels, runner_name, validated
from service.core.settings import Settings
from service.models import Job, Repository, Runner
from service.schemas.jobs import JobCreate

SHA = "a" * 40
URL = "https://example.com/acme/kernels.git"
Kernelwatch = Callable[..., tuple[int, str, str]]


@pytest.fixture
def kernelwatch(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Kernelwatch:
    """`kernelwatch ARGS...` in this process on the test's database: (exit code, out, err)."""
    for name in os.environ:
        if name.startswith("KERNELWATCH_") and name != "KERNELWATCH_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)
    monkeypatch.setenv("KERNELWATCH_DATABASE_URL", settings.effective_database_url)
    monkeypatch.setenv("KERNELWATCH_DATA_DIR", str(settings.data_dir))
    # Not the default (3): the jobs must carry the setting the command was started with.
    monkeypatch.setenv("KERNELWATCH_MAX_ATTEMPTS", "5")

    def run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def runners(engine: Engine) -> dict[str, Runner]:
    with Session(engine) as session:
        return {r.name: r for r in session.scalars(select(Runner))}


def jobs(engine: Engine) -> list[Job]:
    with Session(engine) as session:
        return list(session.scalars(select(Job).order_by(Job.id)))


def repositories(engine: Engine) -> dict[str, Repository]:
    with Session(engine) as session:
        return {r.name: r for r in session.scalars(select(Repository))}


def counts(engine: Engine) -> list[int]:
    with Session(engine) as session:
        return [session.scalar(select(func.count()).select_from(m)) or 0
                for m in (Job, Repository, Runner)]  # fmt: skip


def test_a_token_is_shown_once_and_stored_as_its_digest_with_its_labels(
    kernelwatch: Kernelwatch, engine: Engine
) -> None:
    code, out, err = kernelwatch("runner-token", "create", "h100-a", "--labels",
                                 " gpu=h100 , arch=sm_90 ")  # fmt: skip
    assert code == 0
    (token,) = out.splitlines()
    assert token.startswith("kwr_") and len(token) > 40
    assert err == (
        "runner 'h100-a' (labels: {'gpu': 'h100', 'arch': 'sm_90'}): this token is shown once; "
        "give it to `kernelwatch-runner agent --token`\n"
    )
    runner = runners(engine)["h100-a"]
    assert runner.labels == {"gpu": "h100", "arch": "sm_90"}
    assert runner.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert runner.revoked_at is None
    code, _, err = kernelwatch("runner-token", "create", "cpu-b")
    assert code == 0 and "runner 'cpu-b' (labels: none)" in err
    assert runners(engine)["cpu-b"].labels == {}


def test_rotate_replaces_the_token_and_keeps_the_labels_unless_new_ones_are_given(
    kernelwatch: Kernelwatch, engine: Engine
) -> None:
    _, first, _ = kernelwatch("runner-token", "create", "h100-a", "--labels", "gpu=h100")
    code, _, err = kernelwatch("runner-token", "create", "h100-a", "--labels", "gpu=h200")
    assert code == 1
    assert err == (
        "kernelwatch: runner 'h100-a' already has a token; revoke it first or pass --rotate\n"
    )
    before = runners(engine)["h100-a"]
    assert before.labels == {"gpu": "h100"}
    assert before.token_hash == hashlib.sha256(first.strip().encode()).hexdigest()
    code, second, _ = kernelwatch("runner-token", "create", "h100-a", "--rotate")
    assert code == 0 and second != first
    rotated = runners(engine)["h100-a"]
    assert rotated.token_hash == hashlib.sha256(second.strip().encode()).hexdigest()
    assert (rotated.id, rotated.labels) == (before.id, {"gpu": "h100"})
    code, _, _ = kernelwatch("runner-token", "create", "h100-a", "--rotate", "--labels", "gpu=h200")
    assert code == 0
    assert runners(engine)["h100-a"].labels == {"gpu": "h200"}
    assert counts(engine) == [0, 0, 1]


def test_a_revoked_token_is_marked_and_a_new_one_needs_no_rotate(
    kernelwatch: Kernelwatch, engine: Engine
) -> None:
    kernelwatch("runner-token", "create", "h100-a")
    assert kernelwatch("runner-token", "revoke", "h100-a") == (
        0, "revoked the token of runner 'h100-a'\n", ""
    )  # fmt: skip
    assert runners(engine)["h100-a"].revoked_at is not None
    code, out, _ = kernelwatch("runner-token", "create", "h100-a")
    assert code == 0
    again = runners(engine)["h100-a"]
    assert again.revoked_at is None
    assert again.token_hash == hashlib.sha256(out.strip().encode()).hexdigest()


def test_a_runner_is_stored_under_its_name_as_a_document_gives_it(
    kernelwatch: Kernelwatch, engine: Engine
) -> None:
    """Runner names are checked as a result document's (surrounding blanks dropped): the name
    stored must be that one, or the runner's own runs would be filed under a second runner."""
    code, _, err = kernelwatch("runner-token", "create", "  gpu-1  ")
    assert code == 0 and err.startswith("runner 'gpu-1' (labels: none)")
    assert list(runners(engine)) == ["gpu-1"]
    assert kernelwatch("runner-token", "revoke", "gpu-1")[:2] == (
        0, "revoked the token of runner 'gpu-1'\n"
    )  # fmt: skip


def test_a_repositorys_label_sets_queue_one_job_each(
    kernelwatch: Kernelwatch, engine: Engine
) -> None:
    code, out, _ = kernelwatch("repo", "runner-labels", "acme/kernels", "gpu=h100",
                               "gpu=h200,arch=sm_90", "--clone-url", URL)  # fmt: skip
    assert code == 0
    assert out == (
        "acme/kernels: each pushed commit queues 2 job(s): "
        "[{'gpu': 'h100'}, {'gpu': 'h200', 'arch': 'sm_90'}]\n"
    )
    repo = repositories(engine)["acme/kernels"]
    assert (repo.clone_url, repo.runner_label_sets) == (
        URL, [{"gpu": "h100"}, {"gpu": "h200", "arch": "sm_90"}]
    )  # fmt: skip
    # Upper-case hex is the same commit: stored as the runners will look it up.
    code, out, _ = kernelwatch("enqueue", "--repo", "acme/kernels", "--sha", "AB" * 20,
                               "--branch", "dev")  # fmt: skip
    assert code == 0 and out.startswith("queued job(s) 1, 2 for acme/kernels@dev ")
    queued = jobs(engine)
    assert [(j.commit_sha, j.branch, j.kind, j.state) for j in queued] == [
        ("ab" * 20, "dev", "run", "queued")
    ] * 2
    assert [(j.required_labels, j.label_key) for j in queued] == [
        ({"gpu": "h100"}, "gpu=h100"), ({"arch": "sm_90", "gpu": "h200"}, "arch=sm_90,gpu=h200")
    ]  # fmt: skip
    assert {(j.repository_id, j.max_attempts, j.summary) for j in queued} == {
        (repo.id, 5, "queued by hand")
    }
    # --labels asks for one job of those labels instead of the repository's sets.
    code, out, _ = kernelwatch("enqueue", "--repo", "acme/kernels", "--sha", SHA,
                               "--labels", "gpu=h100,runner=gpu-1")  # fmt: skip
    assert (code, out) == (0, f"queued job(s) 3 for acme/kernels@main {SHA[:12]}\n")
    assert jobs(engine)[-1].required_labels == {"gpu": "h100", "runner": "gpu-1"}


def test_enqueue_registers_a_new_repository_with_its_clone_url(
    kernelwatch: Kernelwatch, engine: Engine
) -> None:
    code, out, _ = kernelwatch("enqueue", "--repo", "acme/new", "--sha", SHA, "--clone-url", URL)
    assert (code, out) == (0, f"queued job(s) 1 for acme/new@main {SHA[:12]}\n")
    repo = repositories(engine)["acme/new"]
    assert (repo.clone_url, repo.runner_label_sets) == (URL, [{}])
    (job,) = jobs(engine)
    assert (job.repository_id, job.required_labels, job.label_key) == (repo.id, {}, "")


def test_runner_labels_without_sets_means_any_runner_and_keeps_the_clone_url(
    kernelwatch: Kernelwatch, engine: Engine
) -> None:
    kernelwatch("repo", "runner-labels", "acme/kernels", "gpu=h100", "--clone-url", URL)
    code, out, _ = kernelwatch("repo", "runner-labels", "acme/kernels")
    assert (code, out) == (0, "acme/kernels: each pushed commit queues 1 job(s): [{}]\n")
    repo = repositories(engine)["acme/kernels"]
    assert (repo.clone_url, repo.runner_label_sets) == (URL, [{}])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["enqueue", "--repo", "acme/k", "--sha", SHA, "--clone-url", "/srv/git/k"],
         "kernelwatch: --clone-url: clone URL '/srv/git/k' is a local path; runners clone only "),
        (["repo", "runner-labels", "acme/k", "--clone-url", "ext::sh -c touch% /tmp/x"],
         "kernelwatch: --clone-url: clone URL 'ext::sh -c touch% /tmp/x' uses 'ext'; "),
        (["repo", "runner-labels", "acme/k", "--clone-url", "file:///etc"],
         "kernelwatch: --clone-url: clone URL 'file:///etc' is a local path"),
        (["repo", "runner-labels", "acme/k", "gpu=h100,,", "--clone-url", URL],
         "kernelwatch: labels 'gpu=h100,,': an empty label between commas; write k=v,k=v"),
        (["runner-token", "revoke", "  "], "kernelwatch: invalid runner name '  ': "),
    ],
)  # fmt: skip
def test_refused_arguments_store_nothing(
    kernelwatch: Kernelwatch, engine: Engine, args: list[str], said: str
) -> None:
    """A clone URL a runner's git must never be handed (a path, git's `ext::` command) is
    refused where it enters, with the deployment's setting named; nothing is registered."""
    code, out, err = kernelwatch(*args)
    assert (code, out) == (1, "")
    (line,) = err.splitlines()
    assert line.startswith(said), line
    assert counts(engine) == [0, 0, 0]


def test_parse_labels_reads_key_value_pairs() -> None:
    assert parse_labels("") == parse_labels("   ") == {}
    assert parse_labels(" gpu=h100 ,arch=sm_90") == {"gpu": "h100", "arch": "sm_90"}
    assert parse_labels("opts=a=b,empty=") == {"opts": "a=b", "empty": ""}
    assert parse_labels(",".join(f"k{i}=v" for i in range(10))) == {f"k{i}": "v" for i in range(10)}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("gpu=h100,,arch=sm_90", "labels 'gpu=h100,,arch=sm_90': an empty label between commas"),
        ("gpu", "label 'gpu' is not key=value"),
        ("=h100", "label '=h100' is not key=value"),
        ("gpu = h100", "label 'gpu = h100' is not key=value"),
        (f"{'k' * 101}=v", f"label '{'k' * 101}=v' is not key=value"),
        (f"gpu={'v' * 201}", f"label 'gpu={'v' * 201}' is not key=value"),
        (",".join(f"k{i}=v" for i in range(11)), "11 labels; at most 10"),
        (",".join(f"{'k' * 99}{i}={'v' * 200}" for i in range(4)),
         "the labels take 1207 bytes as k=v,k=v; at most 1000"),
    ],
)  # fmt: skip
def test_parse_labels_refuses_what_a_job_cannot_carry(text: str, said: str) -> None:
    with pytest.raises(CliError) as refused:
        parse_labels(text)
    assert said in str(refused.value)


def test_runner_name_is_a_documents_runner_name() -> None:
    assert runner_name("  h100-a ") == "h100-a"
    assert runner_name("x" * 200) == "x" * 200
    too_long = r"^invalid runner name 'x{201}': String should have at most 200"
    with pytest.raises(CliError, match=too_long):
        runner_name("x" * 201)
    with pytest.raises(CliError, match=r"^invalid runner name '': String should have at least 1"):
        runner_name("")


def test_validated_names_every_bad_flag_in_one_line() -> None:
    job = validated(JobCreate, repository="acme/k", sha="AB" * 20, branch=None, labels=None)
    assert (job.sha, job.branch, job.labels) == ("ab" * 20, "main", None)
    with pytest.raises(CliError) as refused:
        validated(JobCreate, repository="bad repo", sha="abc", branch="a..b")
    message = str(refused.value)
    assert message.startswith("invalid arguments: --repo: String should match pattern")
    assert "; --sha: String should have at least 40 characters; --branch: " in message
    assert "\n" not in message
    # A value no database can store is the model's, not one field's: named as the arguments'.
    with pytest.raises(CliError) as refused:
        validated(JobCreate, repository="acme/k", sha=SHA, labels={"gpu": "\udcff"})
    assert str(refused.value) == (
        "invalid arguments: arguments: Value error, cannot be stored: $.labels.gpu: "
        "a lone surrogate (not UTF-8)"
    )
