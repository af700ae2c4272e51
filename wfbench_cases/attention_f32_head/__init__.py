"""attention_f32_head64 and attention_f32_head256 (P1): the WarpForth GPT-2 demo's own launch — attention
for one head per launch, grid (SEQ, 1), at sequence lengths 64 and 256.

Fairness: the kernels are attention_f32_naive's, unchanged: both sides' sources, algorithm, launch shape,
numerical contract (f64 math, -fmad=false, one f32 rounding) and tolerance are that case's, and so is its
Work formula (here for one head). The demo's call is the point of these cases: the demo calls the kernel
once per head while it generates, so one launch does one head's work at a short sequence. That is a kernel
of a few microseconds (64 or 256 blocks of SEQ threads), where back-to-back launches between two events
would time the host's launch rate and the driver's queue as much as the kernel: these cases are therefore
always timed in **graph** mode (each side's launches replayed as a CUDA graph), which removes the launch
overhead and leaves the GPU's time per launch, the figure the demo's per-token cost is made of. The run's
``--timing-mode`` does not apply to them; the mode is part of their fingerprint and of every record.

Check: SEQ 48 (block not a multiple of the warp), one head. Canonical: SEQ 64 and SEQ 256, HEAD_DIM 64.
O is fully overwritten by every launch: idempotent.

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory.
"""

from __future__ import annotations

from collections.abc import Callable

from wfbench_cases import attention_f32_naive as naive
from wfbench_core import hookimpl
from wfbench_core.case import TIMING_GRAPH, Case, resource_text

__all__ = ["CASE_64", "CASE_256", "wfbench_register_cases"]


def _case(seq: int) -> Case:
    return Case(
        id=f"attention_f32_head{seq}",
        version=1,
        priority="P1",
        summary=f"the GPT-2 demo's launch: naive causal attention, one head, SEQ {seq} x 64, graph-timed",
        warpforth=resource_text(naive.__name__, "attention_f32_naive.forth"),
        cuda=resource_text(naive.__name__, "attention_f32_naive.cu"),
        wf_kernel="attention_f32_naive",
        cuda_kernel="attention_f32_naive",
        params=naive.CASE.params,
        sizes={"check": naive.sizes(48, 64, 1), "canonical": naive.sizes(seq, 64, 1)},
        launch=naive.CASE.launch,
        inputs=naive.CASE.inputs,
        reference=naive.CASE.reference,
        tolerances=naive.CASE.tolerances,
        work=naive.CASE.work,
        metric="compute",
        seed=18,
        notes=__doc__ or "",
        timing_mode=TIMING_GRAPH,
    )


CASE_64 = _case(64)
CASE_256 = _case(256)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE_64)
    register(CASE_256)
