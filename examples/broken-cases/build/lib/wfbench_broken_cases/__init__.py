"""Deliberately broken WarpForth kernels, each next to a correct CUDA twin, to test how wfbench handles faults.

Every case module registers one case through the ``wfbench`` entry-point group, exactly like a third-party
case plugin. What each WarpForth kernel does wrong, and what wfbench must answer:

=========================  ===================================================  ====================================
case                       the bug                                              expected status
=========================  ===================================================  ====================================
fault_oob_store            stores 1 TiB past its output                         ERROR illegal address, sticky
fault_misaligned_store     8-byte stores at 4-byte aligned addresses            ERROR misaligned address, sticky
fault_hang                 ``0 UNTIL``: the loop never ends                     ERROR hang (the watchdog's deadline)
fault_skip_tail            loop stops at N - 7                                  FAILED: 7 of N elements never written
fault_no_write             computes, never stores                               FAILED: N of N elements never written
fault_smem_race            shared store then load with no BARRIER               racecheck finding (--sanitize); the
                                                                                output is right or wrong by chance
fault_too_many_threads     correct kernel, 2048 threads per block               ERROR out of resources (threads)
fault_syntax               unknown word FROB                                    ERROR compile failure (warpforthc)
fault_nan_only             computes only where its output holds a NaN           IMPLAUSIBLE (timed, it only reads)
fault_accumulate           adds into its output (a NaN read as 0)               wrong once an output is written twice
fault_launch_count         half the work from its 8th launch on one buffer set  IMPLAUSIBLE; wrong when timed
fault_alignment            off by one unless Y is 512-byte aligned              FAILED in a timed placement
fault_first_buffers        half the work unless X is 4 KiB aligned (timed size) IMPLAUSIBLE; wrong when timed
fault_oob_read             reads one element past X, right answer               memcheck finding (--sanitize)
fault_good_scale           nothing: the correct kernel                          OK with a gap
=========================  ===================================================  ====================================

Install only where you test wfbench itself: installed, these cases join every run that selects all cases.
"""

from __future__ import annotations

from importlib.resources import files

import numpy as np

from wfbench_core.case import Case, Launch, Param, Tolerance, Work

BLOCK = 256
# Small sizes: broken cases are not meant to be timed; the good ones are timed quickly.
SIZES = {"check": {"N": 100_003, "blocks": 40}, "canonical": {"N": 1 << 22, "blocks": 1024}}


def kernel_text(name: str) -> str:
    return files(__name__).joinpath("kernels", name).read_text()


def cuda_twin(template: str, kernel: str) -> str:
    return kernel_text(template).replace("@KERNEL@", kernel)


def scale_case(case_id: str, forth: str, summary: str, *, block: int = BLOCK, notes: str = "",
               sizes: dict[str, dict[str, int]] = SIZES) -> Case:
    """y = k*x over int64: the WarpForth kernel from ``forth``, the correct CUDA twin."""
    return Case(
        id=case_id, version=1, priority="P1", summary=summary,
        warpforth=kernel_text(forth), cuda=cuda_twin("scale.cu", case_id),
        wf_kernel=case_id, cuda_kernel=case_id,
        params=(Param("K", "i64"), Param("X", "ptr", "int64"), Param("Y", "ptr", "int64", output=True),
                Param("N", "i64")),
        sizes=sizes,
        launch=lambda s: Launch(grid=s["blocks"], block=block),
        inputs=lambda s, rng: {"K": 3, "X": rng.integers(-(2**40), 2**40, s["N"], dtype=np.int64), "N": s["N"]},
        reference=lambda inp, s: {"Y": inp["K"] * inp["X"]},
        tolerances={"Y": Tolerance(0.0, 0.0, "integer arithmetic is exact")},
        work=lambda s: Work(bytes=16 * s["N"]),
        seed=11, notes=notes,
    )


def axpy_case(case_id: str, forth: str, summary: str, *, notes: str = "") -> Case:
    """z = a*x + y over float64: the WarpForth kernel from ``forth``, the correct CUDA twin."""
    return Case(
        id=case_id, version=1, priority="P1", summary=summary,
        warpforth=kernel_text(forth), cuda=cuda_twin("axpy.cu", case_id),
        wf_kernel=case_id, cuda_kernel=case_id,
        params=(Param("A", "f64"), Param("X", "ptr", "float64"), Param("Y", "ptr", "float64"),
                Param("Z", "ptr", "float64", output=True), Param("N", "i64")),
        sizes=SIZES,
        launch=lambda s: Launch(grid=s["blocks"], block=BLOCK),
        inputs=lambda s, rng: {"A": 1.5, "X": rng.standard_normal(s["N"]), "Y": rng.standard_normal(s["N"]),
                               "N": s["N"]},
        reference=lambda inp, s: {"Z": inp["A"] * inp["X"] + inp["Y"]},
        tolerances={"Z": Tolerance(1e-15, 0.0, "separately rounded mul and add match numpy bit for bit")},
        work=lambda s: Work(bytes=24 * s["N"], flops=2 * s["N"]),
        seed=12, notes=notes,
    )
