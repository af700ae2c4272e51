"""The ``wfbench`` command line: one module per command, each thin over the library."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import click

from wfbench_core import __version__
from wfbench_core.errors import WfbenchError


class _Group(click.Group):
    """Turns user errors into one line on stderr and an exit code, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except WfbenchError as exc:
            click.echo(f"wfbench: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("wfbench: interrupted", err=True)
            sys.exit(130)


def _showwarning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    click.echo(f"wfbench: warning: {message}", err=True)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="wfbench")
def main() -> None:
    """Benchmark WarpForth kernels against hand-written CUDA on the same GPU.

    gap = median WarpForth kernel time / median CUDA kernel time (1.0 = parity, lower is better).
    """
    warnings.showwarning = _showwarning


def _register_commands() -> None:
    from wfbench_core.cli import (bisect, build, cases, check, compare, crosscheck, dashboard, execute, explain,
                                  export, history, prcomment, run, toolchain, transports)

    for module in (cases, transports, toolchain, build, run, execute, history, check, compare, dashboard, export,
                   explain, prcomment, bisect, crosscheck):
        for command in module.COMMANDS:
            main.add_command(command)


_register_commands()
