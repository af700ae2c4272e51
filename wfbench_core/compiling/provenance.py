"""Where the benchmarked source comes from: the commit, the repository and the CI run a result names."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from wfbench_core.host.childenv import child_env
from wfbench_core.record.results import Source

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "detect_source",
]


def detect_source(commit: str | None = None, warpforthc: Path | None = None, label: str = "") -> Source:
    """Commit and CI run of what is benchmarked: the flag, CI variables, or the warpforthc build tree.

    ``WFBENCH_COMMIT`` and ``WFBENCH_REPO`` (``owner/name`` or a URL) name the benchmarked WarpForth tree
    when wfbench runs in another repository's CI; the CI run itself comes from ``GITHUB_*``.
    """
    env = os.environ
    ci_repo = env.get("GITHUB_REPOSITORY", "")
    server = env.get("GITHUB_SERVER_URL", "https://github.com")
    run_id = env.get("GITHUB_RUN_ID", "")
    if not commit and env.get("WFBENCH_COMMIT"):
        commit = env["WFBENCH_COMMIT"]
    from wfbench_core.compiling.warpforth_build import read_provenance  # a warpforthc wfbench built (--warpforth)

    built = read_provenance(Path(warpforthc)) if warpforthc is not None else None
    dirty = bool(built.get("git_dirty")) if built and (not commit or commit == built.get("git_commit")) else False
    if not commit and built:
        commit = str(built.get("git_commit", ""))
    if not commit and warpforthc is not None:
        try:
            commit = subprocess.run(["git", "-C", str(Path(warpforthc).parent), "rev-parse", "HEAD"],
                                    capture_output=True, text=True, timeout=10, check=False,
                                    env=child_env()).stdout.strip()
        except OSError:
            commit = ""
    repo = env.get("WFBENCH_REPO", "") or ci_repo
    if repo and "://" not in repo:
        repo = f"{server}/{repo}"
    return Source(
        git_commit=commit or "",
        git_repo=repo,
        ci_run_id=run_id,
        ci_run_url=f"{server}/{ci_repo}/actions/runs/{run_id}" if ci_repo and run_id else "",
        label=label,
        git_dirty=dirty,
    )
