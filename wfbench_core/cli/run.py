"""``wfbench run``: build the bundle here and execute it on a transport's GPU."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import click

from wfbench_core.cli.common import (
    case_options,
    check_cuda_option,
    execute_options,
    execute_request,
    finish,
    load_registry,
    progress_printer,
    run_request,
    split_opt,
    warpforthc_option,
)
from wfbench_core.errors import NoGpuError, WfbenchError

__all__ = ["NO_LOCAL_GPU_HINT", "run_cmd"]  # internal, not the plugin API


def _default_out() -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path("wfbench-results") / f"run-{stamp}.json"


NO_LOCAL_GPU_HINT = "run it where the GPU is: --transport ssh or --transport vast ('wfbench transports' lists them)"


@click.command("run")
@case_options
@warpforthc_option
@check_cuda_option
@execute_options
@click.option("--transport", "-t", default="local", show_default=True, help="Where to run (see 'wfbench transports').")
@click.option("--transport-opt", "transport_opts", multiple=True, metavar="KEY=VALUE",
              help="Option for the transport (repeatable).")
@click.option("--max-cost", type=click.FloatRange(0), default=None, metavar="USD",
              help="Refuse to rent when the cost estimate exceeds this (rented transports: vast).")
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Result JSON file, rewritten after every case [default: wfbench-results/run-<time>.json].")
@click.option("--json", "as_json", is_flag=True, help="Print the result JSON instead of the table.")
@click.option("--commit", default=None, help="Commit of the WarpForth tree being benchmarked (recorded).")
@click.option("--bundle", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Execute this bundle ('wfbench build') instead of compiling here: no warpforthc runs, so the "
                   "process holding the transport's credentials runs no compiler.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def run_cmd(case_ids: tuple[str, ...], priorities: tuple[str, ...], warpforthc: tuple[str, ...],
        warpforth: tuple[str, ...], check_cuda: bool, transport: str, transport_opts: tuple[str, ...],
        max_cost: float | None, out: Path | None, as_json: bool, commit: str | None, bundle: Path | None,
        quiet: bool, **options: Any) -> None:
    """Build the bundle here (or take --bundle) and execute it on a GPU: check, time, print the table, write JSON."""
    from wfbench_core.run import runner

    reg = load_registry()
    if transport == "local" and warpforth and bundle is None:  # no GPU here: say so before building compilers
        from wfbench_core.gpu.device import gpu_unavailable_reason

        reason = gpu_unavailable_reason()
        if reason:
            raise NoGpuError(reason).with_hint(NO_LOCAL_GPU_HINT)
    if bundle is not None:
        if warpforth:
            raise WfbenchError("--bundle runs a bundle built before: --warpforth has nothing to build")
        request = _prebuilt_request(reg, bundle, case_ids, priorities, warpforthc, commit, transport, transport_opts,
                                    execute_request((), options))
    else:
        request = run_request(reg, case_ids, priorities, warpforthc, warpforth=warpforth, commit=commit,
                              check_cuda=check_cuda, transport=transport, transport_opts=transport_opts,
                              execute=execute_request((), options), progress=progress_printer(quiet))
    transport_options: dict[str, Any] = dict(request.transport_options)
    transport_class = reg.transport(transport)
    if max_cost is not None:
        if "max_cost" not in transport_class.OPTIONS:
            raise WfbenchError(f"--max-cost applies to transports that rent machines; {transport!r} does not")
        transport_options["max_cost"] = str(max_cost)
    progress = progress_printer(quiet)
    out = out if out is not None else _default_out()
    t = transport_class(registry=reg, cuda_compiler=request.execute.cuda_compiler, progress=progress,
                        **transport_options)
    try:
        result = runner.run(request, reg, t, progress=progress, out=out, bundle=bundle)
    except NoGpuError as exc:
        if transport != "local":
            raise
        raise exc.with_hint(NO_LOCAL_GPU_HINT) from None
    finally:
        t.close()
    finish(result, out, as_json, ceiling=request.execute.ceiling)


def _prebuilt_request(reg: Any, bundle: Path, case_ids: tuple[str, ...], priorities: tuple[str, ...],
                      warpforthc: tuple[str, ...], commit: str | None, transport: str,
                      transport_opts: tuple[str, ...], execute: Any) -> Any:
    """The request of ``run --bundle``: the bundle checked here against the installed cases, before anything
    is rented; cases as selected (every case of the bundle, its compile failures included, by default)."""
    import attrs

    from wfbench_core.compiling.prepare import validate
    from wfbench_core.record.request import RunRequest

    if warpforthc or commit:
        raise WfbenchError("--bundle runs no compiler and records the bundle's own source: leave out "
                           "--warpforthc and --commit")
    ids = validate(bundle, reg, case_ids)
    if priorities:
        wanted = {c.id for c in reg.select(priorities=priorities)}
        case_ids = case_ids or tuple(cid for cid in ids if cid in wanted)
        if not case_ids:
            raise WfbenchError(f"bundle {bundle} holds no case of priority {', '.join(priorities)}")
    return RunRequest(cases=reg.refs([reg.case(cid) for cid in ids if not case_ids or cid in case_ids]),
                      execute=attrs.evolve(execute, case_ids=tuple(case_ids)), transport=transport,
                      transport_options=dict(split_opt(o) for o in transport_opts), check_cuda=False)

