"""Options and helpers shared by several commands."""

from __future__ import annotations

import functools
from typing import Any, Callable

from pathlib import Path

import click

from wfbench_core.compile import find_warpforthc
from wfbench_core.errors import WfbenchError
from wfbench_core.registry import Registry


def load_registry() -> Registry:
    return Registry.load()


def case_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--priority", "priorities", multiple=True, type=click.Choice(["P0", "P1"]),
                     help="Only cases of this priority (repeatable); default: all.")(f)
    f = click.option("--case", "-c", "case_ids", multiple=True, metavar="ID",
                     help="Case to include (repeatable); default: every installed case.")(f)
    return f


def warpforthc_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--warpforthc", "warpforthc", metavar="[LABEL=]PATH", multiple=True,
        help="warpforthc binary (else $WFBENCH_WARPFORTHC, else PATH). Give it twice as base=PATH and "
             "head=PATH to time two compilers against the same CUDA samples in one interleaved run.",
    )(f)


def resolve_warpforthc(values: tuple[str, ...]) -> Path | dict[str, Path]:
    """One binary, or ``{label: binary}`` when several ``LABEL=PATH`` are given."""
    if len(values) <= 1:
        value = values[0] if values else None
        if value and "=" in value and not Path(value).exists():
            value = value.split("=", 1)[1]
        return find_warpforthc(value)
    out: dict[str, Path] = {}
    for v in values:
        label, sep, path = v.partition("=")
        if not sep or not label or not path:
            raise WfbenchError(f"--warpforthc {v!r}: with several compilers each needs a label, e.g. base=PATH")
        if label in out:
            raise WfbenchError(f"--warpforthc: label {label!r} given twice")
        out[label] = find_warpforthc(path)
    return out


def first_binary(binary: Path | dict[str, Path]) -> Path:
    return binary if isinstance(binary, Path) else next(iter(binary.values()))


def progress_printer(quiet: bool) -> Callable[[str], None]:
    if quiet:
        return lambda msg: None
    return functools.partial(click.echo, err=True)


def check_cuda_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--check-cuda/--no-check-cuda", default=True, show_default=True,
                        help="Also compile the CUDA side here when nvcc is installed, to fail before shipping "
                             "the bundle (the GPU host compiles it again for its own GPU).")(f)


def local_cuda_checker(enabled: bool) -> Any:
    """The nvcc to check CUDA sources with at build time, or None (disabled or no nvcc here)."""
    from wfbench_core.compile import cuda_compiler, find_nvcc

    return cuda_compiler("nvcc") if enabled and find_nvcc() is not None else None
