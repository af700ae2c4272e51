"""``wfbench build``: compile the WarpForth side into a bundle a GPU host can execute."""

from __future__ import annotations

from pathlib import Path

import click

from wfbench_core.bundle import build_bundle
from wfbench_core.cli.common import case_options, load_registry, progress_printer, warpforthc_option
from wfbench_core.compile import find_warpforthc
from wfbench_core.errors import WfbenchError
from wfbench_core.executor import detect_source


@click.command("build")
@case_options
@warpforthc_option
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path), default=Path("wfbench-bundle"),
              show_default=True, help="Bundle folder to write (replaced if it is a bundle).")
@click.option("--arch", default=None, metavar="sm_XX", help="Target for warpforthc, when it accepts --arch.")
@click.option("--commit", default=None, help="Commit of the WarpForth tree being benchmarked (recorded).")
@click.option("--quiet", "-q", is_flag=True)
def build(case_ids: tuple[str, ...], priorities: tuple[str, ...], warpforthc: str | None, out_dir: Path,
          arch: str | None, commit: str | None, quiet: bool) -> None:
    """Compile WarpForth for the selected cases into a self-describing bundle folder."""
    reg = load_registry()
    cases = reg.select(case_ids, priorities=priorities)
    binary = find_warpforthc(warpforthc)
    manifest = build_bundle(cases, out_dir, warpforthc=binary, arch=arch, source=detect_source(commit, binary),
                            plugins={c.id: reg.cases[c.id].plugin for c in cases},
                            progress=progress_printer(quiet))
    click.echo(f"bundle {out_dir}: {len(manifest.cases)} case(s), warpforthc {manifest.warpforthc.version}")
    if manifest.failures:
        for why in manifest.failures.values():
            click.echo(f"  {why}", err=True)
        raise WfbenchError(f"{len(manifest.failures)} case(s) did not compile: "
                           f"{', '.join(manifest.failures)}")


COMMANDS = [build]
