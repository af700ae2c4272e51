"""``wfbench check``: the newest run (or a result file) against its series' history."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from wfbench_core.cli.history import history_option, result_argument, warn_problems
from wfbench_core.review.alerts import Rules

__all__ = ["check_cmd"]  # internal, not the plugin API

_DEFAULT = Rules()


@click.command("check")
@result_argument("result", required=False)
@history_option
@click.option("--margin", type=click.FloatRange(0, 1), default=_DEFAULT.margin, show_default=True,
              help="SAME when the gap change's 95% interval lies within +/- this; a wider A/A floor measured on "
                   "the same board replaces it.")
@click.option("--min-effect", type=click.FloatRange(0, 10), default=None,
              help="SLOWER / FASTER only when the interval lies beyond +/- this [the margin].")
@click.option("--min-points", type=click.IntRange(1, 10_000), default=_DEFAULT.min_points, show_default=True,
              help="Stable points a series needs before it is judged.")
@click.option("--window", type=click.IntRange(1, 10_000), default=_DEFAULT.window, show_default=True,
              help="The reference is drawn from the last this many stable points.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", is_flag=True, help="Markdown (a CI job summary).")
def check_cmd(result: Path | None, history_dir: Path, margin: float, min_effect: float | None, min_points: int,
              window: int, as_json: bool, markdown: bool) -> None:
    """Judge the newest run (or RESULT) against its series' history.

    A case that is FAILED or ERROR in the run, or missing from it (measured in the previous run of the same
    GPU and suite), is a correctness regression. Every timed case is SAME, SLOWER, FASTER or AMBIGUOUS: its
    gap against the series' reference, with an interval that carries what processes and boards vary by
    (measured from the series' runs, stated defaults until there are enough). A run on a board the series
    has not seen is judged too, with that board's effect in its interval.
    A step in a series that this run brings (E-divisive means over the series' stable gaps) is reported
    with its commit range; it does not change the exit code.

    Exit codes: 0 no regression; 1 regression (a failed or missing case, or a SLOWER gap); 4 identical code
    that moved, or a changed CUDA side, and no regression; 2 bad input.
    """
    from wfbench_core.record.results import converter
    from wfbench_core.review import alerts

    history, run = alerts.load_for_check(history_dir, result)
    warn_problems(history.problems)
    rules = Rules(margin=margin, min_effect=min_effect, min_points=min_points, window=window)
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
