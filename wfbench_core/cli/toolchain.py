"""``wfbench toolchain``: what building warpforthc from source (``--warpforth``) finds here, or needs."""

from __future__ import annotations

from pathlib import Path

import click

from wfbench_core.cli.common import warpforthc_option
from wfbench_core.errors import WfbenchError

__all__ = ["compilers_cmd", "toolchain_cmd"]  # internal, not the plugin API


@click.command("toolchain")
@click.argument("warpforth", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--packages", is_flag=True,
              help="Print only the Debian/Ubuntu packages of the recipe, for the LLVM version WARPFORTH's CI uses "
                   "(for apt-get install in CI).")
def toolchain_cmd(warpforth: Path | None, packages: bool) -> None:
    """The toolchain --warpforth builds warpforthc with: cmake, ninja, a C++ compiler, MLIR, ccache.

    WARPFORTH (a checkout) names the LLVM version its CI uses, for the packages to install.
    Exit 0 when everything needed is here, 2 (with the packages to install) when not.
    """
    from wfbench_core.compiling import warpforth_build as wb

    llvm = None
    if warpforth is not None:
        ci = warpforth / ".github" / "workflows" / "ci.yml"
        llvm = wb.ci_llvm_version(ci.read_text(errors="replace") if ci.is_file() else None)
        if llvm is None:
            raise WfbenchError(f"{ci}: no single LLVM_VERSION in WarpForth's CI workflow, so the LLVM/MLIR to "
                               f"install is unknown: its recipe changed (name the packages yourself, or set "
                               f"{wb.MLIR_ENV})")
    if packages:
        click.echo(" ".join(wb.packages(llvm)))
        return
    tc = wb.find_toolchain(llvm)
    for name, value in (("cmake", tc.cmake), ("ninja", tc.ninja), ("C++", f"{tc.cxx} ({tc.cxx_version})"),
                        ("MLIR", f"{tc.mlir_version} ({tc.mlir_dir})"),
                        ("ccache", tc.ccache or "not found (optional: base/head builds then share nothing)"),
                        ("cache", wb.cache_root() / "warpforthc")):
        click.echo(f"{name:7} {value}")


@click.command("compilers")
@warpforthc_option
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def compilers_cmd(warpforthc: tuple[str, ...], warpforth: tuple[str, ...], quiet: bool) -> None:
    """The warpforthc binaries that build and run would use with these options, built first where
    --warpforth asks for it: one line each, LABEL=PATH (PATH alone for one compiler), ready to
    be given back as --warpforthc."""
    from wfbench_core.cli.common import progress_printer, resolve_warpforthc

    found = resolve_warpforthc(warpforthc, warpforth, progress_printer(quiet))
    if isinstance(found, Path):
        click.echo(str(found))
        return
    for label, path in found.items():
        click.echo(f"{label}={path}")

