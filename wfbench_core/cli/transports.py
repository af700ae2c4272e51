"""``wfbench transports``: the installed transports and their options."""

from __future__ import annotations

import click

from wfbench_core.cli.common import load_registry
from wfbench_core.review.table import render_table

__all__ = ["transports_cmd"]  # internal, not the plugin API


@click.command("transports")
@click.argument("name", required=False)
def transports_cmd(name: str | None) -> None:
    """List the installed transports (where bundles can run); with NAME, its --transport-opt options."""
    reg = load_registry()
    if name is not None:
        options = reg.transport(name).OPTIONS
        click.echo(f"{name}: --transport-opt KEY=VALUE" if options else f"{name}: no options")
        for key, text in options.items():
            click.echo(f"  {key:<16} {text}")
        return
    rows = [["transport", "plugin", "summary"]]
    for tname, r in sorted(reg.transports.items()):
        rows.append([tname, r.plugin, getattr(r.value, "summary", "")])
    click.echo(render_table(rows))
    for tname, r in sorted(reg.transports.items()):
        options = r.value.OPTIONS
        if options:
            click.echo(f"{tname} options (wfbench transports {tname}): {', '.join(options)}")
