"""``wfbench build``: compile the WarpForth side into a bundle a GPU host can execute."""

from __future__ import annotations

from pathlib import Path

import click

from wfbench_core.cli.common import (
    case_options,
    check_cuda_option,
    load_registry,
    local_cuda_checker,
    progress_printer,
    run_request,
    warpforthc_option,
)


@click.command("build")
@case_options
@warpforthc_option
@check_cuda_option
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path), default=Path("wfbench-bundle"),
              show_default=True, help="Bundle folder to write (replaced if it is a bundle).")
@click.option("--arch", default=None, metavar="sm_XX", help="Target for warpforthc, when it accepts --arch.")
@click.option("--commit", default=None, help="Commit of the WarpForth tree being benchmarked (recorded).")
@click.option("--quiet", "-q", is_flag=True)
def build(case_ids: tuple[str, ...], priorities: tuple[str, ...], warpforthc: tuple[str, ...], check_cuda: bool, out_dir: Path,
          arch: str | None, commit: str | None, quiet: bool) -> None:
    """Compile WarpForth for the selected cases into a self-describing bundle folder."""
    from wfbench_core import runner

    reg = load_registry()
    request = run_request(reg, case_ids, priorities, warpforthc, commit=commit, check_cuda=check_cuda)
    # Strict: the first source that does not compile stops the build and nothing is written.
    manifest = runner.build(request, reg, out_dir, arch=arch, progress=progress_printer(quiet), keep_going=False,
                            check_cuda=local_cuda_checker(check_cuda))
    what = f"compilers {', '.join(manifest.labels)}" if manifest.labels else f"warpforthc {manifest.warpforthc.version}"
    click.echo(f"bundle {out_dir}: {len(request.cases)} case(s), {what}")


COMMANDS = [build]
