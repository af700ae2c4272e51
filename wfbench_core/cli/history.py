"""``wfbench history`` (add, list, reindex): the history store; the options the history commands share."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from wfbench_core.errors import WfbenchError
from wfbench_core.review.history import DEFAULT_DIR, HISTORY_ENV

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "HISTORY_ENV", "history_add_cmd", "history_cmd", "history_list_cmd", "history_option", "history_reindex_cmd",
    "result_argument", "warn_problems",
]


def history_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--history", "history_dir", type=click.Path(file_okay=False, path_type=Path),
                        default=DEFAULT_DIR, envvar=HISTORY_ENV, show_default=True, show_envvar=True,
                        help="History directory.")(f)


def warn_problems(problems: list[Any]) -> None:
    for p in problems:
        click.echo(f"wfbench: warning: {p}", err=True)


def result_argument(name: str, *, required: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A result file argument (read with results.load_result, the one result loader)."""
    return click.argument(name, required=required, type=click.Path(exists=True, dir_okay=False, path_type=Path))


@click.group("history")
def history_cmd() -> None:
    """The history store: append-only run files and the series they form."""


@history_cmd.command("add")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@history_option
@click.option("--allow-incomplete", is_flag=True,
              help="Also store a run that stopped before its end (the cases it finished); never a failed case.")
def history_add_cmd(results: tuple[Path, ...], history_dir: Path, allow_incomplete: bool) -> None:
    """Store result files, each whole.

    A run with a FAILED or ERROR case is refused, and so is an incomplete run: nothing is written then.
    The same run twice is a no-op. A sweep ('wfbench sweep') is stored apart, under sweeps/: it is never part
    of a series, a trend or the geomean.
    """
    from wfbench_core.record.fsutil import read_bytes
    from wfbench_core.record.results import parse_result
    from wfbench_core.record.sweep_record import is_sweep, parse_sweep
    from wfbench_core.review.history import add_run, refusal
    from wfbench_core.review.sweeps import add_sweep, sweep_refusal

    loaded, sweeps = [], []
    for path in results:  # every file checked before anything is stored
        data = read_bytes(path, "a result file")
        if is_sweep(data):
            sweeps.append((path, parse_sweep(data, str(path))))
        else:
            loaded.append((path, parse_result(data, str(path))))
    refused = [f"{path}: {why}" for path, result in loaded
               if (why := refusal(result, allow_incomplete=allow_incomplete))]
    refused += [f"{path}: {why}" for path, sweep in sweeps if (why := sweep_refusal(sweep))]
    if refused:
        raise WfbenchError("; ".join(refused) + ("; nothing written" if len(results) > 1 else ""))
    for path, sweep in sweeps:
        stored, added = add_sweep(history_dir, sweep, where=str(path))
        click.echo(f"{path}: sweep stored as {stored}" if added else f"{path}: already stored as {stored}; "
                   f"nothing written")
    for path, result in loaded:
        out = add_run(history_dir, result, where=str(path), allow_incomplete=allow_incomplete)
        if out.added:
            click.echo(f"{path}: stored as {out.path}")
        else:
            click.echo(f"{path}: already stored as {out.path}; nothing written")
        for sid, key, new in out.series:
            if new:
                click.echo(f"  new series {sid}: {key.describe()}")


@history_cmd.command("list")
@history_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (full keys and points).")
@click.option("--verbose", "-v", is_flag=True, help="Show every key field.")
def history_list_cmd(history_dir: Path, as_json: bool, verbose: bool) -> None:
    """List the series: key, point counts and the latest gap."""
    from wfbench_core.record.results import converter
    from wfbench_core.review.history import History
    from wfbench_core.review.table import render_table

    h = History.open(history_dir)
    warn_problems(h.problems)
    index = h.index()
    if as_json:
        data = converter().unstructure(index)
        data["problems"] = [{"path": p.path, "message": p.message} for p in h.problems]
        click.echo(json.dumps(data, indent=1))
        return
    if not index.series:
        click.echo(f"{history_dir}: no series yet ({len(index.runs)} runs)")
        return
    rows = [["series", "case", "GPU (cc)", "CUDA compiler", "mode", "points", "stable", "latest gap", "latest"]]
    for s in sorted(index.series, key=lambda s: (s.key.gpu_name, s.key.case_id, s.key.case_version, s.key.mode)):
        k = s.key
        last = s.points[-1]
        case = f"{k.case_id} v{k.case_version}" + (f" [{k.compiler_label}]" if k.compiler_label else "")
        rows.append([s.id, case, f"{k.gpu_name} ({k.compute_capability})",
                     f"{k.cuda_compiler} {k.cuda_compiler_version} {' '.join(k.cuda_flags)}".rstrip(),
                     k.mode + (f" ({k.protocol})" if k.protocol else ""),
                     str(len(s.points)), str(len(s.stable_points)),
                     f"{last.gap:.3f}x" + ("" if last.stable else f" ({last.standing[0]})"), last.created[:16]])
    click.echo(render_table(rows))
    if verbose:
        for s in index.series:
            click.echo(f"\n{s.id}:")
            for name, value in json.loads(json.dumps(converter().unstructure(s.key))).items():
                click.echo(f"  {name}: {' '.join(value) if isinstance(value, list) else value}")
    click.echo(f"\n{len(index.series)} series from {len(index.runs)} runs in {history_dir}")


@history_cmd.command("reindex")
@history_option
def history_reindex_cmd(history_dir: Path) -> None:
    """Rebuild index.json from the run files (after a merge, or if it was damaged)."""
    from wfbench_core.review.history import History, reindex

    History.open(history_dir)  # a clear error when the directory is not there
    h = reindex(history_dir)
    warn_problems(h.problems)
    click.echo(f"{history_dir}: index rebuilt: {len(h.series)} series from {len(h.runs)} runs")
