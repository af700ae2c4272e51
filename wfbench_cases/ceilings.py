"""The built-in cases' library ceilings (docs/ceiling.md): cuBLAS and CUB through CuPy, on wfbench's stream.

Registered through ``wfbench_register_ceilings``, as a third-party case package would register its own.
CuPy is imported only inside ``prepare`` (the ``ceiling`` extra): listing, building and every run without
``--ceiling`` never import it.

Every call goes to wfbench's stream: CuPy wraps it (``cupy.cuda.Stream.from_external``, through the CUDA stream
protocol) and makes it CuPy's current stream, and the cuBLAS handle is pointed at it with ``cublasSetStream``.
Handles, pointer mode and the first call (where cuBLAS and CuPy's memory pool allocate their workspace) are made
in ``prepare`` and in the untimed correctness check, outside every timed span.

No ceiling here is captured into a CUDA graph: CuPy's cuBLAS bindings point the handle at CuPy's current stream
before every call and raise ``NotImplementedError`` while that stream is capturing, and CuPy's CUB reduction takes
pool memory inside the call. In graph mode they are timed with events between the same events of the round.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wfbench_core import hookimpl
from wfbench_core.case import TENSOR_F64, Tolerance
from wfbench_core.ceiling import Ceiling, CeilingCall, NoCeiling

__all__ = ["CUPY", "DAXPY", "DGEAM", "DGEMM", "NO_LIBRARY", "REDUCE", "wfbench_register_ceilings"]

CUPY = "cupy-cuda13x"  # the distribution whose version keys the ceiling series


_STREAMS: dict[int, Any] = {}  # wfbench's stream as CuPy sees it, kept alive while it is CuPy's current stream


class _Handle:
    """A stream handle offered through the CUDA stream protocol (version 0), as CuPy 14 takes a foreign stream;
    wfbench owns the stream and keeps it for the run."""

    def __init__(self, handle: int) -> None:
        self.handle = int(handle)

    def __cuda_stream__(self) -> tuple[int, int]:
        return 0, self.handle


def _cupy(call: CeilingCall) -> Any:
    """CuPy, with wfbench's stream as its current stream on this thread."""
    import cupy

    if call.stream not in _STREAMS:
        _STREAMS[call.stream] = cupy.cuda.Stream.from_external(_Handle(call.stream))
    _STREAMS[call.stream].use()
    return cupy


# CuPy's cuBLAS bindings refuse to run during stream capture (every call sets the handle's stream first, and
# ``cupy_backends.cuda.libs.cublas.setStream`` raises while the stream is capturing)
CUBLAS_CAPTURABLE = False


def _cublas(call: CeilingCall) -> tuple[Any, int]:
    """CuPy's cuBLAS bindings and its handle, pointed at wfbench's stream, scalars read from the host."""
    cupy = _cupy(call)
    from cupy_backends.cuda.libs import cublas

    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, call.stream)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    return cublas, handle


def _host_double(value: float) -> tuple[Any, int]:
    """A double in host memory and its address (cuBLAS reads alpha/beta from there at call time)."""
    import ctypes

    box = ctypes.c_double(float(value))
    return box, ctypes.addressof(box)


# -- DGEMM -------------------------------------------------------------------------------------------------


def _gemm(call: CeilingCall) -> Callable[[], None]:
    cublas, handle = _cublas(call)
    n = int(call.sizes["N"])
    keep = [_host_double(1.0), _host_double(0.0)]
    (_, one), (_, zero) = keep
    a, b, c = call.inputs["A"], call.inputs["B"], call.outputs["C"]
    nn = cublas.CUBLAS_OP_N

    def go() -> None:  # row-major C = A B is column-major C^T = B^T A^T: B first
        cublas.dgemm(handle, nn, nn, n, n, n, one, b, n, a, n, zero, c, n)

    go.keep = keep  # type: ignore[attr-defined]  # alpha and beta live as long as the call
    return go


def _matrix_out(s: Any) -> dict[str, tuple[int, str]]:
    return {"C": (int(s["N"]) * int(s["N"]), "float64")}


DGEMM = Ceiling(
    library="cuBLAS", routine="cublasDgemm", package=CUPY,
    what="cuBLAS picks a tiled kernel for the GPU (on sm_90, DMMA tensor-core tiles fed by TMA/ldmatrix, "
         "staged through shared memory), not one thread per output element",
    tensor_cores="may use the FP64 tensor cores (DMMA) on sm_80 and later",
    outputs=_matrix_out, expect=lambda inputs, want, s: {"C": want["C"]},
    tolerances={"C": Tolerance(0.0, 0.0, "inputs are multiples of 1/64: every product and partial sum is exact in "
                                         "f64 in any order, with FMA or DMMA alike")},
    prepare=_gemm, flop_type=TENSOR_F64, capturable=CUBLAS_CAPTURABLE, kernels=("gemm", "dmma", "sm90", "sm80"),
)

# -- DAXPY -------------------------------------------------------------------------------------------------


def _axpy(call: CeilingCall) -> Callable[[], None]:
    cublas, handle = _cublas(call)
    n = int(call.sizes["N"])
    box, alpha = _host_double(float(call.scalars["A"]))
    x, z = call.inputs["X"], call.outputs["Z"]

    def go() -> None:  # in place: Z (a copy of Y) = A X + Z
        cublas.daxpy(handle, n, alpha, x, 1, z, 1)

    go.keep = box  # type: ignore[attr-defined]
    return go


