"""``wfbench explain CASE --ceiling``: the case's library ceiling beside its two sides, in Markdown."""

from __future__ import annotations

from typing import Any

__all__ = ["ceiling_markdown"]  # internal, not the plugin API


def ceiling_markdown(case: Any, declared: Any, result: Any | None = None) -> str:
    """What the case's ceiling is (library, routine, what it does differently, tensor-core use, the kernel names
    its profile is matched by) and, from a stored result, its time and ``WarpForth time / ceiling time``; or why
    the case has none."""
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
    return "\n".join(lines) + "\n"
