"""The trends page (/trends, /trends.json, /trends.csv): one metric of the chosen series along a
branch; which series the URL chooses, their histories, markers and CSV."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import asdict, dataclass
from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from dashboards.format import fmt_pct, fmt_value, series_label
from dashboards.model import TrendLine, TrendMarker, TrendPoint
from dashboards.trend import trend_figure
from service.core.errors import NotFound, Unprocessable
from service.pages.render import html_page, json_twin
from service.pages.trend_query import TrendQuery, TrendQueryDep
from service.schemas.document import params_key
from service.store.alerts.places import alert_markers
from service.store.history.series import histories_data
from service.store.reads import dashboard_reads as store
from service.store.reads.queries import check_branch, repository_named
from service.web.deps import SessionDep

router = APIRouter(tags=["pages"])
MAX_LINES = 8
MIN_POINTS = 2


@dataclass
class TrendView:
    data: dict[str, Any]
    lines: list[TrendLine]
    histories: list[dict[str, Any]]  # m.SeriesHistory's shape, datetimes as such


def trend_view(session: Session, q: TrendQuery) -> TrendView:
    """Resolve the choices (defaults: newest repository and branch, duration) and read."""
    repos = store.repositories(session)
    if not repos:
        return TrendView(_data(q, {}, 0, [], "No results yet: post a run to see trends."), [], [])
    q.repository = q.repository or store.newest_repository(session)
    repo = repository_named(session, q.repository or "")
    q.branch = q.branch or store.newest_branch(session, repo.id)
    branches = sorted(store.repository_branches(session, repo.id))
    if q.branch:
        check_branch(session, repo.id, repo.name, q.branch)
    metrics = store.metrics(session, repo.id) or [q.metric]
    if not store.has_metric(session, repo.id, q.metric):
        raise NotFound(f"no series of {repo.name} measures {q.metric!r}; "
                            f"its metrics: {', '.join(metrics)}")  # fmt: skip
    q.scale = q.scale or ("value" if q.log else "change")
    if q.log and q.scale == "change":
        raise Unprocessable("a log axis shows values: use scale=value with log=1")
    options = store.series_options(session, repo.id, q.metric)
    if q.series:
        chosen = store.series_rows(session, q.series)
        if any(s.repository_id != repo.id for s in chosen) or len(chosen) != len(set(q.series)):
            raise NotFound(f"not every series in {q.series} exists in {repo.name}")
        matching = len(chosen)
    else:
        picked = [
            o.id
            for o in options
            if (not q.workload or o.workload in q.workload)
            and (not q.kernel or o.kernel in q.kernel)
            and (not q.fingerprint or o.fingerprint == q.fingerprint)
        ]
        matching = len(picked)
        chosen = store.series_rows(session, picked[:MAX_LINES])
    names = environment_names(store.gpu_names(session, repo.id))
    choices = {
        "repositories": repos,
        "branches": branches,
        "metrics": metrics,
        "workloads": sorted({o.workload for o in options}),
        "kernels": sorted({o.kernel for o in options}),
        "fingerprints": sorted({o.fingerprint for o in options}),
        # What a person knows an environment by: its GPU (and the fingerprint where two share one)
        "environments": {f: names.get(f, f[:8]) for f in sorted({o.fingerprint for o in options})},
    }
    branch = q.branch or ""
    histories = histories_data(session, chosen, repo.name, branch, q.points)
    _join_redefined(session, histories, repo.name, branch, q.points)
    starts = [h["points"][0]["committed_at"] for h in histories if h["points"]]
    alerts = alert_markers(session, [s.id for s in chosen], branch, min(starts)) if starts else []
    several = len({s.fingerprint for s in chosen}) > 1  # name each line's environment
    # A workload whose timing method changed is two series: the lines say which is which.
    methods = len({s.method for s in chosen}) > 1
    lines = [_line(h, alerts, several and names, methods) for h in histories]
    most = max((len(h["points"]) for h in histories), default=0)
    message = None
    if not chosen:
        message = f"No {q.metric} series match these choices in {repo.name}."
    elif most < MIN_POINTS:
        message = (
            f"Not enough history yet: the chosen series have {most} result(s) on {branch}; "
            f"a trend needs at least {MIN_POINTS} commits."
        )
    data = _data(q, choices, matching, histories, message)
    data["alerts"] = [
        # `commit`: where the regression came in (a bisection's first bad commit, else the
        # measured one); `measured_at`: the measured head where a bisection moved it
        {"id": a[0], "series_id": a[1], "commit": a[2], "committed_at": a[3], "state": a[4],
         "summary": a[5], "measured_at": a[6]}
        for a in alerts
    ]  # fmt: skip
    return TrendView(data, lines, histories)


def _join_redefined(
    session: Session, histories: list[dict[str, Any]], repository: str, branch: str, points: int
) -> None:
    """A series that took over from another (its workload redefined in place) is drawn as one
    line with the retired series' points before the takeover, and says where (`redefined`)."""
    by_id = {h["series"]["id"]: h for h in histories}
    for new_id, old_id, sha, at in store.redefinitions(session, list(by_id), branch):
        (before,) = histories_data(session, store.series_rows(session, [old_id]), repository,
                                   branch, points) or [{"points": []}]  # fmt: skip
        h = by_id[new_id]
        earlier = [p for p in before["points"] if p["committed_at"] < at]
        h["points"] = (earlier + h["points"])[-points:]
        h["redefined"] = {"from_series": old_id, "params": before.get("series", {}).get("params"),
                          "commit": sha, "committed_at": at}  # fmt: skip


