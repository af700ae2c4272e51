"""Nsight Compute profiles of a case's library ceiling: ``wfbench explain CASE --ceiling --profile``.

A library call may launch several kernels (CUB's reduction launches two, CuPy then copies the total), and their
names are the library's own. So ncu does not pick a kernel by name here: it runs with its collection off
(``--profile-from-start off``) and ``python -m wfbench_core.gpu.ceiling_profile SPEC`` makes the ceiling's call
exactly as a timed run does (:class:`~wfbench_core.gpu.ceiling_side.CeilingLaunchers`: the case's canonical
inputs, wfbench's stream, the library's handle and workspace made by its first calls), calls it
``LAUNCHES - 1`` times unprofiled, then once between ``cuProfilerStart`` and ``cuProfilerStop``
(:meth:`~wfbench_core.gpu.device.Device.profiled`). Every kernel of that one call comes back as a row of the raw
page, with its name, parsed like a side's profile (:func:`wfbench_core.gpu.profile.to_profile`).

Tensor-core use is counted by :data:`TENSOR_METRICS` (math operations on the tensor path, per source type):
measured, not read from the kernels' names. ncu leaves a metric the GPU lacks out of its page (on an H200, ncu
2025.3 has the fp64, fp16 and int8 counters); a page with none of them reads "not counted".
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from wfbench_core.case import CaseKey
from wfbench_core.compiling.cudatools import require_tool
from wfbench_core.errors import WfbenchError
from wfbench_core.gpu.child import Recipe
from wfbench_core.gpu.launcher import LaunchSpec, command, serve
from wfbench_core.gpu.profile import (
    EXTRA_METRICS,
    LAUNCHES,
    ncu_number,
    ncu_options,
    ncu_rows,
    ncu_version,
    to_profile,
)
from wfbench_core.record.results import KernelProfile

__all__ = [  # internal, not the plugin API
    "MODULE", "TENSOR_METRICS", "LibraryKernel", "launch", "library_kernels", "ncu_command", "profile_ceiling",
]

#: Tensor-path math operations by source type (ncu's counters on sm_80 and newer): what "tensor cores" means in
#: the report, measured rather than read from the library's kernel names.
TENSOR_METRICS: Mapping[str, str] = {
    "fp64": "sm__ops_path_tensor_src_fp64.sum",
    "fp16": "sm__ops_path_tensor_src_fp16.sum",
    "bf16": "sm__ops_path_tensor_src_bf16.sum",
    "tf32": "sm__ops_path_tensor_src_tf32.sum",
    "int8": "sm__ops_path_tensor_src_int8.sum",
}
MODULE = "wfbench_core.gpu.ceiling_profile"


@attrs.frozen
class LibraryKernel:
    """One kernel of the library's call: its name as ncu prints it, its profile, and its tensor-path operations
    per source type (None: not counted on this GPU or ncu)."""

    name: str
    profile: KernelProfile
    tensor_ops: Mapping[str, float] | None


def ncu_command(ncu: Path, *, case_id: str, python: str = sys.executable) -> list[str]:
    """ncu's options (every kernel between the launcher's profiler start and stop), then the launcher."""
    metrics = (*EXTRA_METRICS, *TENSOR_METRICS.values())
    spec = LaunchSpec(case_id, "ceiling", "", "", "canonical", LAUNCHES)
    return [*ncu_options(ncu, metrics), "--profile-from-start", "off", *command(spec, MODULE, python)]


def profile_ceiling(case_id: str, *, ncu: str | Path | None = None, recipe: Recipe | None = None
                    ) -> list[LibraryKernel]:
    """Profile one call of the case's ceiling at its canonical size; needs a GPU, the library and permission to
    read the GPU's counters. One line (:class:`~wfbench_core.gpu.profile.ProfileError`) when ncu fails."""
    binary = require_tool("ncu", ncu, why="--profile runs Nsight Compute")
    rows = ncu_rows(ncu_command(binary, case_id=case_id), where=f"{CaseKey(case_id, config='canonical')} ceiling",
                    recipe=recipe)
    return library_kernels(rows, ncu_version=ncu_version(binary))


def library_kernels(rows: Sequence[Mapping[str, tuple[str, str]]], *, ncu_version: str = "") -> list[LibraryKernel]:
    """The kernels of the raw page's rows (:func:`~wfbench_core.gpu.profile.parse_raw_csv`), in launch order."""
    return [LibraryKernel(row.get("Kernel Name", ("", "?"))[1], to_profile(row, ncu_version=ncu_version),
                          _tensor_ops(row)) for row in rows]


def _tensor_ops(row: Mapping[str, tuple[str, str]]) -> dict[str, float] | None:
    """Tensor-path operations per source type; a metric this GPU lacks is left out of ncu's page, and None
    means the page has none of them (not counted)."""
    out = {kind: v for kind, metric in TENSOR_METRICS.items()
           if (v := ncu_number(row.get(metric, ("", ""))[1])) is not None}  # absent from this GPU's page, or n/a
    return out or None


# -------------------------------------------------------------------------------------------------
# The launcher ncu runs (on the GPU host)
# -------------------------------------------------------------------------------------------------


def launch(case_id: str, launches: int = LAUNCHES) -> None:
    """Make the ceiling's call on the case's canonical inputs, call it ``launches - 1`` times, then once under
    the profiler."""
    from wfbench_core.ceiling import Ceiling, missing
    from wfbench_core.discover.registry import Registry
    from wfbench_core.gpu.ceiling_side import CeilingLaunchers
    from wfbench_core.gpu.device import Device

    registry = Registry.load()  # the plugins its environment names
    case, ceiling = registry.case(case_id), registry.ceiling(case_id)
    if not isinstance(ceiling, Ceiling):
        raise WfbenchError(f"case {case_id!r} declares no library ceiling to profile")
    why = missing(ceiling)
    if why:
        raise WfbenchError(f"{case_id}: {why}")
    device = Device().open()
    inputs = case.make_inputs("canonical")
    on_device = {p.name: device.to_device(inputs[p.name]) for p in case.params if p.kind == "ptr" and not p.output}
    scalars: dict[str, Any] = {p.name: inputs[p.name] for p in case.params if p.kind != "ptr"}
    try:
        go = CeilingLaunchers(device, case, ceiling, scalars).make(on_device)
    except ImportError as exc:
        raise WfbenchError(f"{case_id}: {ceiling.library} ceiling not profiled: {exc}") from None
    for _ in range(launches - 1):
        go()
    device.synchronize()
    device.profiled(go)


def _launch_spec(spec: LaunchSpec, ptx: str) -> None:
    launch(spec.case_id, spec.launches)


if __name__ == "__main__":
    sys.exit(serve(_launch_spec, prog=MODULE))
