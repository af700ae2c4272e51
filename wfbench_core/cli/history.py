"""``wfbench history`` (add, list, reindex), ``check``, ``compare``, ``dashboard`` and ``export``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import click

from wfbench_core.errors import WfbenchError
from wfbench_core.history import DEFAULT_DIR, HISTORY_ENV


def history_option(f: Any) -> Any:
    return click.option("--history", "history_dir", type=click.Path(file_okay=False, path_type=Path),
                        default=DEFAULT_DIR, envvar=HISTORY_ENV, show_default=True, show_envvar=True,
                        help="History directory.")(f)


def _warn_problems(problems: list[Any]) -> None:
    for p in problems:
        click.echo(f"wfbench: warning: {p}", err=True)


def _result_path(f: Any) -> Any:
    return click.argument(f, type=click.Path(exists=True, dir_okay=False, path_type=Path))


# --------------------------------------------------------------------------------------------------------
# history


@click.group("history")
def history_group() -> None:
    """The history store: append-only run files and the series they form."""


@history_group.command("add")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@history_option
def history_add(results: tuple[Path, ...], history_dir: Path) -> None:
    """Store result files (failed cases are left out; the same run twice is a no-op)."""
    from wfbench_core.history import add_run, read_result

    loaded = [(path, read_result(path)) for path in results]  # every file checked before anything is stored
    for path, result in loaded:
        out = add_run(history_dir, result, where=str(path))
        if out.added:
            click.echo(f"{path}: stored as {out.path}")
        else:
            click.echo(f"{path}: already stored as {out.path}; nothing written")
        if out.dropped:
            click.echo(f"  not stored (failed or error): {', '.join(out.dropped)}")
        for sid, key, new in out.series:
            if new:
                click.echo(f"  new series {sid}: {key.describe()}")


@history_group.command("list")
@history_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (full keys and points).")
@click.option("--verbose", "-v", is_flag=True, help="Show every key field.")
def history_list(history_dir: Path, as_json: bool, verbose: bool) -> None:
    """List the series: key, point counts and the latest gap."""
    from wfbench_core.history import History
    from wfbench_core.report import render_table
    from wfbench_core.results import converter

    h = History.open(history_dir)
    _warn_problems(h.problems)
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
                     f"{k.cuda_compiler} {k.cuda_compiler_version} {' '.join(k.cuda_flags)}".rstrip(), k.mode,
                     str(len(s.points)), str(len(s.stable_points)),
                     f"{last.gap:.3f}x" + ("" if last.stable else " (unstable)"), last.created[:16]])
    click.echo(render_table(rows))
    if verbose:
        for s in index.series:
            click.echo(f"\n{s.id}:")
            for name, value in json.loads(json.dumps(converter().unstructure(s.key))).items():
                click.echo(f"  {name}: {' '.join(value) if isinstance(value, list) else value}")
    click.echo(f"\n{len(index.series)} series from {len(index.runs)} runs in {history_dir}")


@history_group.command("reindex")
@history_option
def history_reindex(history_dir: Path) -> None:
    """Rebuild index.json from the run files (after a merge, or if it was damaged)."""
    from wfbench_core.history import History, reindex

    History.open(history_dir)  # a clear error when the directory is not there
    h = reindex(history_dir)
    _warn_problems(h.problems)
    click.echo(f"{history_dir}: index rebuilt: {len(h.series)} series from {len(h.runs)} runs")


# --------------------------------------------------------------------------------------------------------
# check


@click.command("check")
@click.argument("result", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@history_option
@click.option("--min-change", type=click.FloatRange(0, 10), default=0.05, show_default=True,
              help="Never alert on a smaller relative change.")
@click.option("--mad-k", type=click.FloatRange(0, 100), default=3.0, show_default=True,
              help="Nor on less than this many historical MADs.")
@click.option("--min-points", type=click.IntRange(1, 10_000), default=5, show_default=True,
              help="Stable points a series needs before it can alert.")
@click.option("--window", type=click.IntRange(1, 10_000), default=20, show_default=True,
              help="Baseline: the last this many stable points.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", is_flag=True, help="Markdown (a CI job summary).")
def check_cmd(result: Optional[Path], history_dir: Path, min_change: float, mad_k: float, min_points: int,
              window: int, as_json: bool, markdown: bool) -> None:
    """Compare the newest run (or RESULT) with its series' history.

    Exit codes: 0 no regression; 1 regression (gap, or WarpForth time with CUDA steady);
    4 environment drift only (CUDA time moved, gap steady); 2 bad input.
    """
    from wfbench_core import alerts
    from wfbench_core.results import converter

    history, run = alerts.load_for_check(history_dir, result)
    _warn_problems(history.problems)
    rules = alerts.Rules(min_change=min_change, mad_k=mad_k, min_points=min_points, window=window)
    report = alerts.check(history, run, run_name=str(result) if result else "", rules=rules)
    if as_json:
        data = converter().unstructure(report)
        data["exit_code"] = report.exit_code
        click.echo(json.dumps(data, indent=1))
    elif markdown:
        click.echo(alerts.render_markdown(report), nl=False)
    else:
        click.echo(alerts.render_text(report))
    sys.exit(report.exit_code)


# --------------------------------------------------------------------------------------------------------
# compare


@click.command("compare")
@click.argument("base", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("head", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--base-label", default=None, help="In a base/head run: the base compiler label [base].")
@click.option("--head-label", default=None, help="In a base/head run: the head compiler label [head].")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01, show_default=True,
              help="Significance level of the Mann-Whitney U test.")
@click.option("--min-effect", type=click.FloatRange(0, 10), default=0.01, show_default=True,
              help="A significant change smaller than this is reported as negligible.")
@click.option("--markdown", is_flag=True, help="Markdown (a job summary or a PR comment).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when a gap got significantly worse.")
def compare_cmd(base: Path, head: Optional[Path], base_label: Optional[str], head_label: Optional[str], alpha: float,
                min_effect: float, markdown: bool, as_json: bool, fail_on_regression: bool) -> None:
    """Per case change of the gap and of each side's time, BASE.json HEAD.json or one base/head run."""
    from wfbench_core import compare
    from wfbench_core.history import read_result
    from wfbench_core.results import converter

    settings = compare.Settings(alpha=alpha, min_effect=min_effect)
    if head is None:
        cmp = compare.compare_labels(read_result(base), base_label, head_label, name=str(base), settings=settings)
    else:
        if base_label or head_label:
            raise WfbenchError("--base-label/--head-label pick the sides of ONE base/head run; give one file")
        cmp = compare.compare_runs(read_result(base), read_result(head), base_name=str(base), head_name=str(head),
                                   settings=settings)
    if as_json:
        click.echo(json.dumps(converter().unstructure(cmp), indent=1))
    elif markdown:
        click.echo(compare.render_markdown(cmp), nl=False)
    else:
        click.echo(compare.render_text(cmp))
    if fail_on_regression and cmp.regressions:
        sys.exit(1)


