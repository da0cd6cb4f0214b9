"""Every string of a request body has a documented maximum (its JSON Schema's maxLength, or a
fixed form: an enum, a date-time, a sha), below what the database can store: a result document
with every string at its maximum, in characters of three UTF-8 bytes where the field allows them,
is stored on SQLite and PostgreSQL (whose columns and index entries are bounded), and one
character more answers 422 naming the field, storing nothing. Parameters, kernel names and job
labels, which sit in index entries, have limits of their own."""

from __future__ import annotations

import copy
import random
import re
import zlib
from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy import Engine, func, select

from service.integrations.github.events import PushPayload
from service.models import Run
from service.schemas.alerts import AlertPatch
from service.schemas.document import MAX_PARAMS_KEY_BYTES, MAX_TEXT, RunDocument, params_key
from service.schemas.jobs import AttemptBody, FailureBody, JobCreate, RunnerHealth, RunnerRegister
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, example_document
from tests.live_server import LiveServer


def wide(count: int, seed: int = 0) -> str:
    """`count` random CJK characters: three bytes of UTF-8 each (six in JSON's escapes), and
    not compressible, as PostgreSQL would compress a repeated one in an index entry."""
    rng = random.Random(seed)
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(count))


FIXED = {"commit.sha", "commit.parents[]", "commit.ancestors[]", "pull_request.merge_base",
         "workloads[].ncu.kernels[].profiled_at"}  # exactly 40 hex digits  # fmt: skip
# A pull request's run is on branch pull/<number>, which the 255-character branch of the
# document at its maximum is not: these go to their maximum in a document of their own.
PULL = {"pull_request.base_ref"}
# Checked against a list of known names, so their maximum is only ever reached by refusal.
NAMED = {"workloads[].timing.unit", "workloads[].ncu.kernels[].metrics{}.unit"}
ASCII = {  # their pattern admits these characters only
    "run_id": "r",
    "repository.name": "a",
    "environment.fingerprint": "f",
    "workloads[].name": "w",
    "build.kernels[].kernel": "k",
    "workloads[].kernels[]": "k",
    "workloads[].timing.kernel": "k",
    "workloads[].timeline.kernels[].kernel": "k",
    "workloads[].ncu.kernels[].kernel": "k",
    "workloads[].compiled[].kernel": "k",
    "workloads[].ncu.kernels[].determinants": "d",  # 64 hex digits
}
# Parameters are bounded as a whole (their canonical JSON is part of an index entry): tested apart.
WHOLE = {"workloads[].params{}", "workloads[].params{}[]"}