def _data(
    q: TrendQuery,
    choices: dict[str, Any],
    matching: int,
    histories: list[dict[str, Any]],
    message: str | None,
) -> dict[str, Any]:
    return {
        "selection": asdict(q),
        "choices": choices,
        "matching_series": matching,
        "shown_series": len(histories),
        "max_lines": MAX_LINES,
        "message": message,
        # As the model writes them (times as ISO text ending in Z), for the template and twin.
        "series": orjson.loads(orjson.dumps(histories, option=orjson.OPT_UTC_Z)),
        "alerts": [],
    }


def environment_names(gpus: list[tuple[str, str]]) -> dict[str, str]:
    """fingerprint -> the GPU's name, with the fingerprint's start where names repeat."""
    count: dict[str, int] = {}
    for _, gpu in gpus:
        count[gpu] = count.get(gpu, 0) + 1
    return {
        f: (gpu or "unknown GPU") + (f" [{f[:8]}]" if count[gpu] > 1 or not gpu else "")
        for f, gpu in gpus
    }


def _line(
    h: dict[str, Any], alerts: list[tuple], environments: dict[str, str], method: bool
) -> TrendLine:
    s = h["series"]
    unit = s["unit"]
    label = series_label(s["workload"], s["params"], s["kernel"])
    if environments:
        label += f" [{environments.get(s['fingerprint'], s['fingerprint'][:8])}]"
    if method:
        label += f" ({s['method']})"
    markers = [
        TrendMarker(
            kind="change_point",
            sha=cp["commit"],
            committed_at=cp["committed_at"],
            text=f"change point {fmt_pct(cp['change'])}: {fmt_value(cp['before_median'], unit)}"
            f" → {fmt_value(cp['after_median'], unit)}",
            value=cp["after_median"],
        )
        for cp in h["change_points"]
    ]
    markers += [
        TrendMarker(
            kind="alert",
            sha=sha,
            committed_at=at,
            text=f"alert #{aid} ({state}): {text}"
            + (f"; bisected here from {head[:10]}" if head else ""),
        )
        for aid, sid, sha, at, state, text, head in alerts
        if sid == s["id"]
    ]
    if "redefined" in h:
        r = h["redefined"]
        was = series_label(s["workload"], r["params"] or {}, s["kernel"])
        text = f"redefined in place: before, {was}"
        markers.append(TrendMarker("redefined", r["commit"], r["committed_at"], text))
    points = [
        TrendPoint(
            sha=p["commit"],
            committed_at=p["committed_at"],
            author=p["author_name"],
            subject=p["subject"],
            median=p["statistics"]["median"],
            q1=p["statistics"]["q1"],
            q3=p["statistics"]["q3"],
        )
        for p in h["points"]
    ]
    return TrendLine(label=label, unit=unit, points=points, markers=markers)


CSV_COLUMNS = (
    "series_id", "repository", "workload", "params", "kernel", "metric", "unit", "method",
    "fingerprint", "branch", "commit", "committed_at", "author", "subject", "run_id",
    "n", "median", "q1", "q3", "min", "max", "mean", "stdev",
)  # fmt: skip


def trend_csv(histories: list[dict[str, Any]]) -> str:
    """One row per point of every series shown, oldest first within each series."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for h in histories:
        s = h["series"]
        for p in h["points"]:
            st = p["statistics"]
            writer.writerow(
                [
                    s["id"], s["repository"], s["workload"], params_key(s["params"]), s["kernel"],
                    s["metric"], s["unit"], s["method"], s["fingerprint"], h["branch"], p["commit"],
                    p["committed_at"].isoformat(), p["author_name"], p["subject"], p["run_id"],
                    st["n"], st["median"], st["q1"], st["q3"], st["min"], st["max"], st["mean"],
                    st["stdev"],
                ]
            )  # fmt: skip
    return out.getvalue()


@router.get("/trends.json")
def trends_json(session: SessionDep, q: TrendQueryDep) -> Response:
    """The trends page's data: the resolved choices and each chosen series' history."""
    return json_twin(trend_view(session, q).data)


@router.get("/trends.csv", response_class=Response)
def trends_csv(session: SessionDep, q: TrendQueryDep) -> Response:
    """The trends page's points as CSV, one row per series and commit."""
    view = trend_view(session, q)
    name = f"kernelwatch-{q.repository or 'none'}-{q.branch or 'none'}-{q.metric}"
    # A header is latin-1 and the name is quoted: anything else in a branch or metric becomes _.
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return Response(
        trend_csv(view.histories),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


@router.get("/trends", response_class=HTMLResponse, include_in_schema=False)
def trends_page(request: Request, session: SessionDep, q: TrendQueryDep) -> HTMLResponse:
    """Trends: one metric of the chosen series along a branch."""

    def build() -> dict[str, Any]:
        view = trend_view(session, q)
        drawable = view.data["message"] is None
        relative = q.scale == "change"
        figures = {"trend": trend_figure(view.lines, metric=q.metric, log_y=q.log,
                                         relative=relative)}  # fmt: skip
        return {
            "title": "Trends",
            "json_url": f"/trends.json?{q.query_string()}",
            "csv_url": f"/trends.csv?{q.query_string()}",
            "q": q,
            "data": view.data,
            "figures": figures if drawable else {},
        }

    return html_page(request, "trends.html", build)
