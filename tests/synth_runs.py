"""Synthetic runs for the history, alert, compare, export and dashboard tests.

Every run is the real H200 result in ``fixtures/h200-run1.json`` changed with ``attrs.evolve``: the shapes,
environment and hashes are real; only the samples (scaled, with known extra noise) and the fields a test is
about are changed. Statistics are recomputed with the same functions the timer uses. The fixture was taken
under an older protocol (its file says so, and it loads as such); a synthetic run stands for a run under
today's default protocol, so its protocol is the default one.

Two kinds of change are told apart, as in real runs: ``wf_scale`` is a WarpForth compiler change (the
WarpForth PTX hash changes with it), ``run_offset`` is what moves between runs of the same PTX (another
process, buffer placement or board): the WarpForth samples move, the PTX stays byte-identical.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path
from typing import Optional

import attrs
import numpy as np

from wfbench_core.record.results import OK, UNSTABLE, CaseResult, RunResult, Source, TimingProtocol, load_result
from wfbench_core.stats import gap, is_unstable, summarize

FIXTURES = Path(__file__).parent / "fixtures"
REAL_RUN = FIXTURES / "h200-run1.json"
REAL_AA = FIXTURES / "h200-aa.json"
REPO = "https://github.com/example/warpforth"


def real_run() -> RunResult:
    return attrs.evolve(load_result(REAL_RUN), protocol=TimingProtocol())


def commit_of(n: int) -> str:
    return hashlib.sha1(f"commit {n}".encode()).hexdigest()


def created_at(n: int, start: str = "2026-11-01T06:00:00+00:00") -> str:
    t0 = _dt.datetime.fromisoformat(start)
    return (t0 + _dt.timedelta(hours=12 * n)).isoformat()


def _resample(samples: tuple[float, ...], scale: float, jitter: float, rng: np.random.Generator) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64) * scale
    if jitter:
        x = x * (1.0 + rng.normal(0.0, jitter, size=x.size))
    return x


def ptx_of(case: CaseResult, wf_scale: float) -> CaseResult:
    """The case as a WarpForth compiler that makes it ``wf_scale`` times slower would compile it."""
    if wf_scale == 1.0 or case.compile_wf is None:
        return case
    digest = hashlib.sha256(f"{case.compile_wf.ptx_sha256} x{wf_scale!r}".encode()).hexdigest()
    return attrs.evolve(case, compile_wf=attrs.evolve(case.compile_wf, ptx_sha256=digest))


def placement_effect(n: int, placements: int, sd: float, rng: np.random.Generator) -> tuple[tuple[int, ...], np.ndarray]:
    """``placement_of`` for ``n`` pairs in ``placements`` equal blocks, and a log-normal factor of sd ``sd`` per
    placement (the same for every pair of the placement)."""
    where = tuple(i * placements // n for i in range(n))
    effect = np.exp(rng.normal(0.0, sd, size=placements)) if sd else np.ones(placements)
    return where, effect[np.asarray(where)]


def evolve_case(case: CaseResult, *, wf_scale: float = 1.0, cuda_scale: float = 1.0, jitter: float = 0.0,
                rng: Optional[np.random.Generator] = None, threshold: float = 0.03,
                cuda_samples: Optional[tuple[float, ...]] = None, run_offset: float = 1.0,
                placements: int = 0, placement_sd: float = 0.0, **changes: object) -> CaseResult:
    """The case with its samples scaled (and optionally jittered); stats, gap and status recomputed.

    ``wf_scale`` changes the WarpForth PTX hash (a compiler change); ``run_offset`` moves the WarpForth samples
    with the PTX unchanged (a between-run effect). With ``placements``, the pairs are spread over that many
    placements, each moving the WarpForth samples by its own factor (``placement_sd``)."""
    assert case.timing is not None
    rng = rng or np.random.default_rng(0)
    case = ptx_of(case, wf_scale)
    wf_x = _resample(case.timing.warpforth.samples_us, wf_scale * run_offset, jitter, rng)
    where = case.timing.placement_of
    if placements:
        where, factor = placement_effect(wf_x.size, placements, placement_sd, rng)
        wf_x = wf_x * factor
    wf = summarize(wf_x)
    cu = summarize(cuda_samples if cuda_samples is not None
                   else _resample(case.timing.cuda.samples_us, cuda_scale, jitter, rng))
    timing = attrs.evolve(case.timing, warpforth=wf, cuda=cu, gap=gap(wf, cu), placement_of=tuple(where),
                          placements=len(set(where)) or 1)
    status = UNSTABLE if is_unstable(wf, cu, threshold) else OK
    return attrs.evolve(case, timing=timing, status=status, **changes)  # type: ignore[arg-type]


def synth_run(n: int, *, base: Optional[RunResult] = None, wf_scale: float | dict[str, float] = 1.0,
              cuda_scale: float = 1.0, jitter: float | dict[str, float] = 0.0005, seed: Optional[int] = None,
              commit: bool = True, run_offset: float | dict[str, float] = 1.0, placements: int = 0,
              placement_sd: float = 0.0, **env_changes: object) -> RunResult:
    """Run number ``n`` of a synthetic history: created 12 h after run n-1, with its own commit (pairs spread
    over ``placements`` placements of effect ``placement_sd`` when given)."""
    base = base or real_run()
    rng = np.random.default_rng(seed if seed is not None else 1000 + n)
    cases = []
    for c in base.cases:
        ws = wf_scale.get(c.id, 1.0) if isinstance(wf_scale, dict) else wf_scale
        ro = run_offset.get(c.id, 1.0) if isinstance(run_offset, dict) else run_offset
        jit = jitter.get(c.id, 0.0005) if isinstance(jitter, dict) else jitter
        cases.append(evolve_case(c, wf_scale=ws, cuda_scale=cuda_scale, jitter=jit, rng=rng,
                                 threshold=base.protocol.unstable_noise, run_offset=ro, placements=placements,
                                 placement_sd=placement_sd))
    source = Source(git_commit=commit_of(n), git_repo=REPO, ci_run_id=str(7000 + n),
                    ci_run_url=f"{REPO}/actions/runs/{7000 + n}") if commit else base.source
    run = attrs.evolve(base, created=created_at(n), cases=tuple(cases), source=source)
    if env_changes:
        run = attrs.evolve(run, environment=attrs.evolve(run.environment, **env_changes))
    return run


def with_case(run: RunResult, case_id: str, **changes: object) -> RunResult:
    """The run with one case's fields changed."""
    return attrs.evolve(run, cases=tuple(attrs.evolve(c, **changes) if c.id == case_id else c  # type: ignore[arg-type]
                                         for c in run.cases))
