"""``wfbench run`` (build here, execute on a transport) and ``wfbench execute`` (the GPU-host side)."""

from __future__ import annotations

import datetime as _dt
import json
import tempfile
from pathlib import Path

import click

from wfbench_core.bundle import build_bundle
from wfbench_core.cli.common import (
    case_options,
    check_cuda_option,
    local_cuda_checker,
    first_binary,
    load_registry,
    progress_printer,
    resolve_warpforthc,
    warpforthc_option,
)
from wfbench_core.errors import CaseFailed, WfbenchError
from wfbench_core.executor import detect_source, execute, validate
from wfbench_core.report import render
from wfbench_core.results import FAILED, ERROR, MODE_AA, MODE_PAIRED, Protocol, RunResult, dumps, write_result


def protocol_options(f):  # type: ignore[no-untyped-def]
    d = Protocol()
    f = click.option("--samples", type=click.IntRange(5, 10_000), default=d.samples, show_default=True,
                     help="Paired samples per case.")(f)
    f = click.option("--min-sample-ms", type=click.FloatRange(1, 10_000), default=d.min_sample_ms,
                     show_default=True, help="Each sample lasts at least this long.")(f)
    f = click.option("--warmup-s", type=click.FloatRange(0, 600), default=d.warmup_s, show_default=True,
                     help="Busy-GPU warm-up before timing each case.")(f)
    f = click.option("--budget-s", type=click.FloatRange(0), default=d.suite_budget_s, show_default=True,
                     help="Suite time budget on the GPU host (0 = none); cases left when it is spent end as ERROR.")(f)
    f = click.option("--aa", is_flag=True, help="A/A: time the CUDA PTX against itself (the method's floor).")(f)
    return f


def _protocol(samples: int, min_sample_ms: float, warmup_s: float, budget_s: float) -> Protocol:
    return Protocol(warmup_s=warmup_s, min_sample_ms=min_sample_ms, samples=samples, suite_budget_s=budget_s)


def _finish(result: RunResult, out: Path | None, as_json: bool) -> None:
    if out is not None:
        write_result(result, out)
    if as_json:
        click.echo(dumps(result), nl=False)
    else:
        click.echo(render(result))
        if out is not None:
            click.echo(f"result: {out}")
    bad = [c.id for c in result.cases if c.status in (FAILED, ERROR)]
    if bad:
        raise CaseFailed(f"{len(bad)} case(s) failed or could not run: {', '.join(bad)}")


def _default_out() -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path("wfbench-results") / f"run-{stamp}.json"


@click.command("run")
@case_options
@warpforthc_option
@check_cuda_option
@protocol_options
@click.option("--transport", "-t", default="local", show_default=True, help="Where to run (see 'wfbench transports').")
@click.option("--transport-opt", "transport_opts", multiple=True, metavar="KEY=VALUE",
              help="Option for the transport (repeatable).")
@click.option("--max-cost", type=click.FloatRange(0), default=None, metavar="USD",
              help="Refuse to rent when the cost estimate exceeds this (rented transports: vast).")
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Result JSON file [default: wfbench-results/run-<time>.json].")
@click.option("--json", "as_json", is_flag=True, help="Print the result JSON instead of the table.")
@click.option("--commit", default=None, help="Commit of the WarpForth tree being benchmarked (recorded).")
@click.option("--cuda-compiler", type=click.Choice(["auto", "nvcc", "nvrtc"]), default="auto", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def run(case_ids, priorities, warpforthc, check_cuda, samples, min_sample_ms, warmup_s, budget_s, aa, transport, transport_opts,
        max_cost, out, as_json, commit, cuda_compiler, quiet) -> None:  # type: ignore[no-untyped-def]
    """Build the bundle here and execute it on a GPU: check, time, print the table, write JSON."""
    reg = load_registry()
    cases = reg.select(case_ids, priorities=priorities)
    binary = resolve_warpforthc(warpforthc)
    options = dict(_split_opt(o) for o in transport_opts)
    transport_class = reg.transport(transport)
    if max_cost is not None:
        if "max_cost" not in (getattr(transport_class, "OPTIONS", None) or {}):
            raise WfbenchError(f"--max-cost applies to transports that rent machines; {transport!r} does not")
        options["max_cost"] = str(max_cost)
    progress = progress_printer(quiet)
    t = transport_class(registry=reg, cuda_compiler=cuda_compiler, progress=progress, **options)
    try:
        arch = t.gpu_arch()
        with tempfile.TemporaryDirectory(prefix="wfbench-bundle-") as tmp:
            bundle = Path(tmp) / "bundle"
            build_bundle(cases, bundle, warpforthc=binary, arch=arch, source=detect_source(commit, first_binary(binary)),
                         plugins={c.id: reg.cases[c.id].plugin for c in cases}, progress=progress,
                         check_cuda=local_cuda_checker(check_cuda and transport != "local"))
            result = t.execute(bundle, protocol=_protocol(samples, min_sample_ms, warmup_s, budget_s),
                               mode=MODE_AA if aa else MODE_PAIRED, case_ids=[c.id for c in cases],
                               progress=progress)
    finally:
        t.close()
    _finish(result, out if out is not None else _default_out(), as_json)


@click.command("execute")
@click.argument("bundle", type=click.Path(exists=True, file_okay=False, path_type=Path))
@case_options
@protocol_options
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Result JSON file.")
@click.option("--json", "as_json", is_flag=True, help="Print the result JSON instead of the table.")
@click.option("--validate-only", is_flag=True, help="Check the bundle against the installed cases; no GPU.")
@click.option("--cuda-compiler", type=click.Choice(["auto", "nvcc", "nvrtc"]), default="auto", show_default=True)
@click.option("--quiet", "-q", is_flag=True)
def execute_cmd(bundle, case_ids, priorities, samples, min_sample_ms, warmup_s, budget_s, aa, out, as_json, validate_only,
                cuda_compiler, quiet) -> None:  # type: ignore[no-untyped-def]
    """Execute a bundle on this host's GPU (what every transport runs on the GPU host)."""
    reg = load_registry()
    if priorities and not case_ids:
        wanted = {c.id for c in reg.select(priorities=priorities)}
        case_ids = tuple(cid for cid in validate(bundle, reg) if cid in wanted)
        if not case_ids:
            raise WfbenchError(f"bundle {bundle} holds no case of priority {', '.join(priorities)}")
    if validate_only:
        ids = validate(bundle, reg, case_ids)
        click.echo(json.dumps({"valid": True, "cases": ids}) if as_json else f"bundle ok: {', '.join(ids)}")
        return
    result = execute(bundle, registry=reg, protocol=_protocol(samples, min_sample_ms, warmup_s, budget_s),
                     mode=MODE_AA if aa else MODE_PAIRED, case_ids=case_ids,
                     cuda_compiler_kind=cuda_compiler, progress=progress_printer(quiet))
    _finish(result, out, as_json)


def _split_opt(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"expected KEY=VALUE, got {text!r}", param_hint="--transport-opt")
    return key.strip().replace("-", "_"), value


COMMANDS = [run, execute_cmd]
