"""The profiling of a CUDA run: kernel timelines (runner.profile.timeline) and one ncu pass
(runner.profile.ncu_pass) over the workloads that need one.

Measured on the H100 (default suite, 38 workloads, 66 launches): a pass over every workload
takes ~35 s, ~0.43 s a profiled launch (18 replay passes of ~21 ms each; a trivial kernel's
launch costs 0.38 s: benchmarks/ncu_cost.py --floor); so only the workloads whose code changed
since an earlier commit on this host are profiled, the others keep that commit's section, and
where only some kernels of a workload changed, the pass profiles only their launches and keeps
the others' entries (runner.profile.reuse). `Profiling` decides that as soon as the build is
done and starts the pass then (it warms up while correctness runs); `capture` hands it the
workloads that passed. $KERNELWATCH_NCU_REUSE=0 profiles every workload.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.profile import ncu, timeline
from runner.profile import reuse as profile_reuse
from runner.profile.ncu_pass import LAUNCHES_PER_WORKLOAD, SECTIONS, NcuPass
from runner.profile.reuse import ProfileReuse, merge


class Profiling:
    """The ncu side of one run: which workloads keep an earlier section (`reuse`), which are
    profiled and with what kernel filter, and their pass, started at once (where `start`)."""

    def __init__(
        self,
        suite: Any,
        infos: list[dict[str, Any]],
        env: dict[str, str],
        reuse: ProfileReuse | None = None,
        start: bool = True,
    ) -> None:
        self.suite, self.env, self.reuse = suite, env, reuse
        found = {i["id"]: f for i in infos if reuse and (f := reuse.lookup(i))}
        self.found = found
        self.whole = {wid: f.section for wid, f in found.items() if not f.stale}
        self.partial = {wid: f for wid, f in found.items() if f.stale}
        self.planned = [i["id"] for i in infos if i["id"] not in self.whole]
        stale = sorted({k for f in self.partial.values() for k in f.stale})
        every_one_partial = all(wid in self.partial for wid in self.planned)
        self.pattern = kernel_filter(stale) if every_one_partial else None
        self.started: NcuPass | None = None
        self.imported: list[str] | None = None  # the worktree's Python its pass imported
        # Workload id -> what changed in its launch since the last one stored (its kernels'
        # code, launch configuration, inputs): the run times these against its base.
        self.relaunched: dict[str, str] = {}
        if start and self.planned:
            self.started = NcuPass(suite, len(self.planned), env, self.pattern)

    def capture(
        self,
        records: list[Any],
        progress: Any,
        log: Callable[[str], None],
        check_stop: Callable[[], None],
    ) -> None:
        """Fill `record.ncu` of `records` (workloads that passed correctness)."""
        progress.stage("ncu", len(records))
        started = time.monotonic()
        by_launch = self._reused_by_launch([r for r in records if r.info["id"] not in self.whole])
        self.found.update(by_launch)
        self.whole.update({wid: f.section for wid, f in by_launch.items()})
        idle = {r.info["id"]: no_kernel_section(r) for r in records if ran_no_kernel(r)}
        ids = [r.info["id"] for r in records if r.info["id"] not in self.whole | idle]
        self._say_why(records, ids, log)
        sections = self._profile(ids, log, check_stop)
        for record in records:
            wid = record.info["id"]
            record.ncu = self.whole.get(wid) or idle.get(wid) or sections[wid]
            if self.reuse and wid in sections:
                self.reuse.store(record.info, sections[wid], self.imported, _signature(record))
            if self.reuse:
                found = self.found.get(wid)
                at = found.commit if found is not None and wid in self.whole else self.reuse.commit
                record.ncu = self.reuse.stamp(record.info, record.ncu, at, _signature(record))
            progress.advance(wid)
        counts = {s: sum(x["status"] == s for x in sections.values()) for s in ("ok", "failed")}
        partial = sum(wid in self.partial for wid in ids)
        only = f" ({partial} of them only their changed kernels)" if partial else ""
        launched = f", {len(by_launch)} of them by their launch" if by_launch else ""
        reused = sum(r.info["id"] in self.whole for r in records)
        none = f", {len(idle)} not (their launch ran no kernel)" if idle else ""
        log(f"ncu: {counts['ok']} ok, {counts['failed']} failed of {len(ids)} workloads profiled"
            f"{only}, {reused} reused (unchanged since an earlier commit{launched}){none} in "
            f"{time.monotonic() - started:.1f} s")  # fmt: skip
        if self.reuse:
            self.reuse.prune()

    def _reused_by_launch(self, records: list[Any]) -> dict[str, Any]:
        """The sections of workloads whose launch's signature (its kernels' code, launch
        configuration, inputs and scalars: runner.profile.launch_key) is one stored earlier,
        whichever files the commit changed."""
        if self.reuse is None:
            return {}
        found = {r.info["id"]: self.reuse.lookup_launch(r.info, _signature(r)) for r in records}
        return {wid: f for wid, f in found.items() if f is not None}

    def _say_why(self, records: list[Any], ids: list[str], log: Callable[[str], None]) -> None:
        """Why the workloads about to be profiled are, where their signatures tell: what
        changed since the last one stored, or why a workload has no signature."""
        if self.reuse is None or not ids:
            return
        wanted, lines = set(ids), []
        for record in records:
            if record.info["id"] not in wanted:
                continue
            signature = _signature(record) or {}
            if "unavailable" in signature:
                why = f"no launch signature: {signature['unavailable']}"
            else:
                why = "; ".join(self.reuse.why_profiled(record.info, signature))
                if why:
                    self.relaunched[record.info["id"]] = why
            if why:
                lines.append(f"{record.info['id']} ({why})")
        if lines:
            more = f" and {len(lines) - 5} more" if len(lines) > 5 else ""
            log(f"ncu: profiling {', '.join(lines[:5])}{more}")

    def _profile(
        self, ids: list[str], log: Callable[[str], None], check_stop: Callable[[], None]
    ) -> dict[str, dict[str, Any]]:
        """The sections of `ids`, from the pass started ahead where there is one. With a kernel
        filter (every planned workload a partial match), the changed kernels' entries are merged
        into the earlier sections; a workload whose changed kernels that pass missed (a name
        ncu's filter did not match) is profiled whole in a second pass."""
        if not ids:
            self.close()
            return {}
        started = self.started or NcuPass(self.suite, len(ids), self.env, self.pattern, ids=ids)
        self.started = None
        sections = self._measured_here(started.finish(ids, log, check_stop))
        self.imported = started.imported
        if self.pattern is None:
            return sections
        missed = []
        for wid in ids:
            merged = merge(self.partial[wid], sections[wid])
            if merged is not None:
                sections[wid] = merged
            elif sections[wid]["status"] != "unavailable":
                missed.append(wid)
        if missed:
            log(f"ncu: the changed kernels of {len(missed)} workloads were not profiled by the "
                "filtered pass; profiling them whole")  # fmt: skip
            again = NcuPass(self.suite, len(missed), self.env, ids=missed)
            sections.update(self._measured_here(again.finish(missed, log, check_stop)))
            imported = self.imported
            self.imported = None if imported is None or again.imported is None else sorted(
                {*imported, *again.imported})  # fmt: skip
        return sections

    def _measured_here(self, sections: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each kernel entry of a pass's sections marked as profiled at this commit, before a
        merge mixes them with an earlier commit's entries and the cache keeps them."""
        if self.reuse is None:
            return sections
        at = self.reuse.commit
        return {
            wid: {**s, "kernels": [{**k, "profiled_at": at} for k in s.get("kernels", [])]}
            for wid, s in sections.items()
        }

    def close(self) -> None:
        """End the pass started ahead if it was never used (a run stopped or failed first)."""
        if self.started is not None:
            self.started.close()
            self.started = None

    def __enter__(self) -> Profiling:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ran_no_kernel(record: Any) -> bool:
    """Whether the record's check saw its launch run no kernel, only copies or sets
    (runner.worker.launch_record.NoKernel): ncu, which profiles kernels, has nothing to do."""
    return bool((_signature(record) or {}).get("no_kernel"))


def no_kernel_section(record: Any) -> dict[str, Any]:
    return ncu.to_document_section([], "unavailable", _signature(record)["unavailable"])


def _signature(record: Any) -> Any:
    """The launch signature a record's check took (runner.run.report.WorkloadRecord), if any."""
    return getattr(record, "signature", None)


def capture_timelines(
    suite: Any,
    records: list[Any],
    env: dict[str, str],
    progress: Any,
    log: Callable[[str], None],
    check_stop: Callable[[], None],
) -> None:
    """Fill `record.timeline` of the workloads the suite traces (those the first timing process
    did not trace already are traced now)."""
    traced = [r for r in records if suite.wants_timeline(r.info)]
    if traced:
        progress.stage("timeline", len(traced))
        timeline.capture(suite, traced, env, lambda wid: progress.advance(wid), log)
        sources = sorted({r.timeline["source"] for r in traced if r.timeline})
        log(f"timeline: {sum(bool(r.timeline) for r in traced)} of {len(traced)} ({sources})")
        check_stop()


def kernel_filter(kernels: list[str]) -> str | None:
    """ncu's --kernel-name regex (matched against the function name) for the launches of
    `kernels` (names as the export prints them), or None where one has no plain identifier."""
    names = sorted({profile_reuse.search_name(k) for k in kernels})
    if not names or not all(re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
        return None
    return f"(^|::)({'|'.join(names)})(<|$)"


def reuse_for(
    cache: Path, worktree: Path, build_dir: Path, commit: str, environment: dict[str, Any]
) -> ProfileReuse:
    """Reuse of earlier commits' sections for this run (runner.profile.reuse), unless turned
    off (then it only stamps each kernel entry with what determined it); the key holds this
    pass's configuration and the runner's own code."""
    package = Path(__file__).parents[1]  # the runner's code, every subpackage of it
    runner_code = {p.relative_to(package).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                   for p in sorted(package.rglob("*.py"))}  # fmt: skip
    config = {"metrics": list(ncu.METRICS), "sections": list(SECTIONS),
              "launches": LAUNCHES_PER_WORKLOAD, "runner": runner_code}  # fmt: skip
    return ProfileReuse(
        cache, worktree, build_dir, commit, environment, config, keep=profile_reuse.enabled()
    )
