"""The dashboard's GPU-model view: the newest canonical run of every GPU model (each its own series), case by
case side by side, so one case's gap can be read across models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["gpu_matrix"]  # internal, not the plugin API


def _column_names(summaries: Sequence[dict[str, Any]]) -> list[str]:
    """One name per canonical platform: the GPU model, with its toolchain where two share a model."""
    models = [s["gpu"] for s in summaries]
    return [s["gpu"] if models.count(s["gpu"]) == 1 else f"{s['gpu']} ({s['cuda']})" for s in summaries]


def gpu_matrix(summaries: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Columns: the canonical platforms (headline first), each with its newest run; rows: every case of those
    runs, with its gap and status per column (None where a model's newest run does not have the case).
    None with fewer than two models: there is nothing to set side by side."""
    if len(summaries) < 2:
        return None
    names = _column_names(summaries)
    columns = [{"name": n, "gpu": s["gpu"], "cc": s["cc"], "cuda": s["cuda"], "run": s["run"], "date": s["date"],
                "commit": s["commit"], "geomean": s["geomean"], "case_set": s["case_set"]}
               for n, s in zip(names, summaries)]
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for n, s in zip(names, summaries):
        for r in s["cases"]:
            if r["label"]:
                continue
            row = rows.setdefault((r["case"], r["version"]), {
                "case": r["case"], "version": r["version"], "priority": r["priority"],
                "gaps": {m: None for m in names}, "status": {m: None for m in names}})
            row["gaps"][n], row["status"][n] = r["gap"], r["status"]
    ordered = sorted(rows.values(), key=lambda r: (r["priority"], r["case"], r["version"]))
    return {"columns": columns, "rows": ordered}


def ceiling_rows(raw: Any) -> list[dict[str, Any]]:
    """The library ceilings of the headline run (its result file's JSON): one row per case that has one, with
    its series name, library, the three times and ``WarpForth time / ceiling time``. Shown in its own section,
    never in the headline's gap or geomean."""
    from wfbench_core.ceiling import series_name

    rows = []
    for c in (raw.get("cases") or []) if isinstance(raw, dict) else []:
        k = c.get("ceiling") if isinstance(c, dict) else None
        if not isinstance(k, dict):
            continue
        t = c.get("timing") or {}
        stats = k.get("stats") or {}
        rows.append({"series": series_name(str(c.get("id")), int(c.get("version") or 0)), "case": c.get("id"),
                     "library": k.get("library"), "routine": k.get("routine"),
                     "version": f"{k.get('package')} {k.get('library_version')}", "tensor_cores": k.get("tensor_cores"),
                     "wf": (t.get("warpforth") or {}).get("median_us"), "cuda": (t.get("cuda") or {}).get("median_us"),
                     "ceiling": stats.get("median_us"), "ratio": k.get("ratio"), "status": k.get("status"),
                     "message": k.get("message") or k.get("capture_note") or ""})
    return rows
