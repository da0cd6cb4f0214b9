"""POST /api/v1/runs over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import json

import pytest
from sqlalchemy import Engine, func, select, update

from service.models import Base, NcuKernel, Run
from service.schemas.digest import legacy_digest
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, example_document
from tests.live_server import LiveServer


def row_counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            t.name: conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in Base.metadata.sorted_tables
        }


def test_example_document_is_stored_whole(server: LiveServer, engine: Engine) -> None:
    with server.client(ADMIN_TOKEN) as client:
        answer = client.post("/api/v1/runs", json=example_document())
    assert answer.status_code == 201, answer.text
    assert answer.json()["stored"] is True
    assert answer.json()["results"] == 3
    counts = row_counts(engine)
    assert counts["runs"] == 1
    assert counts["results"] == 3
    assert counts["run_workloads"] == 3
    assert counts["correctness_outcomes"] == 3
    assert counts["build_resources"] == 10
    assert counts["ncu_kernels"] == 9  # kernels captured, over the 3 workloads
    with engine.connect() as conn:
        captures = conn.execute(select(NcuKernel.metrics, NcuKernel.findings)).all()
    assert sum(len(metrics) for metrics, _ in captures) == 117
    assert sum(len(findings) for _, findings in captures) == 50
    assert counts["timeline_entries"] == 6
    assert counts["series"] == 3
    assert counts["verdicts"] == 3


def test_same_run_twice_is_stored_once(server: LiveServer, engine: Engine) -> None:
    doc = example_document()
    with server.client(ADMIN_TOKEN) as client:
        first = client.post("/api/v1/runs", json=doc)
        second = client.post("/api/v1/runs", json=doc)
    assert first.status_code == 201
    assert second.status_code == 200
    assert second.json()["stored"] is False
    assert "already stored" in second.json()["detail"]
    assert row_counts(engine)["runs"] == 1
    assert row_counts(engine)["results"] == 3


def test_run_stored_under_the_older_digest_is_still_recognised(
    server: LiveServer, engine: Engine
) -> None:
    # Runs stored before the orjson digest carry the json module's; a retry must still match.
    doc = example_document()
    with server.client(ADMIN_TOKEN) as client:
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        with engine.begin() as conn:
            conn.execute(update(Run).values(document_sha256=legacy_digest(doc)))
        again = client.post("/api/v1/runs", json=doc)
        changed = copy.deepcopy(doc)
        changed["log_tail"] = "something else"
        conflict = client.post("/api/v1/runs", json=changed)
    assert again.status_code == 200, again.text
    assert again.json()["stored"] is False
    assert conflict.status_code == 409
    assert row_counts(engine)["runs"] == 1


def test_same_run_id_with_other_contents_is_a_conflict(server: LiveServer, engine: Engine) -> None:
    doc = example_document()
    changed = copy.deepcopy(doc)
    changed["workloads"][0]["timing"]["processes"][0]["samples"][0] *= 2
    for key in ("n", "median", "q1", "q3", "min", "max", "mean"):
        changed["workloads"][0]["timing"].pop(key)
    with server.client(ADMIN_TOKEN) as client:
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        answer = client.post("/api/v1/runs", json=changed)
    assert answer.status_code == 409
    assert "different contents" in answer.json()["detail"]
    assert row_counts(engine)["results"] == 3


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_runs_need_the_admin_token(server: LiveServer, engine: Engine, token: str | None) -> None:
    with server.client(token) as client:
        answer = client.post("/api/v1/runs", json=example_document())
    assert answer.status_code == 401
    assert answer.json()["detail"]
    assert row_counts(engine)["runs"] == 0


def _timing(doc: dict) -> dict:
    return doc["workloads"][0]["timing"]


def _drop_summary(doc: dict) -> None:
    for key in ("n", "median", "q1", "q3", "min", "max", "mean"):
        _timing(doc).pop(key, None)


def _nan_sample(doc: dict) -> None:
    _timing(doc)["processes"][1]["samples"][2] = float("nan")


def _inf_sample(doc: dict) -> None:
    _timing(doc)["processes"][0]["samples"][0] = float("inf")


def _negative_sample(doc: dict) -> None:
    _drop_summary(doc)
    _timing(doc)["processes"][0]["samples"][3] = -1.5


def _too_many_samples(doc: dict) -> None:
    _drop_summary(doc)
    _timing(doc)["processes"] = [{"samples": [1.0] * 40_000} for _ in range(3)]


def _unknown_time_unit(doc: dict) -> None:
    _timing(doc)["unit"] = "fortnights"


def _unknown_ncu_unit(doc: dict) -> None:
    metrics = doc["workloads"][1]["ncu"]["kernels"][0]["metrics"]
    metrics["dram__bytes_read.sum"]["unit"] = "furlong"


def _missing_commit(doc: dict) -> None:
    del doc["commit"]


def _missing_sha(doc: dict) -> None:
    del doc["commit"]["sha"]


def _bad_sha(doc: dict) -> None:
    doc["commit"]["sha"] = "not-a-sha"


def _naive_time(doc: dict) -> None:
    doc["commit"]["committed_at"] = "2026-11-18T14:03:27"


def _summary_lies(doc: dict) -> None:
    _timing(doc)["median"] *= 1.5


def _timing_on_failed_check(doc: dict) -> None:
    failed = doc["workloads"][2]
    failed["status"] = "correctness_failed"
    failed["correctness"].update(passed=False, error_norm=0.5)


def _passed_above_tolerance(doc: dict) -> None:
    doc["workloads"][0]["correctness"]["error_norm"] = 1.0


def _bad_branch(doc: dict) -> None:
    doc["branch"] = "feature/../../etc"


def _duplicate_workload(doc: dict) -> None:
    doc["workloads"].append(copy.deepcopy(doc["workloads"][0]))


def _unknown_field(doc: dict) -> None:
    doc["workloads"][0]["timming"] = {}


INVALID = {
    "nan sample": (_nan_sample, "processes[1].samples[2]"),
    "inf sample": (_inf_sample, "processes[0].samples[0]"),
    "negative sample": (_negative_sample, "processes[0].samples[3]"),
    "too many samples": (_too_many_samples, "120000 samples"),
    "unknown time unit": (_unknown_time_unit, "fortnights"),
    "unknown ncu unit": (_unknown_ncu_unit, "furlong"),
    "missing commit": (_missing_commit, "commit"),
    "missing sha": (_missing_sha, "commit.sha"),
    "bad sha": (_bad_sha, "commit.sha"),
    "naive time": (_naive_time, "committed_at"),
    "summary disagrees": (_summary_lies, "timing.median"),
    "timing on failed check": (_timing_on_failed_check, "timing given"),
    "passed above tolerance": (_passed_above_tolerance, "above tolerance"),
    "bad branch": (_bad_branch, "branch"),
    "duplicate workload": (_duplicate_workload, "appears twice"),
    "unknown field": (_unknown_field, "timming"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_documents_are_refused_and_store_nothing(
    server: LiveServer, engine: Engine, case: str
) -> None:
    mutate, expected = INVALID[case]
    doc = example_document()
    mutate(doc)
    body = json.dumps(doc)  # json.dumps writes NaN/Infinity, as a careless runner would
    with server.client(ADMIN_TOKEN) as client:
        answer = client.post(
            "/api/v1/runs", content=body, headers={"Content-Type": "application/json"}
        )
    assert answer.status_code == 422, answer.text
    assert expected in answer.json()["detail"], answer.json()
    assert sum(row_counts(engine).values()) == 0


def test_body_over_the_limit_is_413(settings, engine: Engine) -> None:
    from service.api.app import create_app

    settings.max_body_bytes = 4096
    with LiveServer(create_app(settings, migrate=False)) as live, live.client(ADMIN_TOKEN) as c:
        answer = c.post("/api/v1/runs", json=example_document())
        streamed = c.post(
            "/api/v1/runs",
            content=iter([b"{" + b" " * 3000, b" " * 3000 + b"}"]),
            headers={"Content-Type": "application/json"},
        )
    assert answer.status_code == 413
    assert "4096-byte limit" in answer.json()["detail"]
    assert streamed.status_code == 413
    assert sum(row_counts(engine).values()) == 0


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", "empty body"),
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1, 2]", "document"),
    ],
)
def test_unreadable_bodies_are_422(server: LiveServer, body: bytes, expected: str) -> None:
    with server.client(ADMIN_TOKEN) as client:
        answer = client.post(
            "/api/v1/runs", content=body, headers={"Content-Type": "application/json"}
        )
    assert answer.status_code == 422
    assert expected in answer.json()["detail"]


def test_timings_in_other_units_are_stored_in_microseconds(
    server: LiveServer, engine: Engine
) -> None:
    doc = document(commit="c1", medians={"k": 250.0})
    t = doc["workloads"][0]["timing"]
    t["unit"] = "ms"
    for p in t["processes"]:
        p["samples"] = [s / 1000 for s in p["samples"]]
    with server.client(ADMIN_TOKEN) as client:
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        metrics = client.get(f"/api/v1/commits/{doc['commit']['sha']}/metrics").json()
    metric = metrics["workloads"][0]["kernels"][0]["metrics"][0]
    assert metric["unit"] == "us"
    assert metric["statistics"]["median"] == pytest.approx(250.0, rel=0.01)


def test_get_run_answers_what_was_stored(server: LiveServer) -> None:
    doc = example_document()
    with server.client(ADMIN_TOKEN) as client:
        client.post("/api/v1/runs", json=doc)
        run = client.get(f"/api/v1/runs/{doc['run_id']}")
        missing = client.get("/api/v1/runs/does-not-exist")
    assert run.status_code == 200
    assert run.json()["commit"] == doc["commit"]["sha"]
    assert run.json()["results"] == 3
    assert run.json()["environment"]["gpu"]["sm_count"] == 132
    assert missing.status_code == 404
