"""Sweeps in the history: their own folder, their own series, never mixed with the runs.

Layout, beside the runs (:mod:`wfbench_core.review.history`)::

    sweeps/<year>/<created>-<sha256 prefix>.json   one SweepResult per file, never rewritten

The history's runs, series, index, trends, geomean and export read ``runs/`` only; a sweep file is no run
result (the result loader refuses it). What reads sweeps is the dashboard's sweep section (the newest sweep of
each case on each GPU) and ``wfbench sweep``'s own plot. A sweep with a failed or error point, or an
incomplete one, is refused whole, as a failed run is.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.record.fsutil import create_exclusive
from wfbench_core.record.results import dumps
from wfbench_core.record.sweep_record import SweepResult, parse_sweep
from wfbench_core.review.history import RUN_NAME, Problem, _content_hash, _locked, _stamp, utc_sortable

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["SWEEPS_DIR", "StoredSweep", "add_sweep", "newest_sweeps", "stored_sweeps", "sweep_refusal"]

SWEEPS_DIR = "sweeps"


@attrs.frozen
class StoredSweep:
    file: str  # relative to the history directory
    sweep: SweepResult


def sweep_refusal(sweep: SweepResult) -> str | None:
    """Why this sweep must not be stored, or None."""
    bad = sweep.failed
    if bad:
        what = "; ".join(f"{sweep.axis}={p.sizes[sweep.axis]} {p.result.status.upper()}"
                         + (f": {p.result.message}" if p.result.message else "") for p in bad)
        return f"{len(bad)} point{'s' if len(bad) != 1 else ''} did not pass ({what}); a failed sweep is never stored"
    if not sweep.complete:
        return f"an incomplete sweep ({len(sweep.points)} point(s) finished before it stopped); not stored"
    return None


def add_sweep(root: str | Path, sweep: SweepResult, *, where: str = "sweep") -> tuple[Path, bool]:
    """Store one sweep under ``sweeps/``; the same sweep twice is a no-op. Returns (its file, whether added)."""
    root = Path(root)
    why = sweep_refusal(sweep)
    if why:
        raise WfbenchError(f"{where}: {why}")
    data = dumps(sweep).encode()
    stamp = _stamp(sweep.created, where)
    path = root / SWEEPS_DIR / stamp[:4] / f"{stamp}-{_content_hash(data)[:16]}.json"
    with _locked(root):
        added = create_exclusive(path, data)
    return path, added


def stored_sweeps(root: str | Path) -> tuple[list[StoredSweep], list[Problem]]:
    """Every sweep file of the history (a file that is not one is reported and skipped)."""
    root = Path(root)
    found: list[StoredSweep] = []
    problems: list[Problem] = []
    base = root / SWEEPS_DIR
    for path in sorted(base.rglob("*.json")) if base.is_dir() else []:
        if path.name.startswith(".") or not RUN_NAME.match(path.name):
            continue
        try:
            sweep = parse_sweep(path.read_bytes(), str(path))
        except (OSError, WfbenchError) as exc:
            problems.append(Problem(str(path), f"{exc}; skipped".removeprefix(f"{path}: ")))
            continue
        found.append(StoredSweep(path.relative_to(root).as_posix(), sweep))
    return found, problems


def newest_sweeps(root: str | Path) -> tuple[list[StoredSweep], list[Problem]]:
    """The newest sweep of each case on each GPU model, by case then GPU."""
    found, problems = stored_sweeps(root)
    newest: dict[tuple[str, str], StoredSweep] = {}
    for s in found:
        key = (s.sweep.case_id, s.sweep.environment.gpu_name)
        old = newest.get(key)
        if old is None or (utc_sortable(s.sweep.created), s.file) > (utc_sortable(old.sweep.created), old.file):
            newest[key] = s
    return [newest[k] for k in sorted(newest)], problems
