"""``wfbench compare``: base against head, per case."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from wfbench_core.cli.history import HISTORY_ENV, result_argument
from wfbench_core.errors import WfbenchError
from wfbench_core.review.verdicts import DEFAULT_MARGIN

__all__ = ["compare_cmd"]  # internal, not the plugin API


@click.command("compare")
@result_argument("base")
@result_argument("head", required=False)
@click.option("--base-label", default=None, help="In a base/head run: the base compiler label [base].")
@click.option("--head-label", default=None, help="In a base/head run: the head compiler label [head].")
@click.option("--margin", type=click.FloatRange(0, 1), default=DEFAULT_MARGIN, show_default=True,
              help="SAME when the gap change's 95% interval lies within +/- this; a wider measured A/A floor "
                   "(identical code in the same run, an A/A run on the same board) replaces it.")
@click.option("--min-effect", type=click.FloatRange(0, 10), default=None,
              help="SLOWER / FASTER only when the interval lies beyond +/- this [the margin].")
@click.option("--markdown", is_flag=True, help="Markdown (a job summary or a PR comment).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a case is SLOWER, or BROKEN (the head failed where the base was timed); nothing "
                   "else counts.")
@click.option("--history", "history_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              envvar=HISTORY_ENV, show_envvar=True,
              help="History whose runs of each case measure what processes and boards add between two runs "
                   "[none: stated defaults].")
def compare_cmd(base: Path, head: Path | None, base_label: str | None, head_label: str | None,
                margin: float, min_effect: float | None, markdown: bool, as_json: bool, fail_on_regression: bool,
                history_dir: Path | None) -> None:
    """Per case change of the gap and of each side's time, BASE.json HEAD.json or one base/head run.

    Each case is SAME (the gap change's 95% interval lies within the margin), SLOWER or FASTER (it lies beyond
    the minimum effect), or AMBIGUOUS (neither). Identical code is SAME by rule; a changed CUDA side is
    "baseline changed". Between two runs the interval also carries what a fresh process and another board
    add (from --history, a --repeat run, or stated defaults).
    """
    from wfbench_core.record.results import converter, load_result
    from wfbench_core.review import compare, compare_table

    settings = compare.Settings(margin=margin, min_effect=min_effect)
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
        data = converter().unstructure(cmp)
        data["regressions"] = [c.case_id for c in cmp.regressions]
        click.echo(json.dumps(data, indent=1))
    elif markdown:
        click.echo(compare_table.render_markdown(cmp), nl=False)
    else:
        click.echo(compare_table.render_text(cmp))
    if fail_on_regression and cmp.regressions:
        sys.exit(1)
