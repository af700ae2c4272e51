"""Options and helpers shared by several commands."""

from __future__ import annotations

import functools
from typing import Any, Callable

import click

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
    return click.option("--warpforthc", "warpforthc", metavar="PATH", default=None,
                        help="warpforthc binary (else $WFBENCH_WARPFORTHC, else PATH).")(f)


def progress_printer(quiet: bool) -> Callable[[str], None]:
    if quiet:
        return lambda msg: None
    return functools.partial(click.echo, err=True)
