"""Which series of a run are controls of its common offset (service.evaluation.verdicts.controls),
on runs stored through a real server on SQLite and PostgreSQL: a workload is a control where the
head and every run of its baseline captured the same kernels with the same determinants (the
runner's digest beside ncu's launch); one baseline run that differs, a kernel more, a kernel
whose capture does not say what determined it, no capture at all or no baseline run make it
none: an offset is only taken out where the run proves it."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.evaluation.verdicts.controls import controls
from service.models import Run, RunWorkload
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer

# Per workload (its `act`), the kernels its capture holds with their runner digests (None: the
# capture does not say); a workload left out has no capture.
Captured = dict[str, list[tuple[str, str | None]]]
WORKLOADS = ("same", "moved_once", "extra_kernel", "undigested", "uncaptured")


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def post(client: httpx.Client, label: str, line: list[str], captured: Captured) -> None:
    doc = document(commit=label, parents=line[:1], ancestors=line, minutes=len(line),
                   medians=dict.fromkeys(WORKLOADS, 100.0), seed=len(line))  # fmt: skip
    for w in doc["workloads"]:
        kernels = captured.get(w["params"]["act"])
        if kernels is None:
            continue
        w["ncu"] = {"status": "ok", "kernels": [
            {"kernel": kernel, "determinants": digest and sha256(digest),
             "metrics": {"launch__grid_size": {"value": 132.0, "unit": ""}}}
            for kernel, digest in kernels
        ]}  # fmt: skip
    assert client.post("/api/v1/runs", json=doc).status_code == 201


def test_a_control_is_captured_alike_in_the_head_and_every_baseline_run(
    client: httpx.Client, engine: Engine
) -> None:
    def runs(moved: str, extra: list) -> Captured:
        # The undigested capture is alike in every run: unproven all the same.
        return {"same": [("same", "a")], "moved_once": [("moved_once", moved)],
                "extra_kernel": [("extra_kernel", "a"), *extra],
                "undigested": [("undigested", None)]}  # fmt: skip

    post(client, "c0", [], runs("a", []))
    post(client, "c1", ["c0"], runs("b", []))
    post(client, "c2", ["c1", "c0"], runs("a", [("helper", "h")]))
    with Session(engine) as session:
        first, second, head = session.scalars(select(Run.id).order_by(Run.id)).all()
        rows = session.execute(
            select(RunWorkload.params, RunWorkload.params_key).where(RunWorkload.run_id == head)
        )
        keys = {params["act"]: key for params, key in rows}

        def among(base: list[int]) -> set[str]:
            return controls(session, head, {act: ("gemm_fwd", keys[act], base) for act in keys})

        assert among([first, second]) == {"same"}
        # Against the first run alone the workload the second run captured otherwise is one.
        assert among([first]) == {"same", "moved_once"}
        assert among([]) == set()  # no baseline run: nothing proves an offset
