#!/usr/bin/env python3
"""Write ``wfbench coverage``'s output into the README and docs/coverage.md, where they show it.

    python3 tools/coverage_doc.py           # rewrite every coverage block with the command's output now
    python3 tools/coverage_doc.py --check   # list the documents whose block differs (exit 1), change nothing

A block is ``<!-- coverage: wfbench coverage -->`` … ``<!-- /coverage -->`` holding the output in a
``text`` code block. The output is the command's own, run as ``python -m wfbench_core coverage`` with the
installed cases (plugins named by ``WFBENCH_PLUGINS`` left out), so adding a case and running this once brings
the documents up to date; tests/test_coverage.py fails while one is stale.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"(<!-- coverage: wfbench coverage -->\n)(.*?)(<!-- /coverage -->)", re.S)
PLUGIN_VARIABLES = ("WFBENCH_PLUGINS", "WFBENCH_DISABLE_PLUGIN_AUTOLOAD")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def output() -> str:
    """What ``wfbench coverage`` prints now."""
    env = {k: v for k, v in os.environ.items() if k not in PLUGIN_VARIABLES}
    done = subprocess.run([sys.executable, "-m", "wfbench_core", "coverage"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise SystemExit(f"wfbench coverage failed: {done.stderr.strip()}")
    return done.stdout


def rendered(text: str, out: str) -> str:
    return BLOCK.sub(lambda m: f"{m.group(1)}```text\n{out}```\n{m.group(3)}", text)


def stale(out: str | None = None) -> list[str]:
    """The documents (relative paths) whose coverage block is not the command's output."""
    out = output() if out is None else out
    return [str(doc.relative_to(ROOT)) for doc in documents()
            if BLOCK.search(doc.read_text()) and rendered(doc.read_text(), out) != doc.read_text()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="list stale documents and exit 1; change nothing")
    args = ap.parse_args(argv)
    out = output()
    if args.check:
        found = stale(out)
        for doc in found:
            print(f"{doc}: coverage block differs from `wfbench coverage` (run python3 tools/coverage_doc.py)")
        return 1 if found else 0
    for doc in documents():
        text = doc.read_text()
        if BLOCK.search(text) and rendered(text, out) != text:
            doc.write_text(rendered(text, out))
            print(f"{doc.relative_to(ROOT)}: coverage block rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
