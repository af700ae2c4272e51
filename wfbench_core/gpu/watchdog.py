"""Deadlines for waits on the GPU.

Cases run in a worker process (see :mod:`wfbench_core.gpu.worker`); its supervisor kills the worker when a wait
outlives its deadline, so a kernel that never finishes costs its own case and nothing else. A timer marks
every blocking wait (a launch's synchronize, a round of timed launches) with :func:`guard`, naming what it
waits for and how long it expects it to take; outside a worker (a timer used in-process) the calls do
nothing.

The deadline of a wait is ``max(FLOOR_S, FACTOR × expected)``, or the fixed ``--case-timeout`` when the
user gives one; between guarded waits a worker may stay silent for :func:`quiet_limit_s`. This module is
the one home of these rules.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["FACTOR", "FLOOR_S", "QUIET_FLOOR_S", "arm", "deadline_for", "disarm", "guard", "install", "quiet_limit_s"]

FLOOR_S = 10.0
FACTOR = 50.0
#: the least time a worker may stay silent outside a guarded wait (loading modules, compiling the CUDA
#: side, computing references); a timer that guards none of its waits is held to this alone
QUIET_FLOOR_S = 240.0

_sink: Callable[[Any], None] | None = None
_fixed_s: float | None = None


def deadline_for(expected_s: float) -> float:
    """How long a wait expected to take ``expected_s`` seconds may take before it counts as a hang."""
    if _fixed_s is not None:
        return _fixed_s
    return max(FLOOR_S, FACTOR * max(expected_s, 0.0))


def quiet_limit_s(max_case_s: float) -> float:
    """How long a worker may go without a message while no wait is guarded."""
    return max(QUIET_FLOOR_S, 2.0 * max_case_s)


def install(sink: Callable[[Any], None] | None, fixed_s: float | None = None) -> None:
    """Send :class:`~wfbench_core.gpu.messages.Arm` / ``Disarm`` messages to ``sink`` (the worker's channel to
    its supervisor); None: nowhere."""
    global _sink, _fixed_s
    _sink, _fixed_s = sink, fixed_s


def arm(what: str, expected_s: float = 0.0, *, deadline_s: float | None = None) -> None:
    """Announce a wait expected to take ``expected_s`` (or with an explicit deadline of its own)."""
    if _sink is not None:
        from wfbench_core.gpu.messages import Arm

        _sink(Arm(deadline_s if deadline_s is not None else deadline_for(expected_s), what))


def disarm() -> None:
    if _sink is not None:
        from wfbench_core.gpu.messages import Disarm

        _sink(Disarm())


@contextlib.contextmanager
def guard(what: str, expected_s: float = 0.0, *, deadline_s: float | None = None) -> Iterator[None]:
    """``with guard("wf launch", 0.002): stream.synchronize()`` — the wait has a deadline."""
    arm(what, expected_s, deadline_s=deadline_s)
    try:
        yield
    finally:
        disarm()
