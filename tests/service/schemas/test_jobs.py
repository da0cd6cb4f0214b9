"""The queue's bodies and answers of service/schemas/jobs.py: a label set as the one text jobs
and runners match by, at most 10 labels taking at most 1000 bytes as that text; a job's
repository, sha, branch and clone URL (never one a `git clone` reads as an option); a runner's
environment at most 16 levels deep; a runner saying its host is unhealthy only with a reason;
and the answers built from a job's and a runner's rows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from service.models import Job, Runner
from service.schemas.jobs import (
    MAX_ENVIRONMENT_DEPTH,
    MAX_LABEL_KEY_BYTES,
    MAX_LABELS,
    FailureBody,
    JobCreate,
    JobPublic,
    RunnerHealth,
    RunnerPublic,
    RunnerRegister,
    check_labels,
    label_key,
)

SHA = "ABCDEF0123456789abcdef0123456789abcdef01"
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def messages(model: type, **body: object) -> list[tuple[tuple, str]]:
    with pytest.raises(ValidationError) as refused:
        model.model_validate(body)
    return [(e["loc"], e["msg"].removeprefix("Value error, ")) for e in refused.value.errors()]


def nested(depth: int) -> dict:
    """An environment whose deepest dict is at `depth`, the environment itself at 1."""
    environment: dict = {}
    for _ in range(depth - 1):
        environment = {"x": environment}
    return environment


def test_the_label_key_is_key_ordered_k_equals_v_whatever_the_given_order() -> None:
    assert label_key({"os": "linux", "gpu": "h100", "cuda": 12}) == "cuda=12,gpu=h100,os=linux"
    assert label_key({}) == ""


def test_ten_labels_are_allowed_and_eleven_are_not() -> None:
    ten = {f"l{i}": "v" for i in range(MAX_LABELS)}
    assert check_labels(ten) == ten
    with pytest.raises(ValueError, match=r"^11 labels; at most 10$"):
        check_labels({**ten, "one": "more"})


def test_the_label_key_may_take_1000_bytes_counted_in_utf8() -> None:
    # "k=" plus the value: 998 ASCII characters fill the key; one "é" more is two bytes.
    assert check_labels({"k": "v" * 998}) == {"k": "v" * 998}
    with pytest.raises(ValueError, match="the labels take 1001 bytes as k=v,k=v; at most 1000"):
        check_labels({"k": "v" * 997 + "é"})
    assert MAX_LABEL_KEY_BYTES == 1000


def test_a_job_is_for_main_with_the_repositorys_labels_unless_told() -> None:
    job = JobCreate(repository="acme/kernels", sha=SHA)
    assert (job.sha, job.branch, job.labels, job.clone_url) == (SHA.lower(), "main", None, None)


@pytest.mark.parametrize("url", ["", "https://github.com/acme/kernels.git", "git@host:a/b"])
def test_a_clone_url_may_be_empty_or_any_that_is_no_option(url: str) -> None:
    assert JobCreate(repository="acme/kernels", sha=SHA, clone_url=url).clone_url == url


def test_a_clone_url_git_would_read_as_an_option_is_refused() -> None:
    [(where, _)] = messages(
        JobCreate, repository="acme/kernels", sha=SHA, clone_url="--upload-pack=touch /tmp/x"
    )
    assert where == ("clone_url",)


@pytest.mark.parametrize(
    "labels", [{"gpu model": "h100"}, {"": "x"}, {"k" * 101: "x"}, {"gpu": "x" * 201}]
)
def test_a_label_name_is_a_word_and_a_value_at_most_200_characters(labels: dict) -> None:
    assert messages(JobCreate, repository="acme/kernels", sha=SHA, labels=labels)


def test_a_job_refuses_what_its_door_does_not_know() -> None:
    found = messages(JobCreate, repository="acme/kernels", sha=SHA, priority=1)
    assert [where for where, _ in found] == [("priority",)]


def test_a_runner_environment_16_levels_deep_is_taken_and_17_refused() -> None:
    assert RunnerRegister(environment=nested(MAX_ENVIRONMENT_DEPTH)).environment
    assert messages(RunnerRegister, environment=nested(MAX_ENVIRONMENT_DEPTH + 1)) == [
        (("environment",), "nests deeper than 16 levels")
    ]


def test_lists_count_as_levels_of_an_environment() -> None:
    environment: dict = {"gpus": [[[{}]]]}  # the dict inside three lists is at level 5
    for _ in range(MAX_ENVIRONMENT_DEPTH - 5):
        environment = {"x": environment}
    assert RunnerRegister(environment=environment)
    assert messages(RunnerRegister, environment={"y": environment})


def test_a_runner_registers_with_nothing_but_may_say_its_host_and_labels() -> None:
    runner = RunnerRegister(host="gpu-07", labels={"gpu": "h100"})
    assert (runner.host, runner.labels, runner.environment) == ("gpu-07", {"gpu": "h100"}, {})
    assert RunnerRegister().labels == {}


def test_an_unhealthy_host_must_say_why() -> None:
    assert RunnerHealth(healthy=True).reason == ""
    assert RunnerHealth(healthy=False, reason="nvidia-smi: no devices").reason
    for reason in ("", "  \n"):
        [(_, said)] = messages(RunnerHealth, healthy=False, reason=reason)
        assert said == "reason: say what is wrong with the host (e.g. the failing check)"


def test_the_health_schema_says_what_the_validator_refuses() -> None:
    # A generated client must learn that healthy=false needs a reason that is not blank.
    schema = RunnerHealth.model_json_schema()
    assert schema["if"] == {"properties": {"healthy": {"const": False}}}
    assert schema["then"]["required"] == ["reason"]
    assert schema["then"]["properties"]["reason"]["pattern"] == "\\S"


def test_a_failure_is_final_unless_a_retry_is_asked() -> None:
    failure = FailureBody(attempt_token="t")
    assert (failure.retry, failure.log_tail) == (False, "")
    assert [w for w, _ in messages(FailureBody, attempt_token="")] == [("attempt_token",)]
    assert [w for w, _ in messages(FailureBody, attempt_token="t", log_tail="x" * 65_537)] == [
        ("log_tail",)
    ]


def test_a_jobs_answer_names_its_commit_and_runner() -> None:
    job = Job(
        id=7, commit_sha="a" * 40, branch="main", kind="run", state="running",
        required_labels={"gpu": "h100"}, attempt=2, max_attempts=3, lease_expires_at=NOW,
        created_at=NOW, started_at=NOW, finished_at=None, summary="", failure="", payload={},
    )  # fmt: skip
    public = JobPublic.of(job, "acme/kernels", "gpu-07")
    assert (public.id, public.commit, public.repository, public.runner) == (
        7, "a" * 40, "acme/kernels", "gpu-07",
    )  # fmt: skip
    assert (public.attempt, public.max_attempts, public.required_labels) == (2, 3, {"gpu": "h100"})


def runner(**given: object) -> Runner:
    fields = {"name": "gpu-07", "host": "h", "labels": {}, "reported_labels": {},
              "environment": {}, "last_seen_at": None, "current_job_id": None,
              "revoked_at": None, "unhealthy_since": None, "unhealthy_reason": ""}  # fmt: skip
    return Runner(**{**fields, **given})


def test_a_runner_claims_by_its_tokens_labels_narrowed_by_its_report_and_its_name() -> None:
    public = RunnerPublic.of(
        runner(labels={"gpu": "h100", "os": "linux"}, reported_labels={"gpu": "a100", "x": "1"})
    )
    # A report that differs drops the label; one the token never gave adds nothing.
    assert public.claims_by == {"os": "linux", "runner": "gpu-07"}
    assert public.labels == {"gpu": "h100", "os": "linux"}


def test_a_runners_answer_tells_revoked_and_unhealthy_from_their_times() -> None:
    fine = RunnerPublic.of(runner())
    assert (fine.revoked, fine.healthy, fine.unhealthy_reason) == (False, True, "")
    sick = RunnerPublic.of(
        runner(revoked_at=NOW, unhealthy_since=NOW, unhealthy_reason="GPU fell off the bus",
               reported_labels=None)
    )  # fmt: skip
    assert (sick.revoked, sick.healthy, sick.unhealthy_since) == (True, False, NOW)
    assert (sick.unhealthy_reason, sick.reported_labels) == ("GPU fell off the bus", {})