DAXPY = Ceiling(
    library="cuBLAS", routine="cublasDaxpy", package=CUPY,
    what="cuBLAS's axpy kernel works in place (y = a x + y) with a fused multiply-add; it moves the same "
         "3 N doubles as the case",
    outputs=lambda s: {"Z": (int(s["N"]), "float64")}, starts_as={"Z": "Y"},
    expect=lambda inputs, want, s: {"Z": want["Z"]},
    tolerances={"Z": Tolerance(2.3e-16, 4e-15, "cuBLAS fuses a x + y (one rounding), numpy rounds twice: they differ "
                                               "by at most one rounding of a x, |a x| < 9 here")},
    prepare=_axpy, capturable=CUBLAS_CAPTURABLE, kernels=("axpy",),
)

# -- DGEAM (transpose) ---------------------------------------------------------------------------------------


def _geam(call: CeilingCall) -> Callable[[], None]:
    cublas, handle = _cublas(call)
    rows, cols = int(call.sizes["ROWS"]), int(call.sizes["COLS"])
    keep = [_host_double(1.0), _host_double(0.0)]
    (_, one), (_, zero) = keep
    a, b = call.inputs["A"], call.outputs["B"]
    t, nn = cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N

    # row-major A (ROWS x COLS) is column-major COLS x ROWS; B = A^T row-major is column-major ROWS x COLS:
    # B = 1 * op(A) + 0 * B with op = transpose (beta = 0: B is not read)
    def go() -> None:
        cublas.dgeam(handle, t, nn, rows, cols, one, a, cols, zero, b, rows, b, rows)

    go.keep = keep  # type: ignore[attr-defined]
    return go


DGEAM = Ceiling(
    library="cuBLAS", routine="cublasDgeam", package=CUPY,
    what="cuBLAS's geam transposes through shared-memory tiles with its own tile shape and grid",
    outputs=lambda s: {"B": (int(s["RC"]), "float64")}, expect=lambda inputs, want, s: {"B": want["B"]},
    tolerances={"B": Tolerance(0.0, 0.0, "1 x a + 0 is exact: every element must be a copy")},
    prepare=_geam, capturable=CUBLAS_CAPTURABLE, kernels=("geam", "transpose"),
)

# -- CUB device reduction ------------------------------------------------------------------------------------


def _reduce(call: CeilingCall) -> Callable[[], None]:
    cupy = _cupy(call)
    from cupy.cuda import cub

    n = int(call.sizes["N"])

    def view(address: int, count: int, shape: tuple[int, ...]) -> Any:
        memory = cupy.cuda.UnownedMemory(address, count * 8, None)
        return cupy.ndarray(shape, cupy.float64, cupy.cuda.MemoryPointer(memory, 0))

    x, total = view(call.inputs["X"], n, (n,)), view(call.outputs["TOTAL"], 1, ())

    def go() -> None:  # CuPy 14: device_reduce(x, op, reduce_axis, out_axis, out=None, keepdims=False)
        cub.device_reduce(x, cub.CUPY_CUB_SUM, (0,), (), out=total)

    return go


def _total(inputs: Any, want: Any, s: Any) -> dict[str, Any]:
    import math

    import numpy as np

    return {"TOTAL": np.array([math.fsum(inputs["X"])])}


REDUCE = Ceiling(
    library="CUB", routine="cub::DeviceReduce::Sum", package=CUPY,
    what="CUB's single-pass device reduction (one kernel, then a one-block pass over the partials) reduces to "
         "the one total, where the case stops at per-block partial sums; CuPy then copies the 8-byte total into "
         "the output (one tiny kernel more)",
    outputs=lambda s: {"TOTAL": (1, "float64")}, expect=_total,
    tolerances={"TOTAL": Tolerance(1e-12, 1e-6, "f64 sum of 2^25 standard-normal terms in CUB's tree order against "
                                                "the exact sum: error below log2(N) x eps x sum|x|, about 1e-7")},
    prepare=_reduce,
    # CuPy takes the workspace and the total from its memory pool inside the call: it is not captured
    capturable=False, kernels=("DeviceReduce", "cub", "cupy_copy"),
)

NO_LIBRARY = {
    "softmax_f32": "no vendor library softmax is callable through CuPy without cuDNN (CuPy's own softmax is "
                   "kernels CuPy generates, not NVIDIA's library code); cuDNN is not a wfbench dependency",
    "gemv_i8": "cuBLAS's int8 GEMM (cublasGemmEx, CUDA_R_8I in, CUDA_R_32I out) is a candidate; not declared yet: "
               "its row-major 16384 x 4096 layout and alignment rules are not yet checked on the H200",
    "attention_f32_naive": "a cuBLAS batched-GEMM-plus-softmax ceiling would need the softmax above; none yet",
}


@hookimpl
def wfbench_register_ceilings(register: Callable[[str, Ceiling | NoCeiling], None]) -> None:
    for case_id, ceiling in (("matmul_f64_naive", DGEMM), ("matmul_f64_tiled", DGEMM), ("axpy_f64", DAXPY),
                             ("transpose_f64", DGEAM), ("reduce_sum_f64", REDUCE)):
        register(case_id, ceiling)
    for case_id, why in NO_LIBRARY.items():
        register(case_id, NoCeiling(why))
