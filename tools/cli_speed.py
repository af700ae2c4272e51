#!/usr/bin/env python3
"""How long ``wfbench --help``, ``wfbench list`` and ``wfbench transports`` take beside Python importing click,
attrs and pluggy (the floor any click + attrs + pluggy program pays), measured side by side.

    python3 tools/cli_speed.py [--rounds 60] [--venv .venv]

Each round runs the four commands once, in turn, so drift on a busy machine hits all of them alike; it prints
each command's median and its ratio to the floor's (the target is 1.5x at most). Bytecode is written (a
``PYTHONDONTWRITEBYTECODE`` in the environment would make wfbench recompile itself on every run while the
installed libraries do not).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--venv", type=Path, default=Path(".venv"))
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    bin_ = args.venv / "bin"
    cmds = {"import click, attrs, pluggy": [str(bin_ / "python"), "-c", "import click, attrs, pluggy"],
            "wfbench --help": [str(bin_ / "wfbench"), "--help"], "wfbench list": [str(bin_ / "wfbench"), "list"],
            "wfbench transports": [str(bin_ / "wfbench"), "transports"]}

    def once(cmd: list[str]) -> float:
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
        return time.perf_counter() - t0

    for cmd in cmds.values():  # warm the caches and write the bytecode
        once(cmd)
        once(cmd)
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(args.rounds):
        for name, cmd in cmds.items():
            times[name].append(once(cmd))
    floor = statistics.median(times["import click, attrs, pluggy"])
    for name, values in times.items():
        med = statistics.median(values)
        print(f"{name:30} median {med * 1e3:6.1f} ms  {med / floor:.2f}x")


if __name__ == "__main__":
    main()
