"""Check and time one case in the worker: every WarpForth variant against the CUDA side, on this process's GPU.

:class:`wfbench_core.gpu.worker.Worker` calls :func:`run_case` for each case and each sweep point it is sent. A variant
whose PTX is byte-identical to an earlier one's is timed once (:func:`ptx_twins`); a case whose sides fail together is
timed side by side apart (:func:`measure_apart`) to learn which side is to blame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from wfbench_core.case import CONFIGS
from wfbench_core.errors import WfbenchError
from wfbench_core.gpu import watchdog
from wfbench_core.gpu.outcome import case_result, ceiling_result, measured
from wfbench_core.gpu.plausibility import Yardsticks
from wfbench_core.record.results import FAILED, MODE_AA, CaseResult, TimingProtocol

if TYPE_CHECKING:
    from wfbench_core.case import Case
    from wfbench_core.ceiling import Ceiling
    from wfbench_core.contracts import Measurement, Side, Timer

__all__ = ["measure_apart", "ptx_twins", "run_case"]  # internal, not the plugin API


def _wf_label(label: str) -> str:
    return f"wf:{label}" if label else "wf"


def run_case(variants: dict[str, Any], *, timer: Timer, protocol: TimingProtocol, cuda: Any, arch: str,
             mode: str, sanitize: bool = False, progress: Callable[[str], None] = lambda line: None,
             yardsticks: Yardsticks | None = None, ceiling: Ceiling | None = None,
             diagnose: bool = True) -> list[CaseResult]:
    """Check and time one case: every WarpForth variant (one, or base and head) against the CUDA side.

    A variant whose PTX is byte-identical to an earlier one's is not checked or timed again (:func:`ptx_twins`): its
    result carries the earlier variant's checks and samples, marked ``timing.timed_with``.

    With ``sanitize``, each side's check configuration is first launched once under compute-sanitizer; a finding
    makes it FAILED (the first report line), not timed. With ``diagnose``, both sides' static diagnostics (ptxas,
    SASS) are made on a thread while the GPU works.
    """
    some = next(iter(variants.values()))
    case = some.case
    bases = {label: case_result(case, mode=mode, plugin=prep.plugin, compiler_label=label,
                                compile_wf=prep.files["canonical"].compile_wf)
             for label, prep in variants.items()}

    def all_(**changes: Any) -> list[CaseResult]:
        return [attrs.evolve(b, **changes) for b in bases.values()]

    try:
        cuda_ptx, record, compile_s = _compile_cuda_side(some, arch, cuda)
    except WfbenchError as exc:
        return all_(message=str(exc))
    bases = {k: attrs.evolve(b, compile_cuda=record) for k, b in bases.items()}

    diagnosing = diagnose and mode != MODE_AA and _diagnose_in_background(case, variants, cuda_ptx["canonical"], arch)
    twins = {} if mode == MODE_AA else ptx_twins(variants)
    sides = _sides(case, {k: v for k, v in variants.items() if k not in twins}, cuda_ptx, mode)
    broken: dict[str, Any] = {}  # WarpForth side -> the failed measurement of that side alone
    try:
        if sanitize:
            broken = _sanitized(case, sides)
            sides = [s for s in sides if s.label not in broken]
        m, more = measure_apart(timer, case, sides, progress, ceiling)
    except WfbenchError as exc:
        return all_(message=str(exc))
    except _AllFailed as failed:
        return all_(status=FAILED, message=failed.message)
    broken.update(more)
    if ceiling is not None and m is not None and m.ceiling is not None and m.ceiling.problem:
        progress(f"{case.id}: {m.ceiling.problem}")  # one line; the canonical case goes on

    diags = {label: future.result() for label, future in diagnosing.items()} if diagnosing else {}
    for note in dict.fromkeys(d[2] for d in diags.values() if d[2]):
        progress(f"{case.id}: no static diagnostics: {note}")
    return [_result(base, m, broken, variants[label], twins.get(label), label, diags.get(label), compile_s,
                    protocol, yardsticks, ceiling) for label, base in bases.items()]


def _result(base: CaseResult, m: Measurement | None, broken: dict[str, Any], prep: Any, twin: str | None,
            label: str, diag: Any, compile_s: float, protocol: TimingProtocol, yardsticks: Yardsticks | None,
            ceiling: Ceiling | None) -> CaseResult:
    """One WarpForth variant's result from the case's measurement, or its own failed one where it failed alone
    (its diagnostics, costs, ceiling, twin)."""
    if diag is not None:
        base = attrs.evolve(base, diag_wf=diag[0], diag_cuda=diag[1])
    side = _wf_label(twin or label)
    mine = broken.get(side, m)
    if mine is None:  # measure_apart gives no measurement only when every side is in broken
        raise WfbenchError(f"{base.id}: no measurement of {side}")
    costs = attrs.evolve(mine.costs, compile_cuda_s=compile_s,
                         compile_wf_s=sum(prep.files[c].compile_wf.wall_s for c in CONFIGS))
    result = measured(attrs.evolve(base, costs=costs), mine, side, unstable_noise=protocol.unstable_noise,
                      yardsticks=yardsticks)
    result = attrs.evolve(result, ceiling=ceiling_result(ceiling, m, result, side, yardsticks=yardsticks))
    return _twin_of(result, twin)


class _AllFailed(Exception):
    """Every side of a case fails (the CUDA side, or the only WarpForth one): the case is FAILED for all."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _sanitized(case: Any, sides: list[Any]) -> dict[str, Any]:
    """Each side's check configuration once under compute-sanitizer: ``{label: failed measurement}`` of the
    WarpForth sides with a finding, while another WarpForth side and the CUDA side have none (else
    :class:`_AllFailed`)."""
    from wfbench_core.contracts import Measurement
    from wfbench_core.gpu.sanitize import DEFAULT_TIMEOUT_S, sanitize_case
    from wfbench_core.record.results import Costs

    found: dict[str, str] = {}
    for side in sides:
        with watchdog.guard(f"{case.id} {side.label} under compute-sanitizer", deadline_s=DEFAULT_TIMEOUT_S + 60.0):
            finding = sanitize_case(case, side.label, side.ptx["check"], side.kernel)
        if finding is not None:
            found[side.label] = finding.message
    if found and not _alone(set(found), sides):
        raise _AllFailed(next(iter(found.values())))
    return {label: Measurement(False, why, (), {}, Costs()) for label, why in found.items()}


