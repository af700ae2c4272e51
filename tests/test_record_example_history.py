"""tools/record_example_history.py: its last step makes a history whose check exits 0 and stores the figures'
sources. The runs are synthetic here (tests/synth_runs.py), in the order the GPU steps make them; the
history, the figure rendering and the check are the real ones, in a copy of the files they touch."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import attrs

from synth_runs import REAL_AA, created_at, synth_run
from wfbench_core.record.results import load_result, write_result
from testkit import load_tool

ROOT = Path(__file__).resolve().parent.parent


def tool():  # type: ignore[no-untyped-def]
    return load_tool("record_example_history")

def test_assemble_makes_a_history_that_checks_clean_and_renders_its_figures(tmp_path: Path) -> None:
    t = tool()
    root = tmp_path / "repo"  # the files assemble touches, copied
    for rel in ("tools/docs_figures.py", "docs/timing.md", "docs/results/h200-aa-2026-11-29.json", "README.md",
                "docs/results/h200-suite.json", "examples/history/README.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, root / rel)
    for doc in ("README.md", "docs/timing.md"):  # and every stored result their figures render from
        for m in re.finditer(r"<!-- figure: [\w-]+ (\S+) -->", (ROOT / doc).read_text()):
            src, dst = ROOT / m.group(1), root / m.group(1)
            if dst.exists():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():  # the figure of a folder of runs (power-cap)
                shutil.copytree(src, dst)
            elif src.is_file():
                shutil.copy(src, dst)
    out = tmp_path / "out"
    # the six runs in the order the GPU steps make them: older compiler, base/head, A/A, plugin (P0), newer x2
    base = synth_run(0)
    head = [synth_run(n, wf_scale=0.99) for n in (4, 5)]
    labelled = tuple(attrs.evolve(c, compiler_label=label) for c in synth_run(1).cases for label in ("base", "head"))
    runs = {"base": base,
            "basehead": attrs.evolve(synth_run(1), cases=labelled,
                                     compilers={"base": base.warpforthc, "head": head[0].warpforthc}),
            "aa": attrs.evolve(load_result(REAL_AA), created=created_at(2)),
            "plugin": attrs.evolve(synth_run(3), cases=synth_run(3).cases[:1]),
            "head-1": head[0], "head-2": head[1]}
    for step, run in runs.items():
        write_result(run, t.result_path(out, step))
    assert t.assemble(out, root) == 0  # wfbench check --history exits 0
    stored = sorted((root / "examples" / "history" / "runs").rglob("*.json"))
    assert len(stored) == 6 and (root / "examples" / "history" / "index.json").is_file()
    assert load_result(root / "docs" / "results" / "h200-suite.json") == load_result(t.result_path(out, "head-2"))
    timing = (root / "docs" / "timing.md").read_text()
    assert timing.count("<!-- figure: aa-position docs/results/h200-aa.json -->") == 1
    assert "The A/A run stored in `docs/results/h200-aa.json`" in timing  # rendered
    assert t.assemble(out, root) == 0 and (root / "docs" / "timing.md").read_text() == timing  # again: the same
    check = subprocess.run([sys.executable, str(root / "tools" / "docs_figures.py"), "--check"], cwd=root,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
