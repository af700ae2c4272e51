"""Every wfbench hook, in one place.

Collecting hooks take a ``register`` callable; every implementation is called. "Choose one" hooks are
``firstresult``: they stop at the first non-None result, and the built-in default is ``trylast``
so that any plugin can replace it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from wfbench_core.case import Case
    from wfbench_core.ceiling import Ceiling, NoCeiling
    from wfbench_core.contracts import Timer, Transport
    from wfbench_core.record.results import TimingProtocol

__all__ = ["hookspec", "wfbench_make_timer", "wfbench_register_cases", "wfbench_register_transports"]

hookspec = pluggy.HookspecMarker("wfbench")


# -------------------------------------------------------------------------------------------------
# registration: what exists
# -------------------------------------------------------------------------------------------------


@hookspec
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    """Register benchmark cases by calling ``register(case)`` once per case.

    :param register: call it with a :class:`wfbench_core.case.Case`; a case ID offered by two plugins
        is refused with both plugin names.
    """


@hookspec
def wfbench_register_transports(register: Callable[[str, type[Transport]], None]) -> None:
    """Register transports by calling ``register(name, transport_class)``.

    :param register: call it with a unique transport name (``local``, ``ssh``, ``vast`` …) and a class
        following :class:`wfbench_core.contracts.Transport`.
    """


# -------------------------------------------------------------------------------------------------
# execution: how it is measured (choose one)
# -------------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def wfbench_make_timer(protocol: TimingProtocol) -> Timer | None:
    """Return the timer that checks and times cases on the GPU host.

    Stops at first non-None result.

    :param protocol: the :class:`wfbench_core.record.results.TimingProtocol` settings (warm-up, sample length,
        count).
    :returns: an object with the :class:`wfbench_core.contracts.Timer` interface.
    """


@hookspec
def wfbench_register_ceilings(register: Callable[[str, Ceiling | NoCeiling], None]) -> None:
    """Register library ceilings by calling ``register(case_id, ceiling)`` once per case.

    :param register: call it with a case ID and a :class:`wfbench_core.ceiling.Ceiling` (the library routine
        timed beside the case with ``--ceiling``) or a :class:`wfbench_core.ceiling.NoCeiling` (why the case has
        none); a case ID offered by two plugins is refused with both plugin names.
    """
