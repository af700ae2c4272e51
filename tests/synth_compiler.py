"""A synthetic WarpForth compiler history, for bisect: a real git repository whose every commit holds a
stand-in ``warpforthc`` that emits the real warpforthc PTX kept in ``tests/fixtures/ptx`` (found by the
SHA-256 of the WarpForth source it is given), and from one commit on injects one PTX statement at one case's
kernel entry (``wfbench_core.testing.inject_at_entry``): a compiler change that slows one kernel.

As a script, for a GPU host (from the repository root)::

    python3 tests/synth_compiler.py OUT [--commits 8] [--slow 5] [--case reduce_sum_f64] [--chain K]

prints GOOD, BAD and the slow commit; then ``wfbench bisect --warpforth OUT GOOD BAD -c reduce_sum_f64
--build-cmd true --binary warpforthc`` must name that commit. With ``--bundle DIR`` it also writes the
base/head bundle of the case built by GOOD's and BAD's compilers (for ``wfbench explain CASE --bundle DIR``).
With ``--chain K`` the slow commit adds the power study's K-step dependent chain instead of one statement: a
cost a GPU measures for sure (one ``bar.sync`` at the entry of reduce_sum_f64 costs the H200 nothing it can
tell apart).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from standins import shebang  # tests/standins.py
from testkit import STORED_PTX  # tests/testkit.py

INJECTED = "bar.sync 0;"

COMPILER = '''{shebang}
"""Stand-in warpforthc {version}: the prebuilt PTX of the source given; see SLOW."""
import hashlib, pathlib, sys

HERE = pathlib.Path(__file__).resolve().parent
if "--version" in sys.argv:
    print("warpforth version {version}")
    sys.exit(0)
if "--help" in sys.argv:
    print("usage: warpforthc SRC -o OUT")
    sys.exit(0)
src, out = sys.argv[1], sys.argv[sys.argv.index("-o") + 1]
digest = hashlib.sha256(pathlib.Path(src).read_text().encode()).hexdigest()
for sha in sorted((HERE / "ptx").glob("*.forth.sha256")):
    if sha.read_text().strip() == digest:
        ptx = sha.with_name(sha.name.replace(".forth.sha256", ".ptx")).read_text()
        break
else:
    sys.exit(f"{{src}}: no prebuilt PTX for this source")
slow = HERE / "SLOW"
if slow.exists():
    kernel, statement = slow.read_text().split("\\n", 1)
    if f".entry {{kernel}}(" in ptx:
        from wfbench_core.testing import inject_at_entry
        ptx = inject_at_entry(ptx, kernel, statement.strip())
pathlib.Path(out).write_text(ptx)
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_history(repo: Path, *, commits: int = 8, slow: int = 5, case: str = "reduce_sum_f64",
                 statement: str = INJECTED, chain: int = 0, python: str = sys.executable) -> list[str]:
    """Commit 0 (GOOD) and ``commits`` more (the last is BAD); from commit ``slow`` (1-based) on, ``case``'s
    kernel gets ``statement`` at its entry, or with ``chain`` > 0 the power study's dependent chain of that
    many steps (``tools/power_study.py``: a real cost that changes no result). Returns every commit, GOOD first."""
    if not 1 <= slow <= commits:
        raise ValueError("the slow commit must be one of the commits after GOOD")
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "bench@example.com")
    _git(repo, "config", "user.name", "bench")
    shutil.copytree(STORED_PTX, repo / "ptx")
    out = []
    for k in range(commits + 1):
        compiler = repo / "warpforthc"
        compiler.write_text(COMPILER.format(shebang=shebang(python), version=f"0.{k}.0"))
        compiler.chmod(0o755)
        message = f"step {k}"
        if k == slow and chain > 0:
            for ptx in sorted((repo / "ptx").glob(f"{case}.*.ptx")):
                ptx.write_text(_chained(ptx.read_text(), chain))
            message += f": {case} gets a {chain}-step dependent chain at its entry"
        elif k == slow:
            (repo / "SLOW").write_text(f"{case}\n{statement}\n")
            message += f": {case} gets '{statement}' at its entry"
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", message)
        out.append(_git(repo, "rev-parse", "HEAD"))
    return out


def _chained(ptx: str, steps: int) -> str:
    from testkit import load_tool

    return load_tool("power_study").inject_chain(ptx, steps)


def compiler_tree(repo: Path, commit: str, tree: Path) -> Path:
    """``commit``'s files in ``tree`` (a new folder); returns its stand-in warpforthc."""
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree / "warpforthc"


def bundle(repo: Path, good: str, bad: str, case: str, out: Path) -> None:
    """The base/head bundle of ``case``: base built by GOOD's compiler, head by BAD's (really run)."""
    from wfbench_core.compiling.bundle import build_bundle
    from wfbench_core.discover.registry import Registry

    compilers = {}
    for label, commit in (("base", good), ("head", bad)):
        compilers[label] = compiler_tree(repo, commit, out.parent / f"{out.name}.{label}-compiler")
    build_bundle([Registry.load().case(case)], out, warpforthc=compilers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--commits", type=int, default=8)
    ap.add_argument("--slow", type=int, default=5)
    ap.add_argument("--case", default="reduce_sum_f64")
    ap.add_argument("--bundle", type=Path, default=None)
    ap.add_argument("--chain", type=int, default=0, help="slow the case by a dependent chain of this many steps")
    args = ap.parse_args()
    history = make_history(args.out, commits=args.commits, slow=args.slow, case=args.case, chain=args.chain)
    if args.bundle is not None:
        bundle(args.out, history[0], history[-1], args.case, args.bundle)
    print(f"GOOD={history[0]} BAD={history[-1]} SLOW={history[args.slow]}")


if __name__ == "__main__":
    main()
