"""The sweep record: one case timed over a range of sizes (``wfbench sweep``), a result of its own kind.

A sweep is its own series. Its file is not a run result (it has no ``cases`` and no ``schema_version``), so the
one result loader (:func:`wfbench_core.record.results.parse_result`) refuses it, and nothing that reads runs
(the history's series, trends, the geomean, ``export``, ``check``, ``compare``) can take a sweep for a run.

Each :class:`SweepPoint` holds the :class:`~wfbench_core.record.results.CaseResult` of the case at that size,
made by the same worker, checks and timing protocol as a run's (its checks, every raw paired sample and the
statistics of :mod:`wfbench_core.stats`), the timing mode it was timed in, and which side was
launch-bound in events mode (:mod:`wfbench_core.gpu.plausibility`); where the events timing was launch-bound and
the point was timed again in graph mode, the events timing is kept beside it.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from wfbench_core.record.results import (
    FAILING,
    CaseResult,
    CompilerInfo,
    Environment,
    Source,
    Timing,
    TimingProtocol,
    dumps,
    structure,
)

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "SWEEP", "SWEEP_KIND", "SWEEP_SCHEMA", "SweepPoint", "SweepResult", "is_sweep", "load_sweep", "parse_sweep",
    "sweep_problem", "write_sweep",
]

SWEEP_SCHEMA = 1
SWEEP_KIND = "sweep"
SWEEP = "a wfbench sweep"


@attrs.frozen
class SweepPoint:
    """One size of a sweep."""

    sizes: dict[str, int]
    result: CaseResult  # the case at these sizes: checks, timing (timing.timing_mode: how it was timed), status
    launch_bound_wf: bool = False  # in events mode, the side's per-launch time was near the launch floor
    launch_bound_cuda: bool = False
    events: Timing | None = None  # the events-mode timing a graph-mode one replaced (launch-bound there)

    @property
    def timing_mode(self) -> str:
        return self.result.timing.timing_mode if self.result.timing is not None else ""


@attrs.frozen
class SweepResult:
    """One case timed over sizes in one process on one GPU."""

    kind: str
    sweep_schema: int
    wfbench_version: str
    suite_version: int
    created: str  # ISO 8601, UTC
    case_id: str
    case_version: int
    fingerprint: str  # of the case (its check and canonical configurations)
    axis: str  # the size parameter the plot's x axis follows
    protocol: TimingProtocol
    environment: Environment
    warpforthc: CompilerInfo
    cuda_compiler: CompilerInfo
    points: tuple[SweepPoint, ...]
    source: Source = Source()
    wall_s: float = 0.0
    complete: bool = True  # False while the sweep is under way (the file is rewritten after every point)

    @property
    def failed(self) -> list[SweepPoint]:
        return [p for p in self.points if p.result.status in FAILING]


def sweep_problem(sweep: SweepResult) -> str:
    """Why a structured sweep cannot be one wfbench wrote ("" when it can): the run's own rules, per point."""
    from wfbench_core.record.result_rules import _iso_time, case_problem

    if sweep.kind != SWEEP_KIND:
        return f"kind {sweep.kind!r}, not {SWEEP_KIND!r}"
    if not _iso_time(sweep.created):
        return f"'created' is {sweep.created!r}, not an ISO 8601 time"
    if not sweep.points:
        return "no points"
    for p in sweep.points:
        if sweep.axis not in p.sizes:
            return f"a point without the axis parameter {sweep.axis!r}"
        why = case_problem(p.result)
        if why:
            return f"the point at {sweep.axis}={p.sizes[sweep.axis]} has {why}"
    return ""


def parse_sweep(data: str | bytes, where: str = "sweep") -> SweepResult:
    """The one sweep loader: a :class:`SweepResult`, or one line ``WHERE: not a wfbench sweep (why)``."""
    from wfbench_core.errors import WfbenchError
    from wfbench_core.record.fsutil import decode_text, not_a, parse_json

    text = decode_text(data, where, SWEEP, kind="JSON text") if isinstance(data, bytes) else data
    raw = parse_json(text.removeprefix("\ufeff"), where, SWEEP)
    if not isinstance(raw, dict) or raw.get("kind") != SWEEP_KIND:
        raise not_a(where, SWEEP, "no \"kind\": \"sweep\"; a run result is read by the commands that take runs")
    if raw.get("sweep_schema") != SWEEP_SCHEMA:
        raise WfbenchError(f"{where}: a wfbench sweep of schema {raw.get('sweep_schema')!r}; this wfbench reads "
                           f"schema {SWEEP_SCHEMA}; use the wfbench version that wrote it")
    sweep: SweepResult = structure(raw, SweepResult, where, f"not {SWEEP}")
    why = sweep_problem(sweep)
    if why:
        raise not_a(where, SWEEP, why)
    return sweep


def is_sweep(data: bytes) -> bool:
    """Whether a file's bytes are a sweep's (its ``kind``), without judging the rest."""
    import json

    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):  # too deeply nested to be a sweep; the run reader says why
        return False
    return isinstance(raw, dict) and raw.get("kind") == SWEEP_KIND


def load_sweep(path: str | Path) -> SweepResult:
    from wfbench_core.record.fsutil import read_bytes

    return parse_sweep(read_bytes(path, "a sweep file"), str(path))


def write_sweep(sweep: SweepResult, path: str | Path) -> None:
    """Write atomically: a reader never sees half a file."""
    from wfbench_core.record.fsutil import atomic_write

    atomic_write(Path(path), dumps(sweep))
