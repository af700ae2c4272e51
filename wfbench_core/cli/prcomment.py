"""``wfbench pr-comment``: the one pull-request comment of a base/head run, in Markdown."""

from __future__ import annotations

from pathlib import Path

import click

from wfbench_core.cli.common import load_registry, progress_printer
from wfbench_core.cli.history import result_argument

__all__ = ["pr_comment_cmd"]  # internal, not the plugin API


@click.command("pr-comment")
@result_argument("result")
@click.option("--bundle", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="The base/head bundle the run executed: the head-against-base explanations come from it.")
@click.option("--base-label", default=None, help="The base compiler label [base].")
@click.option("--head-label", default=None, help="The head compiler label [head].")
@click.option("--arch", default=None, metavar="sm_XX",
              help="Target of the SASS [default: the GPU of the run].")
@click.option("--artifact", "artifacts", multiple=True, metavar="NAME=URL", help="A link to list (repeatable).")
@click.option("--run-url", default="", help="The CI run, linked from the comment.")
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the comment here instead of printing it.")
@click.option("--quiet", "-q", is_flag=True)
def pr_comment_cmd(result: Path, bundle: Path, base_label: str | None, head_label: str | None,
               arch: str | None, artifacts: tuple[str, ...], run_url: str, out: Path | None,
               quiet: bool) -> None:
    """The pull-request comment of the base/head run RESULT: verdict table, head against base of every case
    whose verdict is not SAME, artifact links. Its first line is a hidden marker, so a workflow can find the
    comment and update it."""
    from wfbench_core.compiling.diagnostics import arch_limits
    from wfbench_core.errors import WfbenchError
    from wfbench_core.record.results import load_result
    from wfbench_core.review import prcomment
    from wfbench_core.review.case_verdict import SAME, base_head

    links = [prcomment.parse_artifact(a) for a in artifacts]
    run = load_result(result)
    cmp, verdicts = base_head(run, name=str(result), base_label=base_label, head_label=head_label)
    arch = arch or prcomment.arch_of(run.environment.compute_capability)
    if arch is None:
        raise WfbenchError(f"{result}: the run does not name its GPU's compute capability; give --arch sm_XX")
    arch_limits(arch)
    todo = [c for c, v in verdicts.items() if v != SAME]
    progress = progress_printer(quiet)
    for line in prcomment.compiler_mismatches(run, bundle, str(result)):
        click.echo(f"wfbench: warning: {line}", err=True)
    explanations = prcomment.explain_cases(load_registry(), bundle, todo, arch, progress=progress)
    text = prcomment.build(cmp, verdicts, explanations, artifacts=links, run_url=run_url)
    if out is not None:
        from wfbench_core.record.fsutil import atomic_write

        atomic_write(out, text)
        progress(f"comment: {out}")
    else:
        click.echo(text, nl=False)

