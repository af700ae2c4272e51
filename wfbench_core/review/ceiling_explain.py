"""``wfbench explain CASE --ceiling``: the case's library ceiling beside its two sides, in Markdown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wfbench_core.gpu.ceiling_profile import LibraryKernel
    from wfbench_core.record.results import KernelProfile

__all__ = ["ceiling_markdown", "profile_markdown"]  # internal, not the plugin API


def ceiling_markdown(case: Any, declared: Any, result: Any | None = None,
                     profiled: tuple[Sequence[tuple[str, KernelProfile | None]], Sequence[LibraryKernel] | str]
                     | None = None) -> str:
    """What the case's ceiling is (library, routine, what it does differently, tensor-core use, the kernel names
    its profile is matched by) and, from a stored result, its time and ``WarpForth time / ceiling time``; or why
    the case has none. ``profiled``: the sides' profiles and the library's kernels (or why they were not
    profiled), shown side by side (:func:`profile_markdown`)."""
    from wfbench_core.ceiling import RATIO_NAME, Ceiling, series_name

    lines = ["", f"## Library ceiling: `{series_name(case.id, case.version)}`", ""]
    if not isinstance(declared, Ceiling):
        why = getattr(declared, "why", "") or "no plugin declares one (wfbench_register_ceilings)"
        return "\n".join(lines + [f"None: {why}.", ""])
    lines += [f"- library: {declared.library}, `{declared.routine}` (called through {declared.package})",
              f"- what it does differently: {declared.what}",
              f"- tensor cores: {declared.tensor_cores or 'none'}",
              f"- its kernels' names contain: {', '.join(f'`{k}`' for k in declared.kernels) or '(not declared)'}",
              f"- graph capture: {'yes' if declared.capturable else 'no (timed with events in graph mode)'}",
              "- tolerances: " + "; ".join(f"{name}: rtol {t.rtol:g}, atol {t.atol:g} ({t.why})"
                                           for name, t in declared.tolerances.items())]
    k = getattr(result, "ceiling", None) if result is not None else None
    if result is None or k is None:
        lines.append("- measured: not in the given result (run it with `wfbench run --ceiling`, then `--result`)")
    elif k.timed and k.stats is not None and result.timing is not None:
        t = result.timing
        lines += ["", f"| WarpForth us | CUDA us | ceiling us | gap | {RATIO_NAME} |", "|---:|---:|---:|---:|---:|",
                  f"| {t.warpforth.median_us:.2f} | {t.cuda.median_us:.2f} | {k.stats.median_us:.2f} | {t.gap:.3f}x | "
                  f"{k.ratio:.2f}x |", "",
                  f"{k.library} {k.routine}, {k.package} {k.library_version}, timed in {k.timing_mode} mode"
                  + (f" ({k.capture_note})" if k.capture_note else "") + ". Never part of the gap."]
    else:
        lines.append(f"- measured: {k.status.upper()}: {k.message}")
    if profiled is not None:
        lines += profile_markdown(declared, *profiled)
    return "\n".join(lines) + "\n"


def profile_markdown(declared: Any, sides: Sequence[tuple[str, KernelProfile | None]],
                     kernels: Sequence[LibraryKernel] | str) -> list[str]:
    """The library's kernels (one call at the canonical size) beside the case's sides, as Nsight Compute saw them:
    a column per kernel, its tensor-path operations, and whether its name matches the ceiling's declared kernel
    names (``Ceiling.kernels``)."""
    from wfbench_core.review import markdown as md
    from wfbench_core.review.explain import side_profile_rows

    lines = ["", "### Nsight Compute: the library's kernels beside the case's (one call at the canonical size)", ""]
    if isinstance(kernels, str):
        return [*lines, f"Not profiled: {kernels}"]
    if not kernels:
        return [*lines, "Not profiled: ncu saw no kernel in the library's call."]
    columns = [*sides, *((f"library {n}", k.profile) for n, k in enumerate(kernels, 1))]
    rows = side_profile_rows(columns)
    kinds = sorted({kind for k in kernels for kind, ops in (k.tensor_ops or {}).items() if ops})
    for kind in kinds or [""]:
        name = f"tensor-path {kind} operations" if kind else "tensor-path operations"
        rows.append([name, *["-"] * len(sides), *[_ops(k, kind) for k in kernels]])
    lines += md.table(rows, "r") + [""]
    total = sum(k.profile.duration_us for k in kernels)
    lines.append(f"The library's call: {len(kernels)} kernel(s), {total:.2f} us in all under Nsight Compute.")
    for n, k in enumerate(kernels, 1):
        hits = [p for p in declared.kernels if p.lower() in k.name.lower()]
        note = (f"matches {', '.join(f'`{p}`' for p in hits)}" if hits
                else "matches no declared name (Ceiling.kernels)")
        lines.append(f"- library {n}: `{_short(k.name)}` ({note})")
    return lines


def _ops(k: LibraryKernel, kind: str) -> str:
    if k.tensor_ops is None:
        return "not counted"
    if not kind:
        return "none"
    v = k.tensor_ops.get(kind)
    return "-" if v is None else f"{v:,.0f}"


def _short(name: str, most: int = 160) -> str:
    return name if len(name) <= most else name[: most - 3] + "..."
