"""The ``wfbench`` command line: one module per command, each thin over the library."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import click

from wfbench_core import __version__
from wfbench_core.cli.lazy import LazyCommand, LazyGroup
from wfbench_core.errors import WfbenchError


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


def _command(module: str, attribute: str, help: str) -> LazyCommand:
    return LazyCommand(f"wfbench_core.cli.{module}", attribute, help)


#: every command: its module, its click object and its help line (imported only when it runs)
COMMANDS = {
    "build": _command("build", "build", "Compile WarpForth for the selected cases into a self-describing bundle folder."),
    "check": _command("check", "check_cmd", "Judge the newest run (or RESULT) against its series' history."),
    "compare": _command("compare", "compare_cmd", "Per case change of the gap and of each side's time, BASE.json "
                        "HEAD.json or one base/head run."),
    "coverage": _command("coverage", "coverage_cmd", "For every word family of WarpForth's language reference: "
                         "the cases that use it and the words no case uses; words the reference does not list; "
                         "with --probe, the words a warpforthc rejects."),
    "crosscheck": _command("crosscheck", "crosscheck_cmd", "Time BUNDLE's kernels with nvbench (cuda-bench) and "
                           "report per-kernel and gap agreement."),
    "dashboard": _command("dashboard", "dashboard_cmd", "Write the static dashboard of a history (works from "
                          "file://, no network)."),
    "execute": _command("execute", "execute_cmd", "Execute a bundle on this host's GPU (what every transport runs "
                        "on the GPU host)."),
    "explain": _command("explain", "explain", "Explain CASE's gap: static diagnostics of both sides (ptxas, SASS "
                        "mix, occupancy), the largest SASS differences, each side's hottest loop, and with "
                        "--profile Nsight Compute metrics."),
    "export": _command("export", "export_cmd", "Convert a result for github-action-benchmark "
                       "(customSmallerIsBetter)."),
    "history": _command("history", "history_group", "The history store: append-only run files and the series they "
                        "form."),
    "list": _command("cases", "list_cases", "List installed cases: ID, version, priority, sizes and the plugin each "
                     "came from."),
    "run": _command("run", "run", "Build the bundle here (or take --bundle) and execute it on a GPU: check, time, print the table, "
                    "write JSON."),
    "sweep": _command("sweep", "sweep_cmd", "Time CASE over a range of sizes on this machine's GPU: gap against "
                      "size as JSON and a plot."),
    "transports": _command("transports", "list_transports", "List the installed transports (where bundles can "
                           "run); with NAME, its --transport-opt options."),
    "new-case": _command("cases", "new_case", "Scaffold a case plugin package NAME: the case, both kernel files as "
                         "package data, the entry point and a check_case test."),
    "toolchain": _command("toolchain", "toolchain",
        "The toolchain --warpforth builds warpforthc with: cmake, ninja, a C++ compiler, "
        "MLIR, ccache."),
    "compilers": _command("toolchain", "compilers",
        "The warpforthc binaries that build and run would use with these options, built first "
        "where --warpforth asks for it: one line each, LABEL=PATH (PATH alone for one "
        "compiler), ready to be given back as --warpforthc."),
    "bisect": _command("bisect", "bisect_cmd",
        "Find the first commit between GOOD and BAD whose warpforthc makes CASE slower: GOOD "
        "against BAD first (it must be SLOWER), then a binary search, each step one base/head "
        "run (base = GOOD) on this machine's GPU."),
    "pr-comment": _command("prcomment", "pr_comment",
        "The pull-request comment of the base/head run RESULT: verdict table, head against "
        "base of every case whose verdict is not SAME, artifact links."),
    "pr-post": _command("prpost", "pr_post",
        "Post COMMENT (made by pr-comment) on a pull request, or rewrite the comment posted "
        "before: one comment per pull request, found by its hidden marker."),
}


@click.group(cls=_Group, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="wfbench")
def main() -> None:
    """Benchmark WarpForth kernels against hand-written CUDA on the same GPU.

    gap = median WarpForth kernel time / median CUDA kernel time (1.0 = parity, lower is better).
    """
    warnings.showwarning = _showwarning
