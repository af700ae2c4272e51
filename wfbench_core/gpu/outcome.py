"""How a case's outcome becomes its :class:`~wfbench_core.record.results.CaseResult`: the one module that makes them.

- :func:`case_result`: a case about to be checked and timed (ERROR until something better is known);
- :func:`error_result`: a case that could not be checked or timed (it did not compile, its worker died, the
  suite budget was spent);
- :func:`measured`: a case from its timer's :class:`~wfbench_core.contracts.Measurement`: FAILED with the
  first failed check, or timed (OK or UNSTABLE) with the :class:`~wfbench_core.record.results.Timing` made whole from
  the timer's :class:`~wfbench_core.record.results.Sampled` record (:func:`timing_of`);
- :func:`merge_repeats`: one result per case from the passes of ``--repeat``, their records pooled
  (:func:`pool`, one rule per field of the record).

The statistics come from :mod:`wfbench_core.stats`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from wfbench_core.gpu.plausibility import (
    Yardsticks,
    ceiling_implausible,
    implausible,
    launch_bound,
    launch_bound_note,
)
from wfbench_core.record.results import (
    ERROR,
    FAILED,
    FAILING,
    IMPLAUSIBLE,
    OK,
    UNSTABLE,
    CaseResult,
    CompileRecord,
    Sampled,
    Timing,
)
from wfbench_core.record.timing_record import sampled_of, sampling_fields

if TYPE_CHECKING:
    from wfbench_core.ceiling import Ceiling
    from wfbench_core.contracts import Measurement
    from wfbench_core.record.results import CeilingResult

# internal to wfbench, not the plugin API (README: Layout)
__all__ = [
    "POOL", "case_result", "ceiling_result", "error_result", "measured", "merge_repeats", "pool", "timed_status",
    "timing_of",
]


def case_result(case: Any, *, mode: str, plugin: str, compiler_label: str = "",
                compile_wf: CompileRecord | None = None) -> CaseResult:
    """A case about to be checked and timed: its identity, work and sources; ERROR until it gets further."""
    from wfbench_core.gpu.plausibility import default_flop_type

    work = case.work(case.sizes["canonical"])
    flop_type = work.flop_type or default_flop_type([p.dtype for p in case.params if p.dtype])
    return CaseResult(
        id=case.id, version=case.version, priority=case.priority, fingerprint=case.fingerprint(), status=ERROR,
        mode=mode, metric=case.metric, work_bytes=work.bytes, work_flops=work.flops, work_flop_type=flop_type,
        cuda_source_sha256=case.cuda_source_sha256(),
        warpforth_source_sha256=compile_wf.source_sha256 if compile_wf else "", plugin=plugin,
        compiler_label=compiler_label, compile_wf=compile_wf,
    )


def error_result(case_id: str, case: Any, plugin: str, label: str, mode: str, why: str) -> CaseResult:
    """A case that was not checked or timed (it did not compile, or the suite budget was spent)."""
    return CaseResult(id=case_id, version=case.version if case else 0, priority=case.priority if case else "",
                      fingerprint=case.fingerprint() if case else "", status=ERROR, mode=mode, message=why,
                      plugin=plugin, compiler_label=label)


def measured(base: CaseResult, m: Any, side: str, *, unstable_noise: float,
             yardsticks: Yardsticks | None = None) -> CaseResult:
    """``base`` with what the timer measured of WarpForth side ``side`` against ``"cuda"``: its checks, kernel
    attributes and costs, then FAILED (with the first failed check's line), IMPLAUSIBLE (faster than the run's
    yardsticks allow: the figure, no timing) or timed."""
    base = attrs.evolve(base, checks=m.checks, attrs_wf=m.kernel_attrs.get(side),
                        attrs_cuda=m.kernel_attrs.get("cuda"))
    if not m.passed:
        return attrs.evolve(base, status=FAILED, message=m.message)
    if m.implausible:
        return attrs.evolve(base, status=IMPLAUSIBLE, message=f"{base.key.at('canonical')} WarpForth: {m.implausible}; "
                                                              f"not kept")
    if m.sampled is None:
        return attrs.evolve(base, message=f"{base.id}: the timer passed the case but returned no samples")
    fields = timed_status(m.sampled, side, work_bytes=base.work_bytes, work_flops=base.work_flops,
                          unstable_noise=unstable_noise)
    why = implausible(fields["timing"], work_bytes=base.work_bytes, work_flops=base.work_flops,
                      yardsticks=yardsticks or Yardsticks(), flop_type=base.work_flop_type)
    if why:
        return attrs.evolve(base, status=IMPLAUSIBLE,
                            message=f"{base.key.at('canonical')} {why}: faster than this GPU can run it; not kept")
    return attrs.evolve(base, **fields)


def ceiling_result(ceiling: Ceiling | None, m: Measurement | None, case: CaseResult, side: str, *,
                   yardsticks: Yardsticks | None = None) -> CeilingResult | None:
    """The stored record of the case's library ceiling from what the timer measured (None: none was asked).

    Its own status: missing, error or failed (its own line; the case's status and gap stand), implausible
    (faster than the peak of the operation it runs), or ok with its statistics and ``WarpForth time / ceiling
    time`` over the same rounds' medians. The case's ``timing`` is not read or changed."""
    from wfbench_core.ceiling import LABEL, library_version, ratio
    from wfbench_core.record.results import CEILING_ERROR, CEILING_IMPLAUSIBLE, CEILING_OK, CeilingResult
    from wfbench_core.stats import pair_ratios, percentiles, rate, summarize

    got = m.ceiling if m is not None else None
    if ceiling is None or m is None or got is None:
        return None
    check = next(iter(got.checks), None)
    record = CeilingResult(library=ceiling.library, routine=ceiling.routine, package=ceiling.package,
                           library_version=library_version(ceiling.package), status=got.status or CEILING_ERROR,
                           message=got.problem, tensor_cores=ceiling.tensor_cores,
                           flop_type=ceiling.flop_type or case.work_flop_type, timing_mode=got.timing_mode,
                           capture_note=got.capture_note, max_abs_err=check.max_abs_err if check else 0.0,
                           max_rel_err=check.max_rel_err if check else 0.0)
    sampled = m.sampled
    samples = sampled.samples_us.get(LABEL) if sampled is not None else None
    if got.problem or sampled is None or not samples or case.timing is None:
        why = got.problem or f"{case.id}: the {ceiling.library} ceiling was not timed (the case was not)"
        return attrs.evolve(record, status=got.status or CEILING_ERROR, message=why)
    stats = summarize(samples)
    wf = sampled.samples_us[side]
    ratios = pair_ratios(wf, samples)
    lo, hi = percentiles(ratios, [5, 95]) if ratios is not None else (None, None)
    record = attrs.evolve(record, status=CEILING_OK, stats=stats, ratio=ratio(case.timing.warpforth.median_us,
                                                                               stats.median_us),
                          ratio_lo=lo, ratio_hi=hi, gbps=rate(case.work_bytes, stats.median_us),
                          gflops=rate(case.work_flops, stats.median_us))
    why = ceiling_implausible(attrs.evolve(case, ceiling=record), yardsticks or Yardsticks())
    if why:
        return attrs.evolve(record, status=CEILING_IMPLAUSIBLE, stats=None, ratio=None, ratio_lo=None, ratio_hi=None,
                            message=f"{case.id} {why}: faster than this GPU can run it; not kept")
    return record


def timing_of(sampled: Sampled, side: str, *, work_bytes: int, work_flops: int, reference: str = "cuda",
              repeat_gaps: tuple[float, ...] = ()) -> Timing:
    """The stored timing of side ``side`` against ``reference``: the record's every field, and the statistics."""
    from wfbench_core.gpu.nvml import throttled
    from wfbench_core.stats import paired_statistics, rate

    wf, cu = sampled.samples_us[side], sampled.samples_us[reference]
    where = sampled.placement_of or (0,) * len(wf)
    figures = paired_statistics(wf, cu, where)
    for name, label in (("warpforth", side), ("cuda", reference)):  # each side's own launches per sample
        figures[name] = attrs.evolve(figures[name], launches=sampled.side_launches.get(label, 0))
    timing = Timing(
        **{**sampling_fields(sampled), "placement_of": tuple(where)}, **figures,
        gbps_wf=rate(work_bytes, figures["warpforth"].median_us), gbps_cuda=rate(work_bytes, figures["cuda"].median_us),
        gflops_wf=rate(work_flops, figures["warpforth"].median_us),
        gflops_cuda=rate(work_flops, figures["cuda"].median_us),
        throttled=throttled(sampled.nvml), repeat_gaps=repeat_gaps,
    )
    return attrs.evolve(timing, launch_bound=launch_bound(timing))


def timed_status(sampled: Sampled, side: str, *, work_bytes: int, work_flops: int, unstable_noise: float,
                 repeat_gaps: tuple[float, ...] = ()) -> dict[str, Any]:
    """The ``timing``, ``status`` and ``message`` of a correct case from its samples (one home of that rule).

    Used for one worker's measurement and for the samples of ``--repeat`` processes put together.
    """
    from wfbench_core.stats import is_unstable

    timing = timing_of(sampled, side, work_bytes=work_bytes, work_flops=work_flops, repeat_gaps=repeat_gaps)
    wf, cu = timing.warpforth, timing.cuda
    unstable = is_unstable(wf, cu, unstable_noise)
    notes = [f"noisy: MAD/median {wf.noise:.1%} (WarpForth), {cu.noise:.1%} (CUDA) > {unstable_noise:.0%}"] \
        if unstable else []
    if timing.launch_bound:
        notes.append(launch_bound_note(timing))
    message = "; ".join(notes)
    return {"timing": timing, "status": UNSTABLE if unstable else OK, "message": message}


# -- --repeat: pooling the passes' records ------------------------------------------------------------------


def _first(values: Sequence[Any]) -> Any:
    return values[0]


def _last(values: Sequence[Any]) -> Any:
    return values[-1]


def _sum(values: Sequence[Any]) -> Any:
    return sum(values)


def _joined(values: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    return tuple(x for v in values for x in v)


def _numbered_on(values: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """Placements of pass k numbered from k x :data:`~wfbench_core.stats.PROCESS_STRIDE` on: the passes'
    placements stay apart, and the gap's interval resamples processes, then placements
    (:func:`wfbench_core.stats.run_gap_interval`)."""
    from wfbench_core.stats import PROCESS_STRIDE

    return tuple(k * PROCESS_STRIDE + w for k, where in enumerate(values) for w in where)


def _throttled_first(values: Sequence[Any]) -> Any:
    """The NVML summary of a pass that throttled (the pooled case is then throttled), else the first pass's."""
    from wfbench_core.gpu.nvml import throttled

    return next((v for v in values if throttled(v)), values[0])


def _median_known(values: Sequence[float | None]) -> float | None:
    """The median of the passes' values that were measured (None when none was)."""
    from wfbench_core.stats import median

    known = [v for v in values if v is not None]
    return median(known) if known else None


# how each field of the timing record is pooled over --repeat passes (a field without a rule is an error)
POOL: dict[str, Callable[[Sequence[Any]], Any]] = {
    "launches_per_sample": _first,
    "warmup_busy_s": _sum,
    "order": _joined,
    "clocks_sm_mhz": _joined,
    "timing_mode": _first,
    "placement_of": _numbered_on,
    "placement_seed": _first,
    "stop_reason": _last,
    "short_retakes": _sum,
    "buffer_sets": _first,
    "gate_retakes": _sum,
    "nvml": _throttled_first,
    "launch_floor_us": _median_known,
    "placement_checks": _sum,
    "pair_sm_mhz": _joined,
    "clock_retakes": _sum,
    "buffer_bytes": _first,
    "pair_side_mhz": _joined,
    "warmup_carried_s": _sum,
    "stack_bytes": _joined,
}


def pool(records: Sequence[Sampled]) -> Sampled:
    """One record from the records of several passes of one case: samples joined, every field by its rule."""
    labels = list(records[0].samples_us)
    filled = [attrs.evolve(r, placement_of=r.placement_of or (0,) * len(r.samples_us[labels[0]])) for r in records]
    fields = {name: POOL[name]([getattr(r, name) for r in filled]) for name in sampling_fields(records[0])}
    return Sampled(samples_us={label: _joined([r.samples_us[label] for r in filled]) for label in labels},
                   side_launches=records[0].side_launches, **fields)


def merge_repeats(passes: list[list[CaseResult]], unstable_noise: float) -> list[CaseResult]:
    """One result per case from ``--repeat`` passes, each made in a fresh process.

    A case that failed or could not run in any pass is that pass's result. Otherwise the passes' samples
    are pooled, the placements of pass k numbered from k x ``PROCESS_STRIDE`` on (so the interval of the gap
    resamples processes, then placements), and each pass's own gap is kept in ``timing.repeat_gaps``.
    """
    if len(passes) == 1:
        return list(passes[0])
    by_pass = [{r.key: r for r in p} for p in passes]
    out = []
    for key in dict.fromkeys(k for p in by_pass for k in p):
        runs = [(n, p[key]) for n, p in enumerate(by_pass) if key in p]
        bad = next(((n, r) for n, r in runs if r.status in FAILING or r.timing is None), None)
        if bad is not None:
            n, r = bad
            out.append(attrs.evolve(r, message=f"repeat {n + 1} of {len(passes)}: {r.message}"))
            continue
        timings = [r.timing for _, r in runs if r.timing is not None]
        first = runs[0][1]
        fields = timed_status(pool([sampled_of(t) for t in timings]), "wf", work_bytes=first.work_bytes,
                              work_flops=first.work_flops, unstable_noise=unstable_noise,
                              repeat_gaps=tuple(t.gap for t in timings))
        fields["timing"] = attrs.evolve(fields["timing"], timed_with=timings[0].timed_with)
        out.append(attrs.evolve(first, **fields))
    return out
