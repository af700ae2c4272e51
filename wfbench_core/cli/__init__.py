"""The ``wfbench`` command line: one module per command, each thin over the library."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import click

from wfbench_core import __version__
from wfbench_core.cli.lazy import LazyCommand, LazyGroup
from wfbench_core.errors import WfbenchError

__all__ = ["COMMANDS", "main"]  # internal, not the plugin API


class _Group(LazyGroup):
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
        except OSError as exc:  # a place that cannot be written or read: read-only, full, a symlink loop ...
            import errno

            from wfbench_core.record.fsutil import os_error_line

            if exc.errno == errno.EPIPE:
                raise  # stdout closed by a pager: click ends quietly

            click.echo(f"wfbench: error: {os_error_line(exc)}", err=True)
            sys.exit(WfbenchError.exit_code)
        except RuntimeError as exc:
            from wfbench_core.record.fsutil import symlink_loop_line

            line = symlink_loop_line(exc)
            if line is None:
                raise
            click.echo(f"wfbench: error: {line}", err=True)
            sys.exit(WfbenchError.exit_code)


def _showwarning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    click.echo(f"wfbench: warning: {message}", err=True)


def _command(name: str, module: str) -> LazyCommand:
    """Command ``name`` is the function ``<name>_cmd`` (``-`` as ``_``) of ``wfbench_core.cli.<module>``."""
    return LazyCommand(f"wfbench_core.cli.{module}", f"{name.replace('-', '_')}_cmd")


#: every command and its module (imported only when it runs); its help is its function's docstring
COMMANDS = {name: _command(name, module) for name, module in {
    "build": "build", "check": "check", "compare": "compare", "coverage": "coverage", "crosscheck": "crosscheck",
    "dashboard": "dashboard", "execute": "execute", "explain": "explain", "export": "export",
    "history": "history", "list": "cases", "new-case": "cases", "run": "run", "sweep": "sweep",
    "transports": "transports", "toolchain": "toolchain", "compilers": "toolchain", "bisect": "bisect",
    "pr-comment": "prcomment", "pr-post": "prpost",
}.items()}


@click.group(cls=_Group, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="wfbench")
def main() -> None:
    """Benchmark WarpForth kernels against hand-written CUDA on the same GPU.

    gap = median WarpForth kernel time / median CUDA kernel time (1.0 = parity, lower is better).
    """
    warnings.showwarning = _showwarning
