"""``wfbench toolchain``: what building warpforthc from source (``--warpforth``) finds here, or needs."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click


@click.command("toolchain")
@click.argument("warpforth", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--packages", is_flag=True,
              help="Print only the Debian/Ubuntu packages of the recipe, for the LLVM version WARPFORTH's CI uses "
                   "(for apt-get install in CI).")
def toolchain(warpforth: Optional[Path], packages: bool) -> None:
    """The toolchain ``--warpforth`` builds warpforthc with: cmake, ninja, a C++ compiler, MLIR, ccache.

    WARPFORTH (a checkout) names the LLVM version its CI uses, for the packages to install.
    Exit 0 when everything needed is here, 2 (with the packages to install) when not.
    """
    from wfbench_core import warpforth_build as wb

    llvm = None
    if warpforth is not None:
        ci = warpforth / ".github" / "workflows" / "ci.yml"
        llvm = wb.ci_llvm_version(ci.read_text(errors="replace") if ci.is_file() else None)
    if packages:
        click.echo(" ".join(wb.packages(llvm)))
        return
    tc = wb.find_toolchain(llvm)
    for name, value in (("cmake", tc.cmake), ("ninja", tc.ninja), ("C++", f"{tc.cxx} ({tc.cxx_version})"),
                        ("MLIR", f"{tc.mlir_version} ({tc.mlir_dir})"),
                        ("ccache", tc.ccache or "not found (optional: base/head builds then share nothing)"),
                        ("cache", wb.cache_root() / "warpforthc")):
        click.echo(f"{name:7} {value}")


COMMANDS = [toolchain]
