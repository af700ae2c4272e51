"""``wfbench compare``: base against head, per case."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import click

from wfbench_core.cli.history import HISTORY_ENV, result_argument
from wfbench_core.errors import WfbenchError


@click.command("compare")
@result_argument("base")
@result_argument("head", required=False)
@click.option("--base-label", default=None, help="In a base/head run: the base compiler label [base].")
@click.option("--head-label", default=None, help="In a base/head run: the head compiler label [head].")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01, show_default=True,
              help="Significance level of the Mann-Whitney U test.")
@click.option("--min-effect", type=click.FloatRange(0, 10), default=0.01, show_default=True,
              help="A significant change smaller than this is reported as negligible.")
@click.option("--markdown", is_flag=True, help="Markdown (a job summary or a PR comment).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a gap got worse beyond the within-run and between-run variation.")
@click.option("--history", "history_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              envvar=HISTORY_ENV, show_envvar=True,
              help="History whose series give the between-run variation of two runs [none: a 1% floor].")
def compare_cmd(base: Path, head: Optional[Path], base_label: Optional[str], head_label: Optional[str], alpha: float,
                min_effect: float, markdown: bool, as_json: bool, fail_on_regression: bool,
                history_dir: Optional[Path]) -> None:
    """Per case change of the gap and of each side's time, BASE.json HEAD.json or one base/head run.

    Between two runs a change counts only beyond the between-run variation of its series (from --history,
    else a 1% floor), and never when the WarpForth PTX is identical or the boards differ.
    """
    from wfbench_core.review import compare
    from wfbench_core.record.results import converter, load_result

    settings = compare.Settings(alpha=alpha, min_effect=min_effect)
    if head is None:
        cmp = compare.compare_labels(load_result(base), base_label, head_label, name=str(base), settings=settings)
    else:
        if base_label or head_label:
            raise WfbenchError("--base-label/--head-label pick the sides of ONE base/head run; give one file")
        runs = load_result(base), load_result(head)
        history = None
        if history_dir is not None:
            from wfbench_core.review.history import History

            history = History.open(history_dir)
        cmp = compare.compare_runs(*runs, base_name=str(base), head_name=str(head), settings=settings,
                                   history=history)
    if as_json:
        click.echo(json.dumps(converter().unstructure(cmp), indent=1))
    elif markdown:
        click.echo(compare.render_markdown(cmp), nl=False)
    else:
        click.echo(compare.render_text(cmp))
    if fail_on_regression and cmp.regressions:
        sys.exit(1)
