"""A series and its points: what one measurement of one case looks like to a history.

A **series** is every point measured under one :class:`SeriesKey`: the same GPU model and compute
capability, the same case (ID, version, fingerprint), the same CUDA baseline source, the same CUDA compiler
and flags, the same timing mode, compiler label and measuring protocol. The WarpForth compiler is
deliberately not part of the key: its change over time is what a series shows. A :class:`Point` is one
timed case of one run, with what judging it needs (its board, the identity of both sides' code, the gaps of
the processes of a ``--repeat`` run); :mod:`wfbench_core.review.history` stores them.
"""

from __future__ import annotations

import hashlib
import json

import attrs

from wfbench_core import stats
from wfbench_core.compiling.code_identity import code_identity
from wfbench_core.record.results import OK, CaseResult, RunResult, SideStats, TimingProtocol, converter
from wfbench_core.review.throttle import judge_throttle

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "PROTOCOL_NOT_IN_KEY", "Point", "Series", "SeriesKey", "SideSummary", "case_name", "point_of",
    "points_from_run", "protocol_tag", "series_key", "standing", "timing_mode",
]


# --------------------------------------------------------------------------------------------------------
# records


@attrs.frozen
class SeriesKey:
    """Everything that must be equal for two measurements to share one trend line."""

    gpu_name: str
    compute_capability: str
    case_id: str
    case_version: int
    fingerprint: str
    cuda_source_sha256: str
    cuda_compiler: str
    cuda_compiler_version: str
    cuda_flags: tuple[str, ...]
    mode: str
    compiler_label: str = ""
    protocol: str = ""  # the measuring protocol's settings that differ from the defaults; "" = the canonical one

    @property
    def id(self) -> str:
        """A short, stable name for the series: a hash over every key field (an empty protocol is left out,
        so the canonical series keep the names they had before the protocol joined the key)."""
        data = converter().unstructure(self)
        if not self.protocol:
            del data["protocol"]
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def platform(self) -> tuple[str, ...]:
        """The hardware, toolchain and protocol part of the key (what a suite-wide headline may combine).

        The compiler label comes last, so ``platform[:-1]`` is what the labels of one base/head run share."""
        return (self.gpu_name, self.compute_capability, self.cuda_compiler, self.cuda_compiler_version,
                " ".join(self.cuda_flags), self.mode, self.protocol, self.compiler_label)

    @property
    def canonical(self) -> bool:
        """Measured with the default protocol: the series that may be published."""
        return not self.protocol

    def describe(self) -> str:
        label = f" [{self.compiler_label}]" if self.compiler_label else ""
        protocol = f", protocol {self.protocol}" if self.protocol else ""
        return (f"{self.case_id} v{self.case_version}{label} on {self.gpu_name} ({self.compute_capability}), "
                f"{self.cuda_compiler} {self.cuda_compiler_version} {' '.join(self.cuda_flags)}, {self.mode}"
                f"{protocol}")


@attrs.frozen
class SideSummary:
    """One side at one point: the run's statistics and the 5th-95th percentile band of its samples."""

    median_us: float
    p95_us: float
    mad_us: float
    noise: float
    lo_us: float
    hi_us: float


# a point's standing in trends, the one word every view shows for it (dashboard badge, row and card, history list,
# check, export), with why
STABLE, NOISY, THROTTLED, DEPRESSED, LAUNCH_BOUND = "stable", "unstable", "throttled", "depressed host", "launch-bound"


def standing(status: str, *, noise: float, throttled: bool, depressed_host: bool, launch_bound: bool) -> tuple[str, str]:
    """Whether a timed case counts in trends, as one word, and why: the one rule behind :attr:`Point.stable`."""
    if status != OK:
        return NOISY, f"noisy (MAD/median {noise:.1%}, over the run's threshold)"
    if throttled:
        return THROTTLED, "throttled while timed (its gap moved with the clock, or no clean pairs could be had)"
    if depressed_host:
        return DEPRESSED, "on a depressed host (memory clock or power below the board's healthy band)"
    if launch_bound:
        return LAUNCH_BOUND, "launch-bound (events mode timed the host's launch rate, not the kernel)"
    return STABLE, f"noise {noise:.1%}, within the run's threshold, on a healthy GPU"


@attrs.frozen
class Point:
    """One case of one stored run, as a series sees it."""

    run: str  # run file, relative to the history directory
    created: str
    status: str  # ok | unstable
    priority: str
    warpforthc_version: str
    warpforthc_sha256: str
    wf: SideSummary
    cuda: SideSummary
    gap: float
    gap_mad: float  # MAD of the per-pair ratios WarpForth/CUDA
    gap_lo: float  # 5th-95th percentile of the per-pair ratios
    gap_hi: float
    samples: int
    git_commit: str = ""
    git_repo: str = ""
    ci_run_url: str = ""
    label: str = ""
    gpu_uuid: str = ""  # the board
    ptx_sha256: str = ""  # the WarpForth PTX of the timed configuration: equal PTX, equal kernel
    sass_sha256: str = ""  # its machine code (static diagnostics): equal SASS, equal kernel
    throttled: bool = False  # throttled while timed, and the throttle rule leaves it out (wfbench_core.review.throttle)
    depressed_host: bool = False  # the run's memory clock or power sat below the board's healthy band
    code_sha256: str = ""  # the WarpForth kernel's code identity: SASS and resources (wfbench_core.compiling.code_identity)
    cuda_code_sha256: str = ""  # the CUDA kernel's
    cuda_ptx_sha256: str = ""
    repeat_gaps: tuple[float, ...] = ()  # a --repeat run: the gap of each fresh process
    placements: int = 0  # placements (units of the run's own interval) the gap was measured over
    gap_ci_lo: float = 0.0  # the run's own 95 % interval of the gap (0: not recorded)
    gap_ci_hi: float = 0.0
    launch_bound: bool = False  # events mode timed the host's launch rate, not the kernel

    @property
    def code(self) -> str:
        """What identifies the WarpForth kernel: its code identity, else its PTX hash, else nothing ("")."""
        return self.code_sha256 or (f"ptx:{self.ptx_sha256}" if self.ptx_sha256 else "")

    @property
    def cuda_code(self) -> str:
        return self.cuda_code_sha256 or (f"ptx:{self.cuda_ptx_sha256}" if self.cuda_ptx_sha256 else "")

    @property
    def stable(self) -> bool:
        """Counted in trends and alerts: stable, measured on a healthy GPU whose throttling (if any) did not move
        it, and not launch-bound (others are kept and shown, marked)."""
        return self.standing[0] == STABLE

    @property
    def standing(self) -> tuple[str, str]:
        """(one word, why): see :func:`standing`."""
        return standing(self.status, noise=self.noise, throttled=self.throttled, depressed_host=self.depressed_host,
                        launch_bound=self.launch_bound)

    @property
    def noise(self) -> float:
        return max(self.wf.noise, self.cuda.noise)


