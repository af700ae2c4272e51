"""``wfbench list``: the installed cases."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import click

from wfbench_core.cli.common import load_registry
from wfbench_core.review.table import render_table

__all__ = ["list_cmd", "new_case_cmd"]  # internal, not the plugin API


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_cmd(as_json: bool) -> None:
    """List installed cases: ID, version, priority, sizes and the plugin each came from."""
    reg = load_registry()
    entries = []
    for r in sorted(reg.cases.values(), key=lambda r: (r.value.priority, r.value.id)):
        c = r.value
        entries.append({
            "id": c.id, "version": c.version, "priority": c.priority, "metric": c.metric,
            "sizes": {k: dict(v) for k, v in c.sizes.items()}, "plugin": r.plugin, "summary": c.summary,
        })
    if as_json:
        import json  # here: the table needs no JSON

        click.echo(json.dumps(entries, indent=1))
        return
    if not entries:
        click.echo("no cases installed")
        return
    rows = [["case", "ver", "prio", "canonical size", "check size", "plugin"]]
    for e in entries:
        rows.append([e["id"], f"v{e['version']}", e["priority"], _sizes(e["sizes"]["canonical"]),
                     _sizes(e["sizes"]["check"]), e["plugin"]])
    click.echo(render_table(rows))



def _sizes(sizes: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())

@click.command("new-case")
@click.argument("name")
@click.option("--dir", "parent", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Folder to create the package in.")
def new_case_cmd(name: str, parent: Path) -> None:
    """Scaffold a case plugin package NAME: the case, both kernel files as package data, the entry point
    and a check_case test. It installs as a wheel with its kernels (pip install PATH)."""
    from wfbench_core.discover.scaffold import new_case as scaffold

    root = scaffold(name, parent)
    # a folder, never a name pip would look up in a package index: ./wfbench-my-scale, not wfbench-my-scale
    folder = root.as_posix() if root.is_absolute() or root.as_posix().startswith("../") else f"./{root.as_posix()}"
    click.echo(f"{root}: case {name} (pip install {folder}; then wfbench list shows it)")

