"""Steps of the wfbench GitHub action (action.yml) and of gpu-bench.yml that are easier in Python than in bash.

    python3 ci_steps.py llvm-version WARPFORTH_CI_YML   print the LLVM/MLIR major version WarpForth's CI installs
    python ci_steps.py summary RESULTS_DIR               job summary of a benchmark; exit 1 naming each failed case
    python ci_steps.py gate RESULT_JSON                  exit 1 unless every case of the result passed

``llvm-version`` needs only the standard library (it runs before wfbench is installed); ``summary`` and
``gate`` read the result with wfbench itself, so a case's status means here what it means everywhere.
Errors are one ``::error::`` line (a GitHub annotation) and exit status 1.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

RESULT_NAME = "wfbench-run.json"
TABLE_NAME = "table.txt"


def fail(message: str) -> None:
    print(f"::error::{message}")
    sys.exit(1)


def llvm_version(ci_yml: Path) -> str:
    """The value of ``LLVM_VERSION`` in WarpForth's CI workflow (its ``env:``), e.g. ``20``."""
    try:
        text = ci_yml.read_text()
    except OSError as exc:
        fail(f"{ci_yml}: cannot read WarpForth's CI workflow ({exc.strerror}); is this a WarpForth checkout?")
    found = sorted(set(re.findall(r"""^[ \t]*LLVM_VERSION:[ \t]*["']?(\d+)["']?[ \t]*(?:#.*)?$""", text, re.M)))
    if len(found) != 1:
        what = "no LLVM_VERSION" if not found else f"several LLVM_VERSION values {found}"
        fail(f"{ci_yml}: {what} in WarpForth's CI workflow: its recipe changed, update gpu-bench.yml (docs/ci.md)")
    return found[0]


def _failed(result: object) -> list[object]:
    from wfbench_core.record.results import ERROR, FAILED

    return [c for c in result.cases if c.status in (FAILED, ERROR)]  # type: ignore[attr-defined]


def _load(path: Path) -> object:
    from wfbench_core.errors import WfbenchError
    from wfbench_core.record.results import load_result

    try:
        return load_result(path)
    except WfbenchError as exc:
        fail(str(exc))
    raise AssertionError  # unreachable


def _label(case: object) -> str:
    label = getattr(case, "compiler_label", "")
    return case.id + (f" [{label}]" if label else "")  # type: ignore[attr-defined]


def summary(results: Path) -> int:
    env = os.environ
    repo = env.get("WFBENCH_REPO") or env.get("GITHUB_REPOSITORY", "")
    lines = [f"## wfbench: WarpForth vs CUDA on {env.get('GPU_NAME', '?')} ({env.get('GPU_ARCH', '?')})", "",
             f"WarpForth {repo}@{env.get('WFBENCH_COMMIT') or 'unknown'}; gap = WarpForth / CUDA median kernel "
             "time, lower is better.", ""]
    result_path, table = results / RESULT_NAME, results / TABLE_NAME
    failed: list[object] = []
    if result_path.is_file():
        result = _load(result_path)
        failed = _failed(result)
        if table.is_file() and table.read_text().strip():
            lines += ["```", table.read_text().rstrip(), "```", ""]
        if failed:
            lines += [f"### {len(failed)} case(s) failed: this run is not stored in the history", "",
                      "| case | status | reason |", "|---|---|---|"]
            for c in failed:
                reason = (c.message or "(no message)").replace("|", "\\|").replace("\n", " ")  # type: ignore[attr-defined]
                lines.append(f"| {_label(c)} | {c.status.upper()} | {reason} |")  # type: ignore[attr-defined]
            lines.append("")
    else:
        lines += ["No result: see the log of the benchmark step. Nothing is stored.", ""]
    out = env.get("GITHUB_STEP_SUMMARY")
    text = "\n".join(lines) + "\n"
    if out:
        with open(out, "a") as f:
            f.write(text)
    else:
        print(text)
    for c in failed:
        print(f"::error::{_label(c)} {c.status.upper()}: {c.message or '(no message)'}")  # type: ignore[attr-defined]
    if not result_path.is_file():
        print(f"::error::no result ({result_path}): the benchmark did not finish")
    return 1 if failed or not result_path.is_file() else 0


def gate(result_path: Path) -> int:
    if not result_path.is_file():
        fail(f"{result_path}: no result to store")
    failed = _failed(_load(result_path))
    if failed:
        names = ", ".join(f"{_label(c)} ({c.status.upper()})" for c in failed)  # type: ignore[attr-defined]
        fail(f"{result_path}: {len(failed)} case(s) failed or could not run ({names}): a failed run is never stored")
    print(f"{result_path}: every case passed")
    return 0


def main(argv: list[str]) -> int:
    commands = {"llvm-version": 1, "summary": 1, "gate": 1}
    if len(argv) != 2 or argv[0] not in commands:
        fail(f"usage: ci_steps.py {{{'|'.join(commands)}}} PATH (got {' '.join(argv) or 'nothing'})")
    command, path = argv[0], Path(argv[1])
    if command == "llvm-version":
        print(llvm_version(path))
        return 0
    return summary(path) if command == "summary" else gate(path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