def _alone(labels: set[str], sides: Sequence[Any]) -> bool:
    """Whether ``labels`` are WarpForth sides only, with another WarpForth side left to time against CUDA."""
    wf = {s.label for s in sides if s.label != "cuda"}
    return bool(labels) and labels < wf


def measure_apart(timer: Timer, case: Case, sides: list[Side], progress: Callable[[str], None] = lambda line: None,
                  ceiling: Ceiling | None = None) -> tuple[Measurement | None, dict[str, Measurement]]:
    """The timer's measurement of ``sides``; where only some WarpForth sides fail (their own checks, or a fault
    of theirs that left the GPU context usable) they are left out and the others are measured again, so a head
    compiler that breaks a case costs the head, not the base: the base keeps its timing and status.

    Returns the last measurement (None when no WarpForth side was left to time) and ``{label: failed
    measurement}`` of each side left out (with its own failed checks' line, or its implausible launches). A
    failure of the CUDA side, of every WarpForth side, or one no side is named by (a cross check only) is the
    measurement as the timer gave it, failed for all. ``ceiling``: the case's library ceiling, measured as a
    third side in the same rounds (``--ceiling``)."""
    from wfbench_core.compiling.faults import KernelFault, side_name
    from wfbench_core.contracts import Measurement
    from wfbench_core.gpu.plausibility import InconsistentLaunches
    from wfbench_core.record.results import Costs

    broken: dict[str, Any] = {}
    while True:
        try:
            m = timer.measure(case, sides, reference_label="cuda", **({"ceiling": ceiling} if ceiling else {}))
        except KernelFault as fault:
            if fault.sticky or not _alone({fault.side}, sides):
                raise
            blamed = {fault.side: Measurement(False, str(fault), (), {}, Costs())}
        except InconsistentLaunches as odd:  # found before any sample: IMPLAUSIBLE, whatever the time limit
            blamed = {label: Measurement(True, "", (), {}, Costs(), implausible=why) for label, why in odd.sides.items()}
            if "cuda" in blamed:
                raise
            if not _alone(set(blamed), sides):  # no WarpForth side left to time
                return None, {**broken, **blamed}
        else:
            blamed = _blamed(case, m, sides)
            if not blamed:
                return m, broken
        broken.update(blamed)
        sides = [s for s in sides if s.label not in blamed]
        progress(f"{case.id}: {', '.join(side_name(b) for b in blamed)} failed alone; the other sides are "
                 f"checked and timed without it")