def string_fields(model: type[BaseModel] = RunDocument) -> dict[str, dict[str, Any]]:
    """Every string of `model`'s JSON Schema by path ("a.b[]", "a{}" for a dict's values,
    "a{key}" for its keys) with its schema (a model inside itself, RunDocument's paired_base,
    not again)."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    found: dict[str, dict[str, Any]] = {}

    def walk(node: dict[str, Any], path: str, seen: frozenset[str]) -> None:
        while "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[-1]]
        for option in node.get("anyOf", []):
            walk(option, path, seen)
        kind = node.get("type")
        if kind == "string":
            found[path] = node
        elif kind == "array" and "items" in node:
            walk(node["items"], f"{path}[]", seen)
        elif kind == "object" and node.get("title") not in seen:
            inside = seen | {node.get("title", "")}
            for name, sub in node.get("properties", {}).items():
                walk(sub, f"{path}.{name}" if path else name, inside)
            if isinstance(node.get("additionalProperties"), dict):
                walk(node["additionalProperties"], f"{path}{{}}", inside)
            if "propertyNames" in node:
                walk({"type": "string", **node["propertyNames"]}, f"{path}{{key}}", inside)

    walk(schema, "", frozenset())
    return found


def tokens(path: str) -> list[str]:
    """ "a.b[].c{key}" -> ["a", "b", "[]", "c", "{key}"]."""
    return re.findall(r"[^.\[\]{}]+|\[\]|\{\}|\{key\}", path)


def put(node: Any, parts: list[str], make: Any) -> None:
    """Set every string at `parts` under `node` to make(i) (i: the element's index, so that
    values that must differ do); an empty list of strings gets one, a dict a new entry."""
    head, rest = parts[0], parts[1:]
    if head == "[]":
        if not rest:
            node[:] = [make(i) for i in range(max(1, len(node)))]
            return
        assert node, f"the base document has no element at {parts}"
        for i, element in enumerate(node):
            # Each element's strings its own (a kernel named twice in a list is refused).
            put(element, rest, lambda j, i=i: make(i * 1000 + j))
    elif head == "{key}":
        assert node, f"the base document has no entry at {parts}"
        node[make(0)] = copy.deepcopy(next(iter(node.values())))
    elif head == "{}":
        if not rest:
            node["long"] = make(0)
            return
        for value in node.values():
            put(value, rest, make)
    elif not rest:
        node[head] = make(0)
    else:
        node.setdefault(head, {})
        put(node[head], rest, make)


def base() -> dict[str, Any]:
    """A document with an element in every list and dict the paths go through."""
    doc = document(commit="limits")
    example = example_document()
    doc["workloads"] = example["workloads"]
    doc["build"]["kernels"] = [
        {"kernel": f"k{i}", "arch": "sm_90", "registers": 32, "shared_bytes": 0,
         "spill_stores_bytes": 0, "spill_loads_bytes": 0}
        for i in range(2)
    ]  # fmt: skip
    doc["runner"]["labels"] = {"gpu": "h100"}
    for w in doc["workloads"]:
        w.setdefault("params", {}).setdefault("m", 1)
        w.setdefault("choices", {"gemm_kernel": "num_warps: 4"})
        triton = {"kernel": "matmul_kernel", "compiler": "triton", "num_warps": 4,
                  "config": "BLOCK_M: 64", "target": "cuda:90"}  # fmt: skip
        w.setdefault("compiled", [triton])
        if w.get("ncu"):
            for k in w["ncu"]["kernels"]:
                k.setdefault("findings", []).append({"rule": "SOL", "description": "x"})
        if not w.get("timeline"):
            w["timeline"] = {"source": "cupti", "kernels": [{"kernel": "t", "calls": 1,
                             "total_ns": 10.0, "share": 1.0}]}  # fmt: skip
    return doc


def pull_request_run(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as a pull request's run (on pull/7, compared with a merge base on main)."""
    doc["branch"] = "pull/7"
    doc["pull_request"] = {"number": 7, "base_ref": "main", "merge_base": "b" * 40}
    return doc


def text(path: str, length: int, index: int) -> str:
    """`length` characters, wide ones where the field admits them, ending in `index`."""
    tag = str(index)
    if path in ASCII:
        return ASCII[path] * (length - len(tag)) + tag
    return wide(length - len(tag), seed=zlib.crc32(f"{path}:{index}".encode())) + tag


def limited() -> dict[str, int]:
    """The paths filled to their maximum, with it."""
    out = {}
    for path, node in string_fields().items():
        if "enum" in node or "const" in node or node.get("format") == "date-time":
            continue
        if path in FIXED | NAMED | WHOLE | PULL:
            continue
        out[path] = node["maxLength"]
    return out


def bounded(node: dict[str, Any]) -> bool:
    fixed = "enum" in node or "const" in node or node.get("format") == "date-time"
    return fixed or "maxLength" in node


@pytest.mark.parametrize(
    "model",
    [JobCreate, AttemptBody, FailureBody, RunnerRegister, RunnerHealth, AlertPatch, PushPayload],
)
def test_every_string_of_a_request_body_has_a_documented_maximum(model: type[BaseModel]) -> None:
    fields = string_fields(model)
    assert fields
    assert [p for p, node in fields.items() if not bounded(node)] == []


def test_every_string_of_the_document_has_a_documented_maximum() -> None:
    fields = string_fields()
    assert len(fields) > 50  # the walk reached the whole document
    assert [p for p, node in fields.items() if not bounded(node)] == []
    for path in FIXED:
        assert fields[path]["minLength"] == fields[path]["maxLength"] == 40, path
    assert set(ASCII) | WHOLE | NAMED <= set(fields)


def test_a_document_with_every_string_at_its_maximum_is_stored(
    server: LiveServer, engine: Engine
) -> None:
    doc = base()
    for path, length in limited().items():
        put(doc, tokens(path), lambda i, p=path, n=length: text(p, n, i))
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post("/api/v1/runs", json=doc)
        assert answer.status_code == 201, answer.text[:2000]
        stored = admin.get(f"/api/v1/runs/{doc['run_id']}").json()
    assert stored["branch"] == doc["branch"] and len(stored["branch"]) == 255
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 1


