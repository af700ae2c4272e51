#!/usr/bin/env python3
"""Re-record the example history (examples/history) from real runs under the current protocol.

Three steps, because warpforthc is built where its toolchain is and the runs need the GPU:

    # 1. here (cmake, ninja, MLIR; no GPU): the bundles, both compilers built by --warpforth
    python3 tools/record_example_history.py build OUT --base REPO@OLDER --head REPO@NEWER

    # 2. on the GPU host, from the repository root (each step about a minute; 'all' runs them in order)
    python3 tools/record_example_history.py run OUT base|basehead|aa|plugin|head-1|head-2|all [--results DIR]

    # 3. anywhere: replace examples/history with these runs, store the figures' sources, check the result
    python3 tools/record_example_history.py assemble OUT [--results DIR]

The results go to OUT/results, or to ``--results DIR`` (where a GPU host's results are collected).

The history it makes, oldest first: a suite run of the older compiler, a base/head run (older = base, newer
= head), an A/A run, a P0 run made through the pytest plugin, then two suite runs of the newer compiler.
The newest run is a whole suite run, so ``wfbench check --history examples/history`` has every case of the
run before it and exits 0 (``assemble`` runs it and fails otherwise). ``assemble`` also stores the newest
suite run as docs/results/h200-suite.json and the A/A run as docs/results/h200-aa.json, and re-renders the
figures of README.md and docs/*.md (tools/docs_figures.py).

The example history in the repository ends with one more run: the stored run of the whole suite with
``--ceiling`` (docs/results/h200-ceiling.json, added unchanged with ``wfbench history add``), so that its
dashboard shows the library ceilings (docs/dashboard.md). ``assemble`` replaces runs/: after a re-recording,
time the head bundle with ``wfbench execute OUT/suite-head --ceiling -o RESULT`` on the GPU host and add that
run the same way, as the newest.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the run steps in the order they are made (their results are named <n>-<step>.json)
STEPS = ("base", "basehead", "aa", "plugin", "head-1", "head-2")
PLUGIN_TEST = '''\
import pytest


@pytest.mark.wfbench
def test_benchmark(wfbench_bench, wfbench_case):
    wfbench_bench(wfbench_case)
'''


def wfbench(*args: str) -> None:
    print("+ wfbench " + " ".join(args), flush=True)
    subprocess.run([sys.executable, "-m", "wfbench_core", *args], check=True, cwd=ROOT)


def build(out: Path, base: str, head: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    wfbench("build", "--warpforth", base, "-o", str(out / "suite-base"))
    wfbench("build", "--warpforth", head, "-o", str(out / "suite-head"))
    wfbench("build", "--warpforth", f"base={base}", "--warpforth", f"head={head}", "-o", str(out / "basehead"))


def result_path(results: Path, step: str) -> Path:
    return results / f"{STEPS.index(step) + 1}-{step}.json"


def run(out: Path, step: str, results: Path) -> None:
    if step == "all":
        for s in STEPS:
            run(out, s, results)
        return
    dest = result_path(results, step)
    dest.parent.mkdir(parents=True, exist_ok=True)
    bundle = {"base": "suite-base", "basehead": "basehead"}.get(step, "suite-head")
    if step == "plugin":
        with tempfile.TemporaryDirectory(prefix="wfbench-plugin-run-") as tmp:
            (Path(tmp) / "test_benchmarks.py").write_text(PLUGIN_TEST)
            print(f"+ pytest --wfbench-run --wfbench-bundle {out / bundle} --wfbench-priority P0", flush=True)
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--wfbench-run",
                            "--wfbench-bundle", str(out / bundle), "--wfbench-priority", "P0",
                            "--wfbench-json", str(dest), "--rootdir", tmp, tmp], check=True, cwd=tmp)
        return
    wfbench("execute", str(out / bundle), "-o", str(dest), *(["--aa"] if step == "aa" else []))


#: where the A/A run with the gate is shown (added once, after the block of the run from before the gate)
GATE_AA = ("docs/timing.md", "<!-- figure: aa-position docs/results/h200-aa-2026-11-29.json -->",
           "\n\nWith the gate, the A/A run of the example history:\n\n"
           "<!-- figure: aa-position docs/results/h200-aa.json -->\n<!-- /figure -->")


def assemble(out: Path, root: Path = ROOT) -> int:
    """examples/history from the runs in ``out`` (the results folder; oldest first), the figures' sources, the figures; exit as
    check does."""
    missing = [str(result_path(out, s)) for s in STEPS if not result_path(out, s).is_file()]
    if missing:
        raise SystemExit(f"record_example_history: results missing (run step 2 first): {', '.join(missing)}")
    history = root / "examples" / "history"
    shutil.rmtree(history / "runs", ignore_errors=True)
    (history / "index.json").unlink(missing_ok=True)
    wfbench("history", "add", *(str(result_path(out, s)) for s in STEPS), "--history", str(history))
    results = root / "docs" / "results"
    results.mkdir(parents=True, exist_ok=True)
    shutil.copy(result_path(out, "head-2"), results / "h200-suite.json")
    shutil.copy(result_path(out, "aa"), results / "h200-aa.json")
    doc, anchor, block = GATE_AA
    text = (root / doc).read_text() if (root / doc).is_file() else ""
    if anchor in text and "docs/results/h200-aa.json" not in text:
        start = text.index(anchor)
        end = text.index("<!-- /figure -->", start) + len("<!-- /figure -->")
        (root / doc).write_text(text[:end] + block + text[end:])
    subprocess.run([sys.executable, str(root / "tools" / "docs_figures.py")], check=True, cwd=root)
    check = subprocess.run([sys.executable, "-m", "wfbench_core", "check", "--history", str(history)], cwd=root)
    print(f"wfbench check --history examples/history: exit {check.returncode}")
    return check.returncode


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="the bundles (here: needs the toolchain --warpforth uses)")
    b.add_argument("out", type=Path)
    b.add_argument("--base", required=True, help="the older compiler: a --warpforth value (PATH@REF, URL@REF)")
    b.add_argument("--head", required=True, help="the newer compiler: a --warpforth value")
    r = sub.add_parser("run", help="one run step on the GPU host")
    r.add_argument("out", type=Path)
    r.add_argument("step", choices=(*STEPS, "all"))
    r.add_argument("--results", type=Path, default=None, help="where the results go [OUT/results]")
    a = sub.add_parser("assemble", help="examples/history and docs/results from the runs; exit as check does")
    a.add_argument("out", type=Path)
    a.add_argument("--results", type=Path, default=None, help="where the results are [OUT/results]")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()  # the steps run in other folders (the plugin run in a temporary one)
    if args.command == "build":
        build(args.out, args.base, args.head)
        return 0
    results = (args.results or args.out / "results").resolve()
    if args.command == "run":
        run(args.out, args.step, results)
        return 0
    return assemble(results)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
