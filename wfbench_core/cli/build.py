"""``wfbench build``: compile the WarpForth side into a bundle a GPU host can execute."""

from __future__ import annotations

from pathlib import Path

import click

from wfbench_core.cli.common import (
    case_options,
    check_cuda_option,
    load_registry,
    progress_printer,
    run_request,
    warpforthc_option,
)
from wfbench_core.cli.sweep import given_sizes, size_options, sweep_plan
from wfbench_core.errors import CaseFailed

__all__ = ["build_cmd"]  # internal, not the plugin API


@click.command("build")
@case_options
@warpforthc_option
@check_cuda_option
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path), default=Path("wfbench-bundle"),
              show_default=True, help="Bundle folder to write (replaced if it is a bundle).")
@click.option("--arch", default=None, metavar="sm_XX", help="Target for warpforthc, when it accepts --arch.")
@click.option("--commit", default=None, help="Commit of the WarpForth tree being benchmarked (recorded).")
@click.option("--fail-fast", is_flag=True,
              help="Stop at the first case that does not compile and write nothing (default: build the others, "
                   "record the failures in the bundle, exit 1).")
@click.option("--sweep", "with_sweep", is_flag=True,
              help="Also compile each case's sweep sizes (declared by the case, or --size/--range), for "
                   "'wfbench sweep --bundle'.")
@size_options
@click.option("--quiet", "-q", is_flag=True)
def build_cmd(case_ids: tuple[str, ...], priorities: tuple[str, ...], warpforthc: tuple[str, ...],
          warpforth: tuple[str, ...], check_cuda: bool, out_dir: Path, arch: str | None, commit: str | None,
          fail_fast: bool, with_sweep: bool, sizes: tuple[str, ...], ranges: tuple[str, ...], quiet: bool) -> None:
    """Compile WarpForth for the selected cases into a self-describing bundle folder.

    A case that does not compile is recorded in the bundle (execute and run report it as ERROR) and the
    others are still built; the exit code is then 1. With --sweep each case's sweep sizes are compiled too
    (a case that declares none, given no --size/--range, has no sweep in the bundle).
    """
    from wfbench_core.compiling.bundle import read_variants
    from wfbench_core.compiling.compile import CompileError
    from wfbench_core.run import runner

    reg = load_registry()
    if (sizes or ranges) and not with_sweep:
        raise click.UsageError("--size and --range give sweep sizes: add --sweep")
    given = given_sizes(sizes, ranges)
    sweeps = sweep_plan(reg.select(case_ids, priorities=priorities), given, strict=bool(given)) \
        if with_sweep else None
    request = run_request(reg, case_ids, priorities, warpforthc, warpforth=warpforth, commit=commit,
                          check_cuda=check_cuda, progress=progress_printer(quiet))
    cases = request.cases
    try:
        manifest = runner.build(request, reg, out_dir, arch=arch, progress=progress_printer(quiet),
                                keep_going=not fail_fast, sweeps=sweeps)
    except CompileError as exc:
        raise CaseFailed(f"{exc} (--fail-fast: stopped there; {out_dir} was not written)") from None
    what = f"compilers {', '.join(manifest.labels)}" if manifest.labels else f"warpforthc {manifest.warpforthc.version}"
    failed = manifest.failures
    unbuilt = {cid for sub, _ in read_variants(out_dir).values() for cid in sub.failures}  # under every compiler
    swept = f"; sweep sizes: {', '.join(f'{cid} ({len(s)})' for cid, s in sweeps.items())}" if sweeps else ""
    click.echo(f"bundle {out_dir}: {len(cases) - len(unbuilt)} of {len(cases)} case(s) built, {what}{swept}")
    if failed:
        if quiet:  # the progress lines, when shown, already said why
            for why in failed.values():
                click.echo(f"ERROR: {why}", err=True)
        raise CaseFailed(f"{len(failed)} case(s) did not compile and are recorded as ERROR in the bundle: "
                         f"{', '.join(failed)}")
