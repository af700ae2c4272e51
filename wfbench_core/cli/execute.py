"""``wfbench execute``: the GPU-host side of every transport — check and time a bundle here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import click

from wfbench_core.cli.common import (
    case_options,
    execute_options,
    execute_request,
    finish,
    load_registry,
    progress_printer,
)
from wfbench_core.errors import NoGpuError, WfbenchError

__all__ = ["execute_cmd"]  # internal, not the plugin API


@click.command("execute")
@click.argument("bundle", type=click.Path(exists=True, file_okay=False, path_type=Path))
@case_options
@execute_options
@click.option("--request", "request_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="The whole request as JSON (what transports send); replaces the options above.")
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Result JSON file, rewritten after every case (marked incomplete until the run ends).")
@click.option("--json", "as_json", is_flag=True, help="Print the result JSON instead of the table.")
@click.option("--validate-only", is_flag=True, help="Check the bundle against the installed cases; no GPU.")
@click.option("--quiet", "-q", is_flag=True)
def execute_cmd(bundle: Path, case_ids: tuple[str, ...], priorities: tuple[str, ...], request_file: Path | None,
                out: Path | None, as_json: bool, validate_only: bool, quiet: bool, **options: Any) -> None:
    """Execute a bundle on this host's GPU (what every transport runs on the GPU host)."""
    from wfbench_core.compiling.prepare import validate
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.run.executor import execute

    reg = load_registry()
    if request_file is not None:
        from wfbench_core.record.fsutil import decode_text, read_bytes

        text = decode_text(read_bytes(request_file, "a wfbench request"), str(request_file), "a wfbench request",
                           kind="JSON text")
        request = ExecuteRequest.from_json(text, where=str(request_file))
    else:
        request = execute_request(case_ids, options)
    if priorities and not request.case_ids:
        wanted = {c.id for c in reg.select(priorities=priorities)}
        ids = tuple(cid for cid in validate(bundle, reg) if cid in wanted)
        if not ids:
            raise WfbenchError(f"bundle {bundle} holds no case of priority {', '.join(priorities)}")
        request = attrs.evolve(request, case_ids=ids)
    if validate_only:
        valid = validate(bundle, reg, request.case_ids)
        click.echo(json.dumps({"valid": True, "cases": valid}) if as_json else f"bundle ok: {', '.join(valid)}")
        return
    try:
        result = execute(bundle, registry=reg, request=request, progress=progress_printer(quiet), out=out)
    except NoGpuError as exc:
        raise exc.with_hint("copy the bundle to a GPU host and execute it there (or let 'wfbench run "
                            "--transport ssh|vast' ship it)") from None
    finish(result, out, as_json, ceiling=request.ceiling)