# --------------------------------------------------------------------------------------------------------
# dashboard and export


@click.command("dashboard")
@history_option
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Site directory (index.html and its assets are written there).")
@click.option("--title", default=None, help="Page title [WarpForth vs CUDA].")
@click.option("--screenshot", "png", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also save a full-page PNG of it (needs playwright and a system Chromium).")
@click.option("--dark", is_flag=True, help="Screenshot in the dark colour scheme.")
@click.option("--chromium", default=None, metavar="PATH",
              help="Chromium or Chrome for --screenshot [$WFBENCH_CHROMIUM, else chromium, chromium-browser, "
                   "google-chrome-stable, google-chrome on PATH].")
@click.option("--headline-gpu", default=None, metavar="NAME",
              help="GPU whose canonical series the headline follows, as results name it (e.g. 'NVIDIA H200') "
                   "[the GPU of the newest canonical run].")
def dashboard_cmd(history_dir: Path, out: Path, title: Optional[str], png: Optional[Path], dark: bool,
                  chromium: Optional[str], headline_gpu: Optional[str]) -> None:
    """Write the static dashboard of a history (works from file://, no network)."""
    from wfbench_core.dashboard import build_site, screenshot
    from wfbench_core.history import History

    h = History.open(history_dir)
    _warn_problems(h.problems)
    index = build_site(h, out, title=title, headline_gpu=headline_gpu)
    click.echo(f"dashboard: {index} ({len(h.series)} series from {len(h.runs)} runs)")
    if png is not None:
        errors = screenshot(index, png, dark=dark, chromium=chromium)
        click.echo(f"screenshot: {png}")
        if errors:
            raise WfbenchError(f"{index}: the page reported errors in the browser: {'; '.join(errors)}")


@click.command("export")
@click.argument("result", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["github-action-benchmark"]), default="github-action-benchmark",
              show_default=True)
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Output file [stdout].")
@click.option("--label", default=None, help="In a base/head run: which compiler label to export.")
def export_cmd(result: Path, fmt: str, out: Optional[Path], label: Optional[str]) -> None:
    """Convert a result for github-action-benchmark (customSmallerIsBetter)."""
    from wfbench_core.export import github_action_benchmark
    from wfbench_core.fsutil import atomic_write
    from wfbench_core.history import read_result

    entries = github_action_benchmark(read_result(result), label=label, where=str(result))
    text = json.dumps(entries, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    if out is None:
        click.echo(text, nl=False)
        return
    atomic_write(out, text)
    click.echo(f"{out}: {len(entries)} entries ({fmt})", err=True)


COMMANDS = [history_group, check_cmd, compare_cmd, dashboard_cmd, export_cmd]
