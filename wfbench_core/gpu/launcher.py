"""The launcher protocol: a child that loads one side's PTX and launches it, for a tool that watches it.

compute-sanitizer (``--sanitize``, :mod:`wfbench_core.gpu.sanitize`) and Nsight Compute (``explain
--profile``, :mod:`wfbench_core.gpu.profile`) both run ``python -m MODULE SPEC``, where SPEC is a
:class:`LaunchSpec` as JSON through the one converter and MODULE says what the launch is for. :func:`serve`
is the one entry of both: it asks to die with the tool that started it, reads the spec and the PTX, and
reports a problem as one line on standard error with the error's exit code. The case is found through the
plugins that the environment names (:func:`wfbench_core.gpu.child.plugin_env`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from wfbench_core.errors import WfbenchError

__all__ = ["LaunchSpec", "command", "serve"]  # internal, not the plugin API


@attrs.frozen
class LaunchSpec:
    """What one launcher run launches."""

    case_id: str
    side: str  # the side's label: wf, wf:LABEL, cuda
    kernel: str
    ptx: str  # the file holding the side's PTX for ``config`` ("" for a library ceiling's call)
    config: str = "check"
    launches: int = 1


def command(spec: LaunchSpec, module: str, python: str = sys.executable) -> list[str]:
    """The launcher's command line: ``python -m MODULE SPEC``."""
    from wfbench_core.record.results import converter

    return [python, "-m", module, json.dumps(converter().unstructure(spec))]


def serve(launch: Callable[[LaunchSpec, str], None], argv: Sequence[str] | None = None, *,
          prog: str = "launcher") -> int:
    """The launcher's main: ``launch(spec, ptx)`` for the spec given on the command line; the exit status."""
    from wfbench_core.gpu.child import die_with_parent
    from wfbench_core.record.results import loads

    die_with_parent()
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if len(args) != 1:
            raise WfbenchError(f"usage: python -m {prog} SPEC (a launch spec as JSON)")
        spec = loads(args[0], LaunchSpec, where="launch spec")
        try:
            ptx = Path(spec.ptx).read_text() if spec.ptx else ""  # "": a launch of library code, no PTX
        except (OSError, UnicodeDecodeError) as exc:
            raise WfbenchError(f"{spec.ptx}: cannot read the PTX ({getattr(exc, 'strerror', None) or exc})") from None
        launch(spec, ptx)
    except WfbenchError as exc:
        print(f"wfbench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0