@attrs.frozen
class Series:
    id: str
    key: SeriesKey
    points: tuple[Point, ...]

    @property
    def stable_points(self) -> tuple[Point, ...]:
        return tuple(p for p in self.points if p.stable)


# --------------------------------------------------------------------------------------------------------
# points from a run


# protocol settings that never change a measurement (they only refuse or stop cases): not part of the key
PROTOCOL_NOT_IN_KEY = frozenset({"max_case_s", "suite_budget_s"})


def protocol_tag(protocol: TimingProtocol) -> str:
    """The protocol's settings that differ from the defaults, as ``name=value`` (``""`` for the canonical one).

    Any setting that changes what is measured is part of a series' key, so a run with ``--samples 5`` starts
    its own series and never joins the published one.
    """
    default = type(protocol)()
    parts = []
    for f in attrs.fields(type(protocol)):
        value = getattr(protocol, f.name)
        if f.name in PROTOCOL_NOT_IN_KEY or value == getattr(default, f.name):
            continue
        parts.append(f"{f.name}={value:g}" if isinstance(value, float) else f"{f.name}={value}")
    return ",".join(parts)


def timing_mode(result: RunResult, case: CaseResult) -> str:
    """The timing mode of a case as keyed: the case's, joined by the run's when the run names another."""
    if not result.mode or result.mode == case.mode:
        return case.mode
    return f"{case.mode}+{result.mode}"


def case_name(case: CaseResult) -> str:
    return str(case.key)


def series_key(result: RunResult, case: CaseResult) -> SeriesKey:
    env = result.environment
    cc = result.cuda_compiler
    return SeriesKey(
        gpu_name=env.gpu_name,
        compute_capability=env.compute_capability,
        case_id=case.id,
        case_version=case.version,
        fingerprint=case.fingerprint,
        cuda_source_sha256=case.cuda_source_sha256,
        cuda_compiler=cc.kind,
        cuda_compiler_version=cc.version,
        cuda_flags=tuple(cc.flags),
        mode=timing_mode(result, case),
        compiler_label=case.compiler_label,
        protocol=protocol_tag(result.protocol),
    )


def _side(side: SideStats) -> SideSummary:
    lo, hi = stats.band(side)
    return SideSummary(median_us=side.median_us, p95_us=side.p95_us, mad_us=side.mad_us, noise=side.noise,
                       lo_us=lo, hi_us=hi)


def point_of(result: RunResult, case: CaseResult, run_file: str) -> Point:
    """One timed case of a run as its series sees it."""
    t = case.timing
    assert t is not None and case.timed
    ratios = stats.pair_ratios(t.warpforth.samples_us, t.cuda.samples_us)
    if ratios is not None:
        gap_mad = stats.mad(ratios)
        gap_lo, gap_hi = stats.percentiles(ratios, [5, 95])
    else:
        gap_mad, gap_lo, gap_hi = 0.0, t.gap, t.gap
    compiler = result.compilers.get(case.compiler_label, result.warpforthc)
    src = result.source
    return Point(
        run=run_file, created=result.created, status=case.status, priority=case.priority,
        warpforthc_version=compiler.version, warpforthc_sha256=compiler.binary_sha256,
        wf=_side(t.warpforth), cuda=_side(t.cuda), gap=t.gap, gap_mad=gap_mad, gap_lo=gap_lo,
        gap_hi=gap_hi, samples=min(t.warpforth.n, t.cuda.n), git_commit=src.git_commit,
        git_repo=src.git_repo, ci_run_url=src.ci_run_url, label=src.label,
        gpu_uuid=result.environment.gpu_uuid,
        ptx_sha256=case.compile_wf.ptx_sha256 if case.compile_wf is not None else "",
        sass_sha256=case.diag_wf.sass_sha256 if case.diag_wf is not None else "",
        throttled=judge_throttle(t).leaves_trends, depressed_host=result.environment.depressed_host,
        code_sha256=code_identity(case.diag_wf), cuda_code_sha256=code_identity(case.diag_cuda),
        cuda_ptx_sha256=case.compile_cuda.ptx_sha256 if case.compile_cuda is not None else "",
        repeat_gaps=t.repeat_gaps, placements=t.placements, gap_ci_lo=t.gap_lo or 0.0, gap_ci_hi=t.gap_hi or 0.0,
        launch_bound=t.launch_bound,
    )


def points_from_run(result: RunResult, run_file: str) -> list[tuple[SeriesKey, Point]]:
    """The series points of the timed cases of one run."""
    return [(series_key(result, case), point_of(result, case, run_file)) for case in result.cases if case.timed]