def _blamed(case: Any, m: Any, sides: Sequence[Any]) -> dict[str, Any]:
    """The WarpForth sides a failed measurement's own checks name (reference, idempotence, timed buffers),
    each with its failed measurement, when they fail alone (:func:`_alone`); else none."""
    from wfbench_core.gpu.comparison import describe_failures

    failed = [c for c in m.checks if not c.passed]
    own = {c.side for c in failed if "~" not in c.side}
    if m.passed or not _alone(own, sides):
        return {}
    return {label: attrs.evolve(m, message=describe_failures(case, [c for c in failed if c.side == label]),
                                sampled=None) for label in own}


def _twin_of(result: CaseResult, twin: str | None) -> CaseResult:
    """``result`` marked as timed with label ``twin`` (its byte-identical kernel), where it is one."""
    if twin is None or result.timing is None:
        return result
    return attrs.evolve(result, timing=attrs.evolve(result.timing, timed_with=twin))


def ptx_twins(variants: dict[str, Any]) -> dict[str, str]:
    """The compiler labels whose WarpForth PTX is byte-identical, in every configuration, to an earlier label's:
    label -> that label. Such a kernel is checked and timed once; its twin's samples stand for it, as the same
    bytes on the same GPU in the same rounds (a base/head run whose head did not change a kernel)."""
    first: dict[tuple[str, ...], str] = {}
    twins: dict[str, str] = {}
    for label, prep in variants.items():
        key = tuple(prep.files[c].wf_ptx for c in CONFIGS)
        if key in first:
            twins[label] = first[key]
        else:
            first[key] = label
    return twins


def _sides(case: Any, variants: dict[str, Any], cuda_ptx: dict[str, str], mode: str) -> list[Any]:
    """The sides to time: every WarpForth variant (in an A/A run the CUDA PTX stands in), then the CUDA side."""
    from wfbench_core.contracts import Side

    if mode == MODE_AA:
        sides = [Side("wf", case.cuda_kernel, cuda_ptx)]
    else:
        sides = [Side(_wf_label(label), case.wf_kernel, {c: prep.files[c].wf_ptx for c in CONFIGS})
                 for label, prep in variants.items()]
    return sides + [Side("cuda", case.cuda_kernel, cuda_ptx)]


def _compile_cuda_side(prep: Any, arch: str, cuda: Any) -> tuple[dict[str, str], Any, float]:
    """The CUDA side's PTX of every configuration, the canonical compile's record and the compiles' wall time."""
    from wfbench_core.compiling.compile import compile_cuda

    ptx: dict[str, str] = {}
    record, wall_s = None, 0.0
    for config in CONFIGS:
        compiled = compile_cuda(prep.files[config].cuda_source, case_id=prep.case.key(config), arch=arch,
                                compiler=cuda)
        ptx[config] = compiled.ptx
        wall_s += compiled.record.wall_s
        if config == "canonical":
            record = compiled.record
    return ptx, record, wall_s


def _diagnose_in_background(case: Any, variants: dict[str, Any], cuda_ptx: str, arch: str) -> dict[str, Any]:
    """Start ptxas/cuobjdump for every WarpForth variant against the CUDA side; ``{label: future}``."""
    from concurrent.futures import ThreadPoolExecutor

    from wfbench_core.compiling.diagnostics import diagnose_case

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wfbench-diagnostics")
    futures = {label: pool.submit(diagnose_case, case, wf_ptx=prep.files["canonical"].wf_ptx, cuda_ptx=cuda_ptx,
                                  arch=arch)
               for label, prep in variants.items()}
    pool.shutdown(wait=False)
    return futures
