"""``wfbench crosscheck BUNDLE``: time the bundle's PTX with nvbench and compare with wfbench's medians."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from wfbench_core.cli.common import case_options, load_registry, progress_printer
from wfbench_core.errors import CaseFailed, NoGpuError, WfbenchError
from wfbench_core.record.results import TIMING_EVENTS, TIMING_MODES, TimingProtocol, load_result

__all__ = ["crosscheck_cmd"]  # internal, not the plugin API


@click.command("crosscheck")
@click.argument("bundle", type=click.Path(exists=True, file_okay=False, path_type=Path))
@case_options
@click.option("--against", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Compare with this stored run's medians instead of timing with wfbench here.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(TIMING_MODES),
              help="wfbench timing mode(s) to compare (repeatable) [default: events]. cold-l2 is compared "
                   "with nvbench's cold figure, the others with its batch figure where nvbench's launcher is "
                   "not the bottleneck.")
@click.option("--small", is_flag=True, help="Time the cases at their small 'check' sizes (where launch "
                                             "overhead and L2 matter) instead of the canonical ones.")
@click.option("--samples", type=click.IntRange(5, 10_000), default=TimingProtocol().samples, show_default=True,
              help="wfbench's paired samples per case and mode.")
@click.option("--tolerance", type=click.FloatRange(0, 1), default=0.01, show_default=True,
              help="Per-kernel agreement required of like figures (fraction); beyond it the exit status is 1.")
@click.option("--nvbench-json", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Keep nvbench's own JSON output here.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON instead of tables.")
@click.option("--cuda-compiler", type=click.Choice(["auto", "nvcc", "nvrtc"]), default="auto", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def crosscheck_cmd(bundle: Path, case_ids: tuple[str, ...], priorities: tuple[str, ...], against: Path | None,
                   modes: tuple[str, ...], small: bool, samples: int, tolerance: float, nvbench_json: Path | None,
                   as_json: bool, cuda_compiler: str, quiet: bool) -> None:
    """Time BUNDLE's kernels with nvbench (cuda-bench) and report per-kernel and gap agreement."""
    from wfbench_core.compiling.prepare import validate
    from wfbench_core.studies import crosscheck as xc

    reg = load_registry()
    if priorities and not case_ids:
        wanted = {c.id for c in reg.select(priorities=priorities)}
        case_ids = tuple(cid for cid in validate(bundle, reg) if cid in wanted)
        if not case_ids:
            raise WfbenchError(f"bundle {bundle} holds no case of priority {', '.join(priorities)}")
    if against is not None and modes:
        raise WfbenchError("--mode times with wfbench here; with --against the stored run's mode is used")
    stored = load_result(against) if against is not None else None
    try:
        with tempfile.TemporaryDirectory(prefix="wfbench-nvbench-") as tmp:
            kernels, gaps = xc.crosscheck(
                bundle, registry=reg, case_ids=case_ids, against=stored, modes=modes or (TIMING_EVENTS,),
                small=small, protocol=TimingProtocol(samples=samples), cuda_compiler_kind=cuda_compiler,
                json_path=nvbench_json or Path(tmp) / "nvbench.json", progress=progress_printer(quiet))
    except NoGpuError as exc:
        raise exc.with_hint("copy the bundle to a GPU host and cross-check it there") from None
    if as_json:
        click.echo(json.dumps(xc.as_json(kernels, gaps, tolerance), indent=1))
    else:
        click.echo(xc.render(kernels, gaps, tolerance))
    beyond = xc.disagreements(kernels, tolerance)
    if beyond:
        raise CaseFailed(f"wfbench and nvbench differ by more than {tolerance:.1%} on like figures: "
                         + ", ".join(beyond))

