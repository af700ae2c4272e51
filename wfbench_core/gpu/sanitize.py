"""``--sanitize``: run each side's kernel once under NVIDIA compute-sanitizer and report its first finding.

For one case and one side, :func:`sanitize_case` starts (a child of :mod:`wfbench_core.gpu.child`: its own
process group, killed whole at its deadline, dead with its parent)::

    compute-sanitizer --tool memcheck --error-exitcode 86 --log-file LOG \\
        python -m wfbench_core.gpu.sanitize '{"case_id": ID, "side": "wf", "kernel": NAME, "ptx": FILE, ...}'

The child (a launcher, :mod:`wfbench_core.gpu.launcher`) runs :func:`launch_once`: it loads that side's PTX with the
device module's primitives, launches it once on the configuration's inputs into poisoned outputs, and exits.
``memcheck`` always runs; ``racecheck`` runs
too when the kernel uses shared memory (a ``.shared`` declaration in its PTX, or dynamic shared bytes in
the launch). A finding is the sanitizer's first report line, e.g.
``Invalid __global__ write of size 4 bytes``; the case is then FAILED with that line.

compute-sanitizer ships with the CUDA toolkit; it is looked up where every CUDA tool is
(:mod:`wfbench_core.compiling.cudatools`; ``$WFBENCH_COMPUTE_SANITIZER`` names it).
The child finds the case through the installed plugins (the same environment as the parent's).
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import attrs

from wfbench_core.case import Case, CaseKey
from wfbench_core.compiling.cudatools import require_tool
from wfbench_core.compiling.faults import HANG, Fault, KernelFault, side_name
from wfbench_core.errors import WfbenchError
from wfbench_core.gpu import child
from wfbench_core.gpu.launcher import LaunchSpec, command, serve

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "DEFAULT_TIMEOUT_S", "ERROR_EXITCODE", "PREFIX", "SanitizerFinding", "first_report", "launch_once",
    "sanitize_case", "tools_for", "uses_shared_memory",
]

ERROR_EXITCODE = 86  # what compute-sanitizer exits with when it reported an error
DEFAULT_TIMEOUT_S = 300.0  # kernels run 10-100x slower under the sanitizer; a check-size launch is short
PREFIX = "========="


@attrs.frozen
class SanitizerFinding:
    """What compute-sanitizer reported first for one side of a case."""

    case_id: str
    config: str
    side: str  # wf, wf:head, cuda
    tool: str  # memcheck, racecheck
    line: str  # the sanitizer's first report line, without its "=========" prefix

    @property
    def message(self) -> str:
        return f"{CaseKey(self.case_id, config=self.config)} {side_name(self.side)}: compute-sanitizer {self.tool}: {self.line}"


def uses_shared_memory(case: Case, ptx: str, config: str = "check") -> bool:
    """Whether racecheck applies: static ``.shared`` memory in the PTX, or dynamic shared bytes at launch."""
    return bool(re.search(r"^\s*(?:\.extern\s+)?\.shared\b", ptx, re.MULTILINE)) or \
        case.launch(case.sizes[config]).shared_bytes > 0


def tools_for(case: Case, ptx: str, config: str = "check") -> tuple[str, ...]:
    return ("memcheck", "racecheck") if uses_shared_memory(case, ptx, config) else ("memcheck",)


_NOT_A_REPORT = re.compile(r"^(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|"
                           r"Target application returned)", re.IGNORECASE)


def first_report(log: str) -> str | None:
    """The first report line of a compute-sanitizer log ("Invalid __global__ write of size 8 bytes"), or None.

    Report lines start with ``=========`` and one space; their details are indented further, and the
    banner and the summaries are not reports.
    """
    lines = log.splitlines()
    for i, raw in enumerate(lines):
        if not raw.startswith(PREFIX):
            continue
        rest = raw[len(PREFIX):]
        if not rest.startswith(" ") or rest.startswith("  ") or not rest.strip():
            continue  # a detail line ("=========     at ..."), or an empty separator
        text = rest.strip()
        if _NOT_A_REPORT.match(text):
            continue
        # racecheck splits one sentence over two lines: "Race reported between Write access at ... / and Read ..."
        following = lines[i + 1][len(PREFIX):].strip() if i + 1 < len(lines) and lines[i + 1].startswith(PREFIX) else ""
        if following.startswith("and "):
            text = f"{text} {following}"
        return text
    return None


def sanitize_case(case: Case, side: str, ptx: str, kernel: str, *, config: str = "check",
                  tools: Sequence[str] | None = None, sanitizer: Path | None = None,
                  timeout_s: float = DEFAULT_TIMEOUT_S) -> SanitizerFinding | None:
    """Run one side of a case once under compute-sanitizer; its first finding, or None when clean.

    The plugins reach the launcher through this process's environment (:func:`wfbench_core.gpu.child.plugin_env`).

    :param side: the side's label (``wf``, ``wf:head``, ``cuda``); ``ptx`` is that side's PTX for ``config``
        and ``kernel`` its entry name.
    :param tools: default memcheck, plus racecheck when the kernel uses shared memory.
    :raises WfbenchError: no compute-sanitizer here, or the child could not run for another reason (one line).
    :raises KernelFault: (class ``hang``, not sticky: only the child is killed) the run did not finish
        within ``timeout_s``.
    """
    tool_path = sanitizer or require_tool("compute-sanitizer", why="--sanitize runs it")
    for tool in tools or tools_for(case, ptx, config):
        with tempfile.TemporaryDirectory(prefix="wfbench-sanitize-") as tmp:
            ptx_file = Path(tmp) / "kernel.ptx"
            ptx_file.write_text(ptx)
            log = Path(tmp) / "sanitizer.log"
            spec = LaunchSpec(case.id, side, kernel, str(ptx_file), config)
            cmd = [str(tool_path), "--tool", tool, "--error-exitcode", str(ERROR_EXITCODE), "--log-file", str(log),
                   *command(spec, "wfbench_core.gpu.sanitize")]
            ended = child.run(cmd, timeout_s=timeout_s)
            rc, stderr = ended.returncode, ended.stderr
            if rc is None:  # the child was killed: this process's own CUDA context is untouched (not sticky)
                raise KernelFault(case.id, config, side, Fault(HANG, False, detail=(
                    f"did not finish within {timeout_s:g} s under compute-sanitizer {tool}")))
            text = log.read_text(errors="replace") if log.exists() else ""
            line = first_report(text)
            if rc == ERROR_EXITCODE or (line and rc != 0):
                return SanitizerFinding(case.id, config, side, tool, line or "error reported (no report line in the log)")
            if rc != 0:
                why = _last_line(stderr) or _last_line(text) or f"exit status {rc}"
                raise WfbenchError(f"{case.key(config)} {side_name(side)}: compute-sanitizer {tool} could not run "
                                   f"the kernel: {why}")
    return None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# -------------------------------------------------------------------------------------------------
# the child: load one side's PTX and launch it once
# -------------------------------------------------------------------------------------------------


def launch_once(spec: LaunchSpec, ptx: str) -> None:
    """In the launcher, under compute-sanitizer: launch one side once on its configuration's inputs (GPU)."""
    from wfbench_core.contracts import Side
    from wfbench_core.discover.registry import Registry
    from wfbench_core.gpu.correctness import Checker
    from wfbench_core.gpu.device import Device

    case = Registry.load().case(spec.case_id)
    Checker(Device()).launch_once(case, spec.config, Side(spec.side, spec.kernel, {spec.config: ptx}))


if __name__ == "__main__":
    sys.exit(serve(launch_once, prog="wfbench_core.gpu.sanitize"))
