"""``wfbench check``: the newest run (or a result file) against its series' history."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import click

from wfbench_core.review.alerts import Rules
from wfbench_core.cli.history import history_option, result_argument, warn_problems

_DEFAULT = Rules()


@click.command("check")
@result_argument("result", required=False)
@history_option
@click.option("--min-change", type=click.FloatRange(0, 10), default=_DEFAULT.min_change, show_default=True,
              help="Never alert on a smaller relative change (the between-run floor).")
@click.option("--mad-k", type=click.FloatRange(0, 100), default=_DEFAULT.mad_k, show_default=True,
              help="Nor on less than this many historical MADs.")
@click.option("--min-points", type=click.IntRange(1, 10_000), default=_DEFAULT.min_points, show_default=True,
              help="Stable points a series needs before it can alert.")
@click.option("--window", type=click.IntRange(1, 10_000), default=_DEFAULT.window, show_default=True,
              help="Baseline: the last this many stable points.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", is_flag=True, help="Markdown (a CI job summary).")
def check_cmd(result: Optional[Path], history_dir: Path, min_change: float, mad_k: float, min_points: int,
              window: int, as_json: bool, markdown: bool) -> None:
    """Compare the newest run (or RESULT) with its series' history.

    A case that is FAILED or ERROR in the run, or missing from it (measured in the previous run of the same
    GPU and suite), is a correctness regression. A change counts only beyond the series' run-to-run
    variation; one with byte-identical WarpForth PTX, or on a board the series has not seen, is not
    attributed to the compiler.

    Exit codes: 0 no regression; 1 regression (a failed or missing case, the gap, or WarpForth time with
    CUDA steady); 4 environment drift or board change only; 2 bad input.
    """
    from wfbench_core.review import alerts
    from wfbench_core.record.results import converter

    history, run = alerts.load_for_check(history_dir, result)
    warn_problems(history.problems)
    rules = Rules(min_change=min_change, mad_k=mad_k, min_points=min_points, window=window)
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
