"""The built-in timer plugin, registered through the ``wfbench`` entry points like any third-party one.

Kept apart from :mod:`wfbench_core.gpu.timer` so that loading the plugins (``wfbench list``) imports neither
numpy nor the CUDA libraries; the timer itself is imported when a run asks for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wfbench_core import hookimpl

if TYPE_CHECKING:
    from wfbench_core.contracts import Timer
    from wfbench_core.record.results import TimingProtocol

__all__ = ["wfbench_make_timer"]


@hookimpl(trylast=True)
def wfbench_make_timer(protocol: TimingProtocol) -> Timer:
    """The CUDA-event timer (any plugin's ``wfbench_make_timer`` replaces it)."""
    from wfbench_core.gpu.timer import CudaEventTimer

    return CudaEventTimer(protocol)
