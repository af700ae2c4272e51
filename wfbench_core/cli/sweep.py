"""``wfbench sweep``: time cases over a range of sizes on this machine's GPU; the sizes' syntax (``--size``,
``--range``), shared with ``wfbench build --sweep``."""

from __future__ import annotations

import datetime as _dt
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from wfbench_core.cli.common import load_registry, progress_printer, protocol_from, protocol_options, warpforthc_option
from wfbench_core.errors import CaseFailed, NoGpuError, WfbenchError

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "MAX_POINTS", "given_sizes", "parse_range", "parse_size", "render_sweep", "size_options", "sweep_cmd",
    "sweep_plan",
]

_VALUE = re.compile(r"^\s*(?:(\d[\d_]*)|2\^(\d+))\s*$")
_RANGE = re.compile(r"^\s*([A-Za-z_]\w*)=([^.]+)\.\.([^:]+)(?::(\d+))?\s*$")
MAX_POINTS = 64  # a range that would give more sizes is refused (a typo, not a sweep)


def _value(text: str, where: str) -> int:
    m = _VALUE.match(text)
    if m is None:
        raise click.BadParameter(f"{text!r} in {where!r} is not a size: an integer (65536) or a power of two "
                                 f"(2^16)")
    value = int(m.group(1).replace("_", "")) if m.group(1) else 1 << int(m.group(2))
    if value < 1:
        raise click.BadParameter(f"{where!r}: sizes are positive")
    return value


def parse_size(text: str) -> dict[str, int]:
    """``N=4096`` or ``N=2^12,blocks=16``: one sweep point (parameters not named keep their canonical value or
    are derived by the case)."""
    out: dict[str, int] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise click.BadParameter(f"{text!r}: expected NAME=SIZE[,NAME=SIZE...], e.g. N=4096 or N=2^12")
        out[name.strip()] = _value(value, text)
    return out


def parse_range(text: str) -> list[dict[str, int]]:
    """``N=2^12..2^26`` (every power of two from 2^12 to 2^26) or ``N=2^12..2^26:4`` (x4 each step): sizes
    LOW, LOW*F, LOW*F^2, ... up to HIGH (F defaults to 2)."""
    m = _RANGE.match(text)
    if m is None:
        raise click.BadParameter(f"{text!r}: expected NAME=LOW..HIGH[:FACTOR], e.g. N=2^12..2^26 or N=4096..2^20:4")
    name, low, high = m.group(1), _value(m.group(2), text), _value(m.group(3), text)
    factor = int(m.group(4) or 2)
    if factor < 2 or high < low:
        raise click.BadParameter(f"{text!r}: needs LOW <= HIGH and a FACTOR of at least 2")
    sizes = []
    value = low
    while value <= high:
        sizes.append({name: value})
        value *= factor
        if len(sizes) > MAX_POINTS:
            raise click.BadParameter(f"{text!r}: more than {MAX_POINTS} sizes; use a larger FACTOR")
    return sizes


