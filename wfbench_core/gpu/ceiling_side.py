"""A case's library ceiling on the GPU (:mod:`wfbench_core.ceiling`): its check, and its launches in the rounds.

- :func:`check_ceiling`: after the case's canonical checks passed, the ceiling runs once at the canonical size
  on the case's canonical inputs into its own poisoned outputs, and is compared with what the case's numpy
  reference gives (``Ceiling.expect``) under the ceiling's own tolerances. That first call is also where the
  library makes its handle state and workspace: outside every timed span.
- :class:`CeilingLaunchers`: what :class:`~wfbench_core.gpu.gpu_rounds.CudaRounds` calls to make the ceiling's
  launcher for a buffer set: its own outputs (allocated and filled outside any timed span), the set's inputs.

Nothing here imports the library: ``Ceiling.prepare`` does, and an ImportError there is a ceiling not measured
(one line), never a failed case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from wfbench_core.case import Case
from wfbench_core.ceiling import LABEL, Ceiling, CeilingCall
from wfbench_core.contracts import CeilingMeasured
from wfbench_core.gpu.comparison import compare, poison_value
from wfbench_core.gpu.correctness import Checked
from wfbench_core.gpu.device import Device

__all__ = ["CeilingLaunchers", "check_ceiling", "failed_line"]  # internal, not the plugin API


class CeilingLaunchers:
    """Makes the ceiling's launcher for a buffer set of the rounds (its outputs are kept as long as it is)."""

    def __init__(self, device: Device, case: Case, ceiling: Ceiling, scalars: Mapping[str, Any]) -> None:
        self.device, self.case, self.ceiling, self.scalars = device, case, ceiling, dict(scalars)
        self.sizes = case.sizes["canonical"]
        self._keep: list[Any] = []

    def outputs(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The ceiling's own output buffers, poisoned, or a copy of the input they start as."""
        device, out = self.device, {}
        for name, (count, dtype) in self.ceiling.outputs(self.sizes).items():
            buf = device.empty(int(count), np.dtype(dtype))
            start = self.ceiling.starts_as.get(name)
            if start is not None:
                device.copy_in(buf, inputs[start])
            else:
                device.copy_in(buf, device.to_device(np.full(int(count), poison_value(np.dtype(dtype))[0],
                                                               dtype=np.dtype(dtype))))
            out[name] = buf
        return out

    def make(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any] | None = None) -> Callable[[], None]:
        """One run of the routine on the device's stream, reading ``inputs`` (the case's input buffers)."""
        outs = self.outputs(inputs) if outputs is None else outputs
        self.device.synchronize()  # the outputs are filled before the library is handed their addresses
        call = CeilingCall(sizes=self.sizes, scalars=self.scalars,
                           inputs={k: self.device.address(v) for k, v in inputs.items()},
                           outputs={k: self.device.address(v) for k, v in outs.items()},
                           stream=self.device.stream_handle())
        go = self.ceiling.prepare(call)
        self._keep.append((outs, go))
        return go

    def drop(self) -> None:
        self._keep = []


def check_ceiling(device: Device, case: Case, ceiling: Ceiling, checked: Checked) -> tuple[CeilingMeasured, Any]:
    """The ceiling once on the canonical inputs, against the case's numpy reference; ``(outcome, launchers)``,
    launchers None when it is not to be timed."""
    from wfbench_core.ceiling import missing
    from wfbench_core.record.results import CEILING_ERROR, CEILING_FAILED, CEILING_MISSING

    why = missing(ceiling)
    if why:
        return CeilingMeasured(problem=why, status=CEILING_MISSING), None
    scalars = {p.name: checked.inputs[p.name] for p in case.params if p.kind != "ptr"}
    launchers = CeilingLaunchers(device, case, ceiling, scalars)
    try:
        outs = launchers.outputs(checked.device_inputs)
        go = launchers.make(checked.device_inputs, outs)
        go()
        got = device.read(outs)
    except ImportError as exc:
        return CeilingMeasured(problem=f"{ceiling.library} ceiling not measured: {exc}", status=CEILING_MISSING), None
    except Exception as exc:
        return CeilingMeasured(problem=f"{ceiling.library} ceiling ({ceiling.routine}) raised "
                                      f"{type(exc).__name__}: {exc}", status=CEILING_ERROR), None
    want = ceiling.expect(checked.inputs, checked.want, case.sizes["canonical"])
    checks = []
    for name, tol in ceiling.tolerances.items():
        w = np.asarray(want[name]).reshape(-1)
        cmp = compare(got[name].reshape(-1), w.astype(got[name].dtype), tol.rtol, tol.atol)
        checks.append(cmp.check("canonical", LABEL, "reference", name))
    bad = [c for c in checks if not c.passed]
    if bad:
        return CeilingMeasured(tuple(checks), failed_line(ceiling, bad[0]), CEILING_FAILED), None
    launchers.drop()
    return CeilingMeasured(tuple(checks)), launchers


def failed_line(ceiling: Ceiling, c: Any) -> str:
    """The one line of a ceiling whose output disagrees with the case's numpy reference (its check ``c``)."""
    tol = ceiling.tolerances[c.output]
    return (f"{ceiling.library} ceiling ({ceiling.routine}) FAILED its check: {c.mismatches} of {c.total} elements "
            f"of {c.output} differ from the numpy reference (max abs err {c.max_abs_err:.3g}, rtol {tol.rtol:g}, "
            f"atol {tol.atol:g}); the case's gap stands")
