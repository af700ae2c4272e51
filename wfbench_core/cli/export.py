"""``wfbench export``: a result for other tools."""

from __future__ import annotations

import json
from pathlib import Path

import click

from wfbench_core.cli.history import result_argument

__all__ = ["export_cmd"]  # internal, not the plugin API


@click.command("export")
@result_argument("result")
@click.option("--format", "fmt", type=click.Choice(["github-action-benchmark"]), default="github-action-benchmark",
              show_default=True)
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Output file [stdout].")
@click.option("--label", default=None, help="In a base/head run: which compiler label to export.")
def export_cmd(result: Path, fmt: str, out: Path | None, label: str | None) -> None:
    """Convert a result for github-action-benchmark (customSmallerIsBetter)."""
    from wfbench_core.record.fsutil import atomic_write
    from wfbench_core.record.results import load_result
    from wfbench_core.review.export import github_action_benchmark

    entries = github_action_benchmark(load_result(result), label=label, where=str(result))
    if not any(e["name"].startswith("suite/") for e in entries):
        click.echo(f"wfbench: note: {result}: no suite geomean: it is published only when every P0 case of a "
                   f"complete run is correct and stable", err=True)
    text = json.dumps(entries, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    if out is None:
        click.echo(text, nl=False)
        return
    atomic_write(out, text)
    click.echo(f"{out}: {len(entries)} entries ({fmt})", err=True)
