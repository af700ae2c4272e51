"""``wfbench bisect``: the first WarpForth commit that made a case slower, by base/head runs on this GPU."""

from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path
from typing import Any

import click

from wfbench_core.cli.common import load_registry, progress_printer, protocol_from, protocol_options
from wfbench_core.errors import WfbenchError

__all__ = ["DEFAULT_BINARY", "DEFAULT_BUILD", "bisect_cmd"]  # internal, not the plugin API

DEFAULT_BUILD = "cmake -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build --target warpforthc"
DEFAULT_BINARY = "build/bin/warpforthc"


def _cache() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "wfbench" / "warpforthc"


@click.command("bisect")
@click.option("--warpforth", "repo", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A WarpForth git checkout holding GOOD and BAD.")
@click.argument("good")
@click.argument("bad")
@click.option("--case", "-c", "case_id", required=True, metavar="ID", help="The case that got slower.")
@click.option("--build-cmd", default=DEFAULT_BUILD, show_default=True,
              help="Shell command that builds warpforthc in a commit's tree.")
@click.option("--binary", default=DEFAULT_BINARY, show_default=True, help="warpforthc, relative to the tree.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where builds are kept, one folder per commit [default: ~/.cache/wfbench/warpforthc].")
@click.option("--arch", default=None, metavar="sm_XX", help="Target [default: this host's GPU].")
@click.option("--results", "results_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where each base/head run's result is kept [default: wfbench-results/bisect-<time>].")
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the Markdown report here too.")
@protocol_options
@click.option("--quiet", "-q", is_flag=True)
def bisect_cmd(repo: Path, good: str, bad: str, case_id: str, build_cmd: str, binary: str, cache: Path | None,
               arch: str | None, results_dir: Path | None, out: Path | None, quiet: bool,
               **options: Any) -> None:
    """Find the first commit between GOOD and BAD whose warpforthc makes CASE slower: GOOD against BAD
    first (it must be SLOWER), then a binary search, each step one base/head run (base = GOOD) on this
    machine's GPU. Builds are cached by commit. Exit 0 when found, 1 when GOOD against BAD is not SLOWER."""
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.studies import bisect

    registry = load_registry()
    registry.case(case_id)  # an unknown case is refused before anything is built
    commits = bisect.commits_between(repo, good, bad)
    progress = progress_printer(quiet)
    arch = arch or registry.transport("local")(registry=registry).gpu_arch()  # NoGpuError (one line) without a GPU
    if arch is None:
        raise WfbenchError("this host's GPU architecture is unknown; give it with --arch sm_XX")
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    results_dir = results_dir or Path("wfbench-results") / f"bisect-{stamp}"
    results_dir.mkdir(parents=True, exist_ok=True)
    build = bisect.command_builder(repo, cache or _cache(), build_cmd, binary, progress=progress)
    judge = bisect.gpu_judge(registry, case_id, execute=ExecuteRequest(protocol=protocol_from(options)), arch=arch,
                             out_dir=results_dir, progress=progress)
    found = bisect.search(bisect.resolve(repo, good), commits, build=build, judge=judge,
                          explain=bisect.bundle_explainer(registry, case_id, arch), progress=progress)
    subjects = {c: bisect.subject(repo, c) for c in {s.head for s in found.steps}}
    text = bisect.render_markdown(found, case_id, subjects=subjects)
    if out is not None:
        from wfbench_core.record.fsutil import atomic_write

        atomic_write(out, text)
    click.echo(text, nl=False)
    if not found.found:
        sys.exit(1)