def size_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--size`` and ``--range``: sweep sizes given on the command line (else the case's declared ones)."""
    f = click.option("--range", "ranges", multiple=True, metavar="NAME=LOW..HIGH[:F]",
                     help="Sizes LOW, LOW*F, ... up to HIGH of size parameter NAME (F: 2 unless given); LOW and "
                          "HIGH as integers or powers of two, e.g. N=2^12..2^26 (repeatable).")(f)
    return click.option("--size", "sizes", multiple=True, metavar="NAME=SIZE[,NAME=SIZE]",
                        help="One sweep size, e.g. N=4096 or N=2^16 (repeatable). The case's other size "
                             "parameters keep their canonical value or are derived as its sweep declares.")(f)


def given_sizes(sizes: tuple[str, ...], ranges: tuple[str, ...]) -> list[dict[str, int]]:
    return [parse_size(s) for s in sizes] + [p for r in ranges for p in parse_range(r)]


def sweep_plan(cases: list[Any], given: list[dict[str, int]], *, strict: bool) -> dict[str, list[dict[str, int]]]:
    """Case id -> its sweep sizes (given, else declared). A case with none is an error when ``strict``, else left
    out (``build --sweep`` over cases of which some declare none)."""
    out = {}
    for case in cases:
        if not given and case.sweep is None and not strict:
            continue
        try:
            out[case.id] = case.sweep_points(given)
        except ValueError as exc:
            raise WfbenchError(str(exc)) from None
    return out


@click.command("sweep")
@click.argument("case_ids", nargs=-1, required=True, metavar="CASE...")
@size_options
@warpforthc_option
@click.option("--bundle", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Time this bundle's sweep ('wfbench build --sweep') instead of compiling here: no warpforthc "
                   "is needed on this machine.")
@click.option("--out-dir", "-o", type=click.Path(file_okay=False, path_type=Path), default=Path("wfbench-results"),
              show_default=True, help="Folder for each case's sweep-CASE-TIME.json and its plot.")
@click.option("--plot", "plot_format", type=click.Choice(["png", "svg", "none"]), default="png", show_default=True,
              help="The plot of each sweep (matplotlib, the 'plot' extra), or none.")
@click.option("--history", "history_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also store each sweep that passed in this history (its sweeps/ folder).")
@click.option("--events-only", is_flag=True,
              help="Keep launch-bound points' events-mode timing (default: time them again in graph mode).")
@protocol_options
@click.option("--cuda-compiler", type=click.Choice(["auto", "nvcc", "nvrtc"]), default="auto", show_default=True)
@click.option("--case-timeout", type=click.FloatRange(1), default=None, metavar="S",
              help="Deadline of every wait on the GPU [default: max(10 s, 50 x the expected time)].")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def sweep_cmd(case_ids: tuple[str, ...], sizes: tuple[str, ...], ranges: tuple[str, ...], warpforthc: tuple[str, ...],
              warpforth: tuple[str, ...], bundle: Path | None, out_dir: Path, plot_format: str,
              history_dir: Path | None, events_only: bool, cuda_compiler: str, case_timeout: float | None,
              quiet: bool, **options: Any) -> None:
    """Time CASE over a range of sizes on this machine's GPU: gap against size as JSON and a plot.

    Sizes are the case's declared sweep, or --size/--range. Each size is checked and timed as a run times a
    case (correctness first), in one GPU worker; a size where a side is launch-bound in events mode is timed
    again in graph mode. Sweeps are their own series, never part of runs, trends or the geomean.
    """
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.run.sweep import sweep

    reg = load_registry()
    cases = reg.select(case_ids)
    given = given_sizes(sizes, ranges)
    progress = progress_printer(quiet)
    request = ExecuteRequest(case_ids=tuple(c.id for c in cases), protocol=protocol_from(options),
                             cuda_compiler=cuda_compiler, case_timeout_s=case_timeout)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")

    def path(cid: str) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)  # when the first point is written: nothing before
        return out_dir / f"sweep-{cid}-{stamp}.json"

    def run(where: Path) -> list[Any]:
        return sweep(where, registry=reg, case_ids=request.case_ids, request=request, progress=progress, out=path,
                     given=given or None, graph_where_launch_bound=not events_only)

    try:
        if bundle is not None:
            if warpforthc or warpforth:
                raise WfbenchError("--bundle times a bundle built before: leave out --warpforthc and --warpforth")
            results = run(bundle)
        else:
            with tempfile.TemporaryDirectory(prefix="wfbench-sweep-") as tmp:
                _build(reg, cases, given, warpforthc, warpforth, Path(tmp) / "bundle", progress)
                results = run(Path(tmp) / "bundle")
    except NoGpuError as exc:
        raise exc.with_hint("build the bundle here with 'wfbench build --sweep' and run 'wfbench sweep --bundle' "
                            "on a GPU host") from None
    _report(results, path, plot_format, history_dir)


def _build(reg: Any, cases: list[Any], given: list[dict[str, int]], warpforthc: tuple[str, ...],
           warpforth: tuple[str, ...], out: Path, progress: Callable[[str], None]) -> None:
    from wfbench_core.cli.common import run_request
    from wfbench_core.run import runner

    if len(warpforthc) + len(warpforth) > 1:
        raise WfbenchError("a sweep times one warpforthc; give --warpforthc or --warpforth once")
    plan = sweep_plan(cases, given, strict=True)
    request = run_request(reg, tuple(c.id for c in cases), (), warpforthc, warpforth=warpforth, check_cuda=False,
                          progress=progress)
    manifest = runner.build(request, reg, out, progress=progress, sweeps=plan)
    if manifest.failures:
        raise CaseFailed("; ".join(manifest.failures.values()))


def _report(results: list[Any], path: Callable[[str], Path], plot_format: str, history_dir: Path | None) -> None:
    """Each sweep's table, file and plot; stored in the history when asked; exit 1 when a point failed."""
    from wfbench_core.review.sweep_plot import plot_sweep
    from wfbench_core.review.sweeps import add_sweep

    failed = []
    for sweep in results:
        click.echo(render_sweep(sweep))
        click.echo(f"sweep: {path(sweep.case_id)}")
        if plot_format != "none":
            click.echo(f"plot: {plot_sweep(sweep, path(sweep.case_id).with_suffix('.' + plot_format))}")
        if sweep.failed:
            failed.append(sweep.case_id)
        elif history_dir is not None:
            stored, added = add_sweep(history_dir, sweep, where=str(path(sweep.case_id)))
            click.echo(f"stored as {stored}" if added else f"already stored as {stored}")
    if failed:
        raise CaseFailed(f"a size of {', '.join(failed)} failed or could not run; see the table")


def render_sweep(sweep: Any) -> str:
    """The sweep as a table: one line per size."""
    axis = sweep.axis
    lines = [f"{sweep.case_id} v{sweep.case_version} on {sweep.environment.gpu_name}: gap against {axis}",
             f"{axis:>12}  {'WF us':>10}  {'CUDA us':>10}  {'gap':>7}  {'mode':<6}  launch-bound (events)  status"]
    for p in sweep.points:
        bound = "+".join(n for n, b in (("WF", p.launch_bound_wf), ("CUDA", p.launch_bound_cuda)) if b) or "-"
        t = p.result.timing
        figures = (f"{t.warpforth.median_us:>10.3f}  {t.cuda.median_us:>10.3f}  {t.gap:>6.3f}x  {t.timing_mode:<6}"
                   if t is not None else f"{'-':>10}  {'-':>10}  {'-':>7}  {'-':<6}")
        status = p.result.status.upper() + (f": {p.result.message}" if t is None and p.result.message else "")
        lines.append(f"{p.sizes[axis]:>12}  {figures}  {bound:<21}  {status}")
    return "\n".join(lines)