def test_one_character_over_is_refused_naming_the_field(server: LiveServer, engine: Engine) -> None:
    over = {**limited(), **{p: string_fields()[p]["maxLength"] for p in NAMED | FIXED | PULL}}
    with server.client(ADMIN_TOKEN) as admin:
        for path, length in over.items():
            doc = pull_request_run(base()) if path.startswith("pull_request.") else base()
            put(doc, tokens(path), lambda i, p=path, n=length + 1: text(p, n, i))
            answer = admin.post("/api/v1/runs", json=doc)
            assert answer.status_code == 422, (path, answer.text[:500])
            loc = str(answer.json()["errors"][0]["loc"])
            named = [t for t in tokens(path) if t[0] not in "[{"]
            assert all(name in loc for name in named), (path, loc)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 0


def test_a_pull_requests_strings_at_their_maximum_are_stored(
    server: LiveServer, engine: Engine
) -> None:
    doc = pull_request_run(base())
    for path in PULL:
        put(doc, tokens(path), lambda i, p=path: text(p, string_fields()[p]["maxLength"], i))
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post("/api/v1/runs", json=doc)
        assert answer.status_code == 201, answer.text[:2000]
    with engine.connect() as conn:
        stored = conn.execute(select(Run.base_ref, Run.pull_request)).one()
    assert len(stored.base_ref) == 255 and stored.pull_request == 7


@pytest.mark.parametrize("extra", [0, 1])
def test_parameters_are_bounded_as_a_whole(server: LiveServer, engine: Engine, extra: int) -> None:
    doc = document(commit="params")
    params = doc["workloads"][0]["params"]
    params["note"] = ""
    room = MAX_PARAMS_KEY_BYTES - len(params_key(params))
    params["note"] = wide(room // 6) + "x" * (room % 6 + extra)  # JSON escapes each in 6 bytes
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post("/api/v1/runs", json=doc)
    if extra:
        assert answer.status_code == 422, answer.text
        assert "workloads" in str(answer.json()["errors"][0]["loc"])
        assert "canonical JSON" in answer.json()["detail"]
    else:
        assert answer.status_code == 201, answer.text[:1000]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 1 - extra


def test_a_kernel_name_is_printable_ascii(server: LiveServer, engine: Engine) -> None:
    """A kernel's name sits in index entries (a series' lookup, a build's kernels): 1000 wide
    characters would be 3000 bytes, over PostgreSQL's ~2700 per entry."""
    doc = document(commit="kernel")
    doc["workloads"][0]["timing"]["kernel"] = wide(1000)
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post("/api/v1/runs", json=doc)
        assert answer.status_code == 422, answer.text[:500]
        assert "timing" in str(answer.json()["errors"][0]["loc"])
        doc["workloads"][0]["timing"]["kernel"] = "void gemm<float, 128>(float const*, float*)"
        assert admin.post("/api/v1/runs", json=doc).status_code == 201
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 1


@pytest.mark.parametrize(
    ("labels", "why"),
    [
        ({f"l{i}": "v" for i in range(11)}, "11 labels; at most 10"),
        ({f"n{i}": wide(190, i) for i in range(2)}, "bytes as k=v,k=v; at most 1000"),
    ],
)
def test_job_labels_fit_the_claim_key(
    server: LiveServer, engine: Engine, labels: dict[str, str], why: str
) -> None:
    """A job's required labels are stored as one key of at most 1000 bytes (indexed), and a
    runner matches at most 10 labels: more, or a longer key, is refused, not a 500."""
    body = {"repository": "acme/kernels", "sha": "a" * 40, "labels": labels}
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post("/api/v1/jobs", json=body)
        assert answer.status_code == 422, answer.text[:500]
        assert why in answer.json()["detail"] and "labels" in answer.text
        fitting = dict(list(labels.items())[:1])
        assert admin.post("/api/v1/jobs", json={**body, "labels": fitting}).status_code == 201


def test_the_cli_refuses_labels_over_the_limit() -> None:
    from service.cli_admin import CliError, parse_labels

    assert parse_labels("gpu=h100,cuda=13") == {"gpu": "h100", "cuda": "13"}
    with pytest.raises(CliError, match="at most 10"):
        parse_labels(",".join(f"l{i}=v" for i in range(11)))


def test_a_pushed_commit_message_is_clipped_not_refused() -> None:
    """GitHub's push is never refused for a long commit message: it is kept to MAX_TEXT."""
    sha = "b" * 40
    push = PushPayload.model_validate(
        {
            "ref": "refs/heads/main",
            "after": sha,
            "repository": {"full_name": "acme/kernels"},
            "head_commit": {"id": sha, "message": "m" * (MAX_TEXT + 10)},
        }
    )
    assert push.head_commit is not None and len(push.head_commit.message) == MAX_TEXT
