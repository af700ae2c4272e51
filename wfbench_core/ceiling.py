"""Library ceilings: the best code NVIDIA ships for a case's operation, timed beside it and kept apart.

The canonical gap compares WarpForth with CUDA that WarpForth could express (the same algorithm). A
**ceiling** answers a second question: how far is the case from what a vendor library (cuBLAS, CUB) does on
the same GPU, at the case's canonical size and data types. A plugin declares one per case through the
``wfbench_register_ceilings`` hook (``register(case_id, Ceiling(...))``); ``wfbench run --ceiling`` times it
as a third side in the same rounds as WarpForth and CUDA.

What is written once here:

- :data:`LABEL`: the ceiling side's label in the rounds and the samples;
- :data:`RATIO_NAME`: the one name of its figure, ``WarpForth time / ceiling time``;
- :func:`series_name`: ``<case>/v<version>/ceiling``, the ceiling's own series;
- :func:`missing`: whether the ceiling's library is installed (read from the package metadata: nothing
  imports the library before a ceiling is timed).

A ceiling is never part of the canonical gap, the P0 geomean, the export's named case set or a base/head
verdict: it is stored in :attr:`wfbench_core.record.results.CaseResult.ceiling`, which none of them read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from wfbench_core.case import Tolerance

__all__ = [  # the plugin API (README: Layout): what a plugin declares a ceiling with
    "EXTRA", "LABEL", "RATIO_NAME", "Ceiling", "CeilingCall", "NoCeiling", "library_version", "missing", "ratio",
    "series_name",
]

LABEL = "ceiling"
RATIO_NAME = "WarpForth time / ceiling time"
EXTRA = "ceiling"  # the optional dependencies' extra: pip install 'wfbench[ceiling]'

Sizes = Mapping[str, int]
Arrays = Mapping[str, Any]


def series_name(case_id: str, version: int) -> str:
    """The ceiling's series, apart from the case's canonical one."""
    return f"{case_id}/v{version}/ceiling"


@attrs.frozen
class CeilingCall:
    """What a ceiling's ``prepare`` is given: everything on wfbench's device, nothing allocated by the library
    inside a timed span.

    :param sizes: the case's canonical sizes.
    :param scalars: the case's scalar inputs (numpy scalars).
    :param inputs: device address of each input buffer of the case (the buffer set being timed).
    :param outputs: device address of each of the ceiling's own outputs (allocated by wfbench, outside any
        timed span; an output named in ``Ceiling.starts_as`` holds a copy of that input).
    :param stream: the CUDA stream handle every call must be queued on (wfbench's one stream).
    """

    sizes: Sizes
    scalars: Arrays
    inputs: Mapping[str, int]
    outputs: Mapping[str, int]
    stream: int


@attrs.frozen(kw_only=True)
class Ceiling:
    """One library ceiling of a case.

    :param library: the NVIDIA library (``cuBLAS``, ``CUB``).
    :param routine: what is called (``cublasDgemm``, ``cub::DeviceReduce::Sum``).
    :param package: the Python distribution that calls it; its version is part of the ceiling's series key.
    :param what: one line: what the library does differently from the case's kernels.
    :param tensor_cores: whether the routine may use tensor cores, in words ("" = none).
    :param outputs: sizes -> ``{name: (elements, numpy dtype)}`` of the ceiling's own outputs.
    :param expect: (case inputs, the case's numpy reference outputs, sizes) -> the ceiling's expected outputs.
    :param tolerances: per ceiling output, with the reason (the library may fuse multiply-adds, use tensor
        cores or sum in another order).
    :param prepare: :class:`CeilingCall` -> a call queuing one run of the routine on ``call.stream``. The
        library is imported here (an ImportError: the ceiling is not measured, the run goes on); handles and
        workspace are made here, outside every timed span.
    :param starts_as: ``{output: input}``: outputs that start as a copy of an input (an in-place routine).
    :param capturable: False where the call cannot be captured into a CUDA graph (it allocates,
        synchronizes, or its binding refuses to run while the stream captures): in graph mode it is then timed
        with events, and the record says so.
    :param flop_type: the arithmetic the routine runs (a FLOP type of :mod:`wfbench_core.record.yardsticks`:
        ``tensor-f64`` for a DGEMM that may use the FP64 tensor cores); "" runs the case's own. The
        plausibility gate judges the ceiling against that type's peak.
    :param kernels: substrings of the library's kernel names, for ``wfbench explain --ceiling``.
    """

    library: str
    routine: str
    package: str
    what: str
    outputs: Callable[[Sizes], Mapping[str, tuple[int, str]]] = attrs.field(eq=False, hash=False)
    expect: Callable[[Arrays, Arrays, Sizes], Arrays] = attrs.field(eq=False, hash=False)
    tolerances: Mapping[str, Tolerance]
    prepare: Callable[[CeilingCall], Callable[[], None]] = attrs.field(eq=False, hash=False)
    starts_as: Mapping[str, str] = attrs.Factory(dict)
    tensor_cores: str = ""
    capturable: bool = True
    flop_type: str = ""
    kernels: tuple[str, ...] = ()


@attrs.frozen
class NoCeiling:
    """A case that declares it has no ceiling, and why (shown by ``wfbench explain --ceiling``)."""

    why: str


def library_version(package: str) -> str:
    """The installed version of ``package`` ("" when it is not installed), without importing it."""
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def missing(ceiling: Ceiling) -> str | None:
    """One line when the ceiling's library is not installed here (None when it is)."""
    if library_version(ceiling.package):
        return None
    return (f"{ceiling.library} ceiling not measured: {ceiling.package} is not installed "
            f"(pip install 'wfbench[{EXTRA}]' on the GPU host)")


def ratio(wf_us: float, ceiling_us: float) -> float:
    """:data:`RATIO_NAME`: above 1, the library is faster."""
    return wf_us / ceiling_us
