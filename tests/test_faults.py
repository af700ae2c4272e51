"""Fault classification: driver errors as numba-cuda and cuda.core raise them, compile failures (no GPU)."""

from __future__ import annotations

import pytest

from wfbench_core.compiling import faults
from wfbench_core.compiling.compile import CompileError
from wfbench_core.errors import WfbenchError


@pytest.mark.parametrize("code,kind,sticky", [
    (700, faults.ILLEGAL_ADDRESS, True),
    (716, faults.MISALIGNED_ADDRESS, True),
    (715, faults.TRAP, True),
    (714, faults.TRAP, True),
    (719, faults.TRAP, True),
    (701, faults.OUT_OF_RESOURCES, False),
    (218, faults.LOAD_FAILURE, False),
    (209, faults.LOAD_FAILURE, False),
    (500, faults.LOAD_FAILURE, False),
    (2, faults.OUT_OF_MEMORY, False),
    (12345, faults.CUDA_ERROR, True),  # unknown: assume the context is gone
])
def test_classify_code(code: int, kind: str, sticky: bool) -> None:
    f = faults.classify_code(code)
    assert (f.kind, f.sticky, f.code) == (kind, sticky, code)
    if code in faults._CODES:
        assert faults.classify_code(f.name) == f  # by name gives the same


def test_classify_numba_cuda_api_error() -> None:
    from cuda.bindings import driver as binding
    from numba.cuda.cudadrv.driver import CudaAPIError

    # exactly what numba-cuda's _check_cuda_python_error raises
    code = binding.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
    exc = CudaAPIError(code, f"Call to cuStreamSynchronize results in {code.name}")
    f = faults.classify(exc)
    assert f is not None and (f.kind, f.sticky, f.code, f.name) == ("illegal address", True, 700,
                                                                    "CUDA_ERROR_ILLEGAL_ADDRESS")
    exc = CudaAPIError(binding.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "Call to cuLaunchKernel results in ...")
    assert faults.classify(exc).kind == faults.OUT_OF_RESOURCES and not faults.classify(exc).sticky


def test_classify_cuda_core_error_by_name_in_message() -> None:
    from cuda.core._utils.cuda_utils import CUDAError

    exc = CUDAError("CUDA_ERROR_MISALIGNED_ADDRESS: while executing a kernel, the device encountered a load or "
                    "store instruction on a memory address which is not aligned.")
    f = faults.classify(exc)
    assert f is not None and f.kind == faults.MISALIGNED_ADDRESS and f.sticky
    assert faults.classify(ValueError("bad shape")) is None


def test_kernel_fault_is_one_classified_line() -> None:
    err = faults.KernelFault("broken_oob", "check", "wf", faults.classify_code(700), "launch")
    assert isinstance(err, WfbenchError) and err.sticky and err.kind == "illegal address"
    assert str(err) == "broken_oob[check] WarpForth: launch: illegal address (CUDA_ERROR_ILLEGAL_ADDRESS)"
    assert "\n" not in str(err)
    err = faults.KernelFault("x", "canonical", "wf:head", faults.classify_code(701), "launch")
    assert not err.sticky and str(err).startswith("x[canonical] WarpForth (head): launch: out of resources")
    h = faults.hang("x", "check", "cuda", 12.0)
    assert h.sticky and h.kind == faults.HANG and str(h) == "x[check] CUDA: hang: did not finish within 12 s"
    wrapped = faults.as_kernel_fault(RuntimeError("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"),
                                     case_id="x", config="canonical", side="", action="timing")
    assert wrapped is not None and str(wrapped) == "x[canonical]: timing: trap (CUDA_ERROR_LAUNCH_FAILED)"


def test_compile_failure_keeps_the_first_error_line() -> None:
    diag = ("broken_syntax[check].forth:7:3: error: unknown word: FOO\n  FOO BAR\n  ^\n"
            "error: failed to parse Forth source\n")
    err = faults.compile_failure("broken_syntax", "check", "wf", "warpforthc", diag)
    assert isinstance(err, CompileError) and not err.sticky and err.kind == faults.COMPILE_FAILURE
    assert str(err) == ("broken_syntax[check] WarpForth: compile failure (warpforthc): "
                        "broken_syntax[check].forth:7:3: error: unknown word: FOO")


def test_launch_limits_names_the_resource() -> None:
    limits = dict(max_shared_per_block=48 * 1024, max_registers_per_block=65536)
    assert faults.launch_limits(threads=256, dynamic_shared=0, registers=32, static_shared=0, max_threads=1024,
                                **limits) == ""
    assert "1024 threads per block, the kernel allows 512" in faults.launch_limits(
        threads=1024, dynamic_shared=0, registers=64, static_shared=0, max_threads=512, **limits)
    assert "registers" in faults.launch_limits(threads=1024, dynamic_shared=0, registers=255, static_shared=0,
                                               max_threads=1024, **limits)
    assert "65536 bytes of shared memory > 49152" in faults.launch_limits(
        threads=32, dynamic_shared=65536, registers=8, static_shared=0, max_threads=1024, **limits)
