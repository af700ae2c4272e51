"""``wfbench sweep``: a case timed over a range of sizes in one GPU worker, from a bundle built with its sizes.

Every size is one request to the executor's worker (:class:`~wfbench_core.gpu.messages.RunPoint`) and is checked
and timed exactly as a case of a run is (:func:`wfbench_core.gpu.case_run.run_case`: correctness first, at the case's
check size and at this size, then interleaved pairs over placements, the same statistics), under the same
supervisor, deadlines and yardsticks. The worker is replaced only where a point ends in ERROR.

**Launch-bound**: a point whose events-mode timing has a side within
:data:`~wfbench_core.gpu.plausibility.LAUNCH_BOUND_FACTOR` of the run's launch floor (an empty kernel timed the
same way) timed the host's launch rate there, not the kernel. Both sides are marked per point, and the point is
timed again in graph mode (its launches replayed as a CUDA graph), which is the figure the curve shows; the
events timing is kept beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from wfbench_core import SUITE_VERSION, __version__
from wfbench_core.case import Case
from wfbench_core.compiling.bundle import BundleManifest, utcnow
from wfbench_core.compiling.prepare import Prepared, prepare_all
from wfbench_core.errors import WfbenchError
from wfbench_core.gpu import messages as msg
from wfbench_core.gpu.nvml import mark_host
from wfbench_core.gpu.plausibility import launch_bound_sides
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import TIMING_EVENTS, TIMING_GRAPH, CaseResult
from wfbench_core.record.sweep_record import SWEEP_KIND, SWEEP_SCHEMA, SweepPoint, SweepResult, write_sweep
from wfbench_core.run.executor import InProcess, Supervisor

if TYPE_CHECKING:
    from wfbench_core.discover.registry import Registry

__all__ = ["Progress", "plan", "sweep", "sweep_axis"]  # internal, not the plugin API

Progress = Callable[[str], None]


def sweep_axis(case: Case, points: Sequence[Mapping[str, int]]) -> str:
    """The size parameter a sweep's plot follows: the first one its sizes name (declared, else the case's
    canonical order) whose value changes over the points."""
    declared = [k for s in (case.sweep.sizes if case.sweep is not None else ()) for k in s]
    order = list(dict.fromkeys([*declared, *case.sizes["canonical"]]))
    varying = [k for k in order if len({p.get(k) for p in points}) > 1]
    return (varying or order)[0]


def plan(bundle: Path, registry: Registry, case_ids: Iterable[str], given: Sequence[Mapping[str, int]] | None = None
         ) -> tuple[BundleManifest, dict[str, list[int]], dict[str, Prepared]]:
    """The bundle's manifest, the points of each case to time (indices into its sweep in the bundle: those of
    ``given`` sizes, completed as the case completes them, else all) and each case's plan; checked against the
    installed cases, no GPU needed."""
    case_ids = list(case_ids)
    manifests, by_case = prepare_all(bundle, registry, case_ids, load=False)
    if len(manifests) > 1:
        raise WfbenchError(f"{bundle} is a base/head bundle; a sweep times one warpforthc: build one with "
                           f"'wfbench build --sweep --warpforthc PATH'")
    out: dict[str, Prepared] = {}
    indices: dict[str, list[int]] = {}
    for cid in case_ids:
        prep = by_case.get(cid, {}).get("")
        if prep is None or prep.entry is None:
            raise WfbenchError(f"{cid}: bundle {bundle} did not build it (see its manifest's failures)")
        if not prep.entry.sweep:
            raise WfbenchError(f"{cid}: bundle {bundle} holds no sweep sizes of it; build it with "
                               f"'wfbench build --sweep -c {cid}'")
        out[cid] = prep
        held = [dict(p.sizes) for p in prep.entry.sweep]
        try:
            wanted = prep.case.sweep_points(given) if given else held
        except ValueError as exc:
            raise WfbenchError(str(exc)) from None
        missing = [w for w in wanted if w not in held]
        if missing:
            raise WfbenchError(f"{cid}: bundle {bundle} holds no point at {_sizes_text(missing[0])}; it holds "
                               f"{'; '.join(_sizes_text(h) for h in held)} (build it with these sizes)")
        indices[cid] = [held.index(w) for w in wanted]
    return next(iter(manifests.values())), indices, out


def _sizes_text(sizes: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())


def sweep(bundle: Path, *, registry: Registry, case_ids: Sequence[str], request: ExecuteRequest = ExecuteRequest(),
          progress: Progress = lambda line: None, out: Callable[[str], Path] | None = None,
          given: Sequence[Mapping[str, int]] | None = None, graph_where_launch_bound: bool = True
          ) -> list[SweepResult]:
    """Sweep every case of ``case_ids`` over the sizes the bundle holds for it (or those of them ``given``), in
    one worker; one :class:`SweepResult` per case. With ``out`` (case id -> path), each sweep's file is rewritten
    after every point, marked incomplete until its last one."""
    manifest, indices, plans = plan(bundle, registry, case_ids, given)
    t_start = time.perf_counter()
    if getattr(registry, "recipe", None) is None:
        supervisor: Supervisor = InProcess(bundle, request, progress, registry)
    else:
        supervisor = Supervisor(bundle, request, progress, registry)
    results = []
    try:
        supervisor.upcoming = []  # the worker compiles a sweep's CUDA ahead at its first point, not the case's own
        ready = supervisor.start(copy=True)
        env = ready.environment
        progress(f"GPU {env.gpu_name} ({ready.arch}), driver {env.driver_version}; CUDA side: {ready.cuda.kind} "
                 f"{ready.cuda.version} {' '.join(ready.cuda.flags)}")
        for cid, prep in plans.items():
            head = SweepResult(
                kind=SWEEP_KIND, sweep_schema=SWEEP_SCHEMA, wfbench_version=__version__, suite_version=SUITE_VERSION,
                created=utcnow(), case_id=cid, case_version=prep.case.version, fingerprint=prep.case.fingerprint(),
                axis=sweep_axis(prep.case, [prep.entry.sweep[i].sizes for i in indices[cid]] if prep.entry else []),
                protocol=request.protocol, environment=env, warpforthc=manifest.warpforthc, cuda_compiler=ready.cuda,
                points=(), source=manifest.source, complete=False)
            results.append(_sweep_case(supervisor, prep, indices[cid], head, request, progress,
                                       out(cid) if out else None, graph_where_launch_bound, t_start))
    finally:
        supervisor.close()
    return results


def _sweep_case(supervisor: Supervisor, prep: Prepared, indices: list[int], head: SweepResult,
                request: ExecuteRequest, progress: Progress, path: Path | None, graph: bool,
                t_start: float) -> SweepResult:
    """The points ``indices`` of one case's sweep, in that order; the file rewritten after each."""
    cid = prep.case.id
    points: list[SweepPoint] = []
    mode = request.protocol.timing_mode
    assert prep.entry is not None
    for index in indices:
        bundled = prep.entry.sweep[index]
        at = {"": Prepared(prep.case.at_sizes(bundled.sizes), prep.plugin, {})}  # names a point that cannot run
        where = ", ".join(f"{k}={v}" for k, v in bundled.sizes.items())
        progress(f"{cid} at {where}: checking and timing ({mode})")
        first = supervisor.run_case(cid, at, msg.RunPoint(cid, index, mode))[0]
        wf_bound, cuda_bound = launch_bound_sides(first.timing) if first.timing is not None else (False, False)
        point = SweepPoint(dict(bundled.sizes), first, wf_bound, cuda_bound)
        progress(_line(cid, where, first, wf_bound, cuda_bound))
        if graph and mode == TIMING_EVENTS and (wf_bound or cuda_bound):
            progress(f"{cid} at {where}: launch-bound in events mode; timing it again in graph mode")
            again = supervisor.run_case(cid, at, msg.RunPoint(cid, index, TIMING_GRAPH))[0]
            progress(_line(cid, where, again, False, False))
            point = attrs.evolve(point, result=again, events=first.timing)
        points.append(point)
        if path is not None:
            write_sweep(_snapshot(head, points, t_start, complete=False), path)
    done = _snapshot(head, points, t_start, complete=True)
    if path is not None:
        write_sweep(done, path)
    return done


def _snapshot(head: SweepResult, points: list[SweepPoint], t_start: float, *, complete: bool) -> SweepResult:
    return attrs.evolve(head, points=tuple(points), complete=complete, wall_s=time.perf_counter() - t_start,
                        environment=mark_host(head.environment, [p.result for p in points]))


def _line(cid: str, where: str, r: CaseResult, wf_bound: bool, cuda_bound: bool) -> str:
    if r.timing is None:
        return f"{cid} at {where}: {r.status.upper()}: {r.message}"
    t = r.timing
    bound = [name for name, b in (("WarpForth", wf_bound), ("CUDA", cuda_bound)) if b]
    return (f"{cid} at {where}: WF {t.warpforth.median_us:.2f} us, CUDA {t.cuda.median_us:.2f} us, gap {t.gap:.3f}x "
            f"[{t.timing_mode}, {r.status}]" + (f"; launch-bound: {', '.join(bound)}" if bound else ""))
