"""Regenerate tests/fixtures/ptx: the real warpforthc's PTX of installed cases, both configurations.

The tests that need WarpForth PTX but no warpforthc (bundles for GPU tests, the stand-in warpforthc) read
these files; each PTX sits beside the SHA-256 of the rendered source it was compiled from, so a changed
case is noticed. Run after changing a case's WarpForth source:

    python3 tools/fixture_ptx.py --warpforthc PATH [CASE ...]     (default: every installed case)
"""

from __future__ import annotations

import argparse
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ptx"


def main(argv: list[str] | None = None) -> None:
    from wfbench_core.case import CONFIGS, sha256_text
    from wfbench_core.compiling.compile import compile_warpforth
    from wfbench_core.discover.registry import Registry

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warpforthc", type=Path, required=True)
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args(argv)
    reg = Registry.load()
    for cid in args.cases or sorted(reg.cases):
        case = reg.case(cid)
        for config in CONFIGS:
            src = case.render(config)[0]
            ptx = compile_warpforth(src, binary=args.warpforthc, case_id=case.key(config)).ptx
            (FIXTURES / f"{cid}.{config}.ptx").write_text(ptx)
            (FIXTURES / f"{cid}.{config}.forth.sha256").write_text(sha256_text(src) + "\n")
        print(f"{cid}: PTX of {', '.join(CONFIGS)}")


if __name__ == "__main__":
    main()
