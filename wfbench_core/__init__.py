"""wfbench: WarpForth kernels against hand-written CUDA, on the same GPU, over time."""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

#: Marker for hook implementations; plugins use ``@wfbench_core.hookimpl``.
hookimpl = pluggy.HookimplMarker("wfbench")

#: Version of the built-in P0 suite; bump whenever the P0 set of cases changes.
SUITE_VERSION = 2

__all__ = ["SUITE_VERSION", "__version__", "hookimpl"]
