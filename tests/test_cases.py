"""The built-in case suite, checked without a GPU.

Every built-in case renders both configurations; both kernels declare the same parameters in the same
order; the CUDA side compiles with the real nvcc and ptxas under the fixed flags; the WarpForth side
compiles with the real warpforthc (skipped when it is absent) and ptxas; neither side fuses a multiply
and an add where the case says it must not; the numpy references agree with an independent formulation;
fingerprints are distinct and stable; launch geometry covers the problem and fits the hardware limits;
and the canonical sizes are the size the methodology promises.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from wfbench_core import SUITE_VERSION
from wfbench_core.case import CONFIGS, Case
from wfbench_core.compiling.compile import compile_cuda, compile_warpforth, cuda_compiler, ptxas_check
from wfbench_core.discover.registry import Registry

import language_checks

ARCH = "sm_90"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "methodology.md"

#: The built-in cases and their priority.
BUILTIN = {
    "scale_i64": "P0",
    "axpy_f64": "P0",
    "reduce_sum_f64": "P0",
    "matmul_f64_naive": "P0",
    "matmul_f64_tiled": "P0",
    "attention_f32_naive": "P0",
    "polynomial_f64": "P1",
    "transpose_f64": "P1",
    "axpy_f16": "P1",
    "axpy_bf16": "P1",
    "gemv_i8": "P1",
    "matmul_f64_words": "P1",
    "stack_pick_f64": "P1",
    "softmax_f32": "P1",
    "mandelbrot_i32": "P1",
    "attention_f32_head64": "P1",
    "attention_f32_head256": "P1",
}

#: The plugin module of each built-in case (one module may register several cases).
MODULES = {"axpy_f16": "axpy_half", "axpy_bf16": "axpy_half", "attention_f32_head64": "attention_f32_head",
           "attention_f32_head256": "attention_f32_head"}

#: The P0 set of each suite version: changing the P0 set without bumping SUITE_VERSION fails here.
SUITE_P0 = {
    1: {"scale_i64", "axpy_f64"},
    2: {"scale_i64", "axpy_f64", "reduce_sum_f64", "matmul_f64_naive", "matmul_f64_tiled", "attention_f32_naive"},
}

#: Cases that call exp: the only f64 FMAs allowed in their PTX are libdevice's own, inside exp.
EXP_CASES = {"attention_f32_naive", "attention_f32_head64", "attention_f32_head256", "softmax_f32"}

#: What the methodology promises for canonical sizes on an H200 (~4 TB/s, 50 MB L2): memory-bound
#: cases move far more than the L2 and take >= ~50 us per launch; compute cases run for milliseconds.
L2_BYTES = 50e6
MIN_BANDWIDTH_BYTES = 200e6  # >= 50 us at 4 TB/s
MIN_COMPUTE_FLOPS = 1e9  # >= 1 ms at 1 TFLOP/s

CUDA_TYPES = {"double": ("f64", "float64"), "float": ("f32", "float32"), "long long": ("i64", "int64"),
              "int": ("i32", "int32"), "signed char": ("i8", "int8"), "__half": ("f16", "float16"),
              "__nv_bfloat16": ("bf16", "int16")}  # bfloat16 travels as its bits: numpy has no bfloat16

#: Canonical sizes below the general promise, each with its reason (checked where it can be).
SMALL_BY_DESIGN = {
    "attention_f32_head64": "the demo's own launch: one head at SEQ 64, timed in graph mode",
    "attention_f32_head256": "the demo's own launch: one head at SEQ 256, timed in graph mode",
    "axpy_f16": "6 bytes per element: 2**24 elements move 96 MiB, twice the L2",
    "axpy_bf16": "6 bytes per element: 2**24 elements move 96 MiB, twice the L2",
    "gemv_i8": "one byte per matrix element: 64 MiB, over the L2",
    "softmax_f32": "64 MiB in and 64 MiB out, each row read three times: about 130 us per launch on an H200",
    "mandelbrot_i32": "compute-bound by its orbits (undeclared FLOPs): about 100 us per launch on an H200",
}


# -------------------------------------------------------------------------------------------------
# shared, cached work (compiles and references are the slow part)
# -------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def registry() -> Registry:
    """The built-in cases, registered explicitly (independent of entry points and their env switch)."""
    return Registry.load(sorted({f"wfbench_cases.{MODULES.get(cid, cid)}" for cid in BUILTIN}), autoload=False)


def case(cid: str) -> Case:
    return registry().case(cid)


@functools.lru_cache(maxsize=None)
def arrays(cid: str, config: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    c = case(cid)
    inputs = c.make_inputs(config)
    return inputs, c.make_reference(inputs, config)


@functools.lru_cache(maxsize=None)
def cuda_ptx(cid: str, config: str) -> tuple[str, str]:
    """(PTX, ptxas -v report) of the CUDA side, compiled with the canonical nvcc flags: once per source. A case
    that passes its sizes as arguments (most do) renders the same CUDA source at both configurations, which nvcc
    compiled and ptxas assembled twice, to the same PTX (the file's name does not enter it); the first
    configuration's compile serves both, as in the plugin author checks (wfbench_core.testing.check_case)."""
    source = case(cid).render(config)[1]
    first = next(c for c in CONFIGS if case(cid).render(c)[1] == source)
    if first != config:
        return cuda_ptx(cid, first)
    ptx = compile_cuda(source, case_id=f"{cid}[{config}]", arch=ARCH, compiler=cuda_compiler("nvcc")).ptx
    return ptx, ptxas_check(ptx, arch=ARCH, case_id=f"{cid}[{config}]")


@functools.lru_cache(maxsize=None)
def wf_ptx(cid: str, config: str, binary: Path) -> tuple[str, str]:
    ptx = compile_warpforth(case(cid).render(config)[0], binary=binary, case_id=f"{cid}[{config}]").ptx
    return ptx, ptxas_check(ptx, arch=ARCH, case_id=f"{cid}[{config}]")


def without_exp(cid: str, src: str, side: str) -> str:
    """The source with exp swapped for fabs (an intrinsic without FMAs): what remains is the case's own
    arithmetic, which must not be contracted. libdevice's exp uses FMAs internally on both sides."""
    if cid not in EXP_CASES:
        return src
    pattern, repl = (r"\bexp\(", "fabs(") if side == "cuda" else (r"\bFEXP\b", "FABS")
    out, count = re.subn(pattern, repl, src)
    assert count, f"{cid}: EXP_CASES says it calls exp, but the {side} source does not"
    return out


@functools.lru_cache(maxsize=None)
def cuda_fmas_without_exp(cid: str) -> int:
    src = without_exp(cid, case(cid).render("canonical")[1], "cuda")
    return fmas(compile_cuda(src, case_id=cid, arch=ARCH, compiler=cuda_compiler("nvcc")).ptx)


def fmas(ptx: str) -> int:
    return len(re.findall(r"\bfma\.rn\.f64\b", ptx))


def ptxas_facts(report: str) -> dict[str, int]:
    stack = re.search(r"(\d+) bytes stack frame", report)
    regs = re.search(r"Used (\d+) registers", report)
    smem = re.search(r"(\d+) bytes smem", report)
    assert stack and regs, f"unexpected ptxas -v report: {report}"
    return {"stack": int(stack.group(1)), "registers": int(regs.group(1)), "smem": int(smem.group(1)) if smem else 0}


def entry_params(ptx: str, kernel: str) -> int:
    m = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\(([^)]*)\)", ptx)
    assert m, f"no .entry {kernel} in the PTX"
    return len(re.findall(r"\.param\b", m.group(1)))


def wf_header(src: str) -> tuple[list[tuple[str, str, int | None]], list[tuple[str, str, int]]]:
    """``\\! param`` lines as (NAME, base type, element count or None) and ``\\! shared`` lines likewise."""
    params, shared = [], []
    for line in src.splitlines():
        m = re.match(r"\\!\s+(param|shared)\s+(\S+)\s+(i64|f64)(?:\[(\d+)\])?\s*$", line.strip(), re.IGNORECASE)
        if m:
            entry = (m.group(2).upper(), m.group(3).lower(), int(m.group(4)) if m.group(4) else None)
            (params if m.group(1).lower() == "param" else shared).append(entry)
    return params, shared  # type: ignore[return-value]


def cuda_signature(src: str, kernel: str) -> list[tuple[str, bool, bool]]:
    """Each parameter of the kernel as (base type, is pointer, is const)."""
    m = re.search(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?' + re.escape(kernel)
                  + r"\s*\(([^)]*)\)", src)
    assert m, f"no extern \"C\" __global__ void {kernel}(...) in the CUDA source"
    out = []
    for raw in m.group(1).split(","):
        words = raw.replace("*", " * ").split()[:-1]  # drop the parameter name
        is_ptr = "*" in words
        const = "const" in words
        base = " ".join(w for w in words if w not in ("*", "const", "__restrict__"))
        out.append((base, is_ptr, const))
    return out


ALL = sorted(BUILTIN)
NEW = [cid for cid in ALL if cid not in ("scale_i64", "axpy_f64")]
CASE_CONFIGS = [(cid, config) for cid in ALL for config in CONFIGS]


# -------------------------------------------------------------------------------------------------
# the suite as installed
# -------------------------------------------------------------------------------------------------


def test_entry_points_register_the_builtin_suite() -> None:
    reg = Registry.load(autoload=True)
    missing = set(BUILTIN) - set(reg.cases)
    assert not missing, f"built-in cases without an entry point in pyproject.toml: {sorted(missing)}"
    for cid, priority in BUILTIN.items():
        assert reg.case(cid).priority == priority
        assert reg.cases[cid].value.fingerprint() == case(cid).fingerprint()


def test_suite_version_names_the_p0_set() -> None:
    p0 = {cid for cid, prio in BUILTIN.items() if prio == "P0"}
    assert SUITE_VERSION in SUITE_P0, "bump SUITE_P0 here together with SUITE_VERSION"
    assert SUITE_P0[SUITE_VERSION] == p0, "the P0 set changed: bump wfbench_core.SUITE_VERSION"


def test_fingerprints_are_distinct_and_stable() -> None:
    first = {cid: case(cid).fingerprint() for cid in ALL}
    again = Registry.load(sorted({f"wfbench_cases.{MODULES.get(cid, cid)}" for cid in BUILTIN}), autoload=False)
    second = {cid: again.case(cid).fingerprint() for cid in ALL}
    assert first == second
    assert len(set(first.values())) == len(first)


# -------------------------------------------------------------------------------------------------
# sources: rendering and one ABI for both sides
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cid", "config"), CASE_CONFIGS)
def test_sources_render_with_one_abi(cid: str, config: str) -> None:
    c = case(cid)
    wf, cu = c.render(config)
    assert "${" not in wf and "${" not in cu
    inputs, want = arrays(cid, config)
    buffers = {**{k: np.asarray(v) for k, v in inputs.items()}, **want}

    params, _ = wf_header(wf)
    assert [name for name, _, _ in params] == [p.name.upper() for p in c.params], \
        f"{cid}: WarpForth parameters differ from the case's params (order matters)"
    for (name, base, count), p in zip(params, c.params, strict=True):
        if p.kind == "ptr":
            assert count is not None, f"{cid}: {name} is a buffer, WarpForth declares a scalar"
            nbytes = buffers[p.name].nbytes
            assert count * 8 == -(-nbytes // 8) * 8, \
                f"{cid}[{config}]: {name} declared {count} cells for a {nbytes}-byte buffer"
        else:
            assert count is None and base == p.kind, f"{cid}: scalar {name} is {base}, the case says {p.kind}"

    sig = cuda_signature(cu, c.cuda_kernel)
    assert len(sig) == len(c.params), f"{cid}: CUDA kernel takes {len(sig)} parameters, the case {len(c.params)}"
    for (base, is_ptr, const), p in zip(sig, c.params, strict=True):
        kind, dtype = CUDA_TYPES[base]
        if p.kind == "ptr":
            assert is_ptr and dtype == p.dtype, f"{cid}: CUDA {p.name} is {base}*, the case says {p.dtype}"
            assert const != p.output, f"{cid}: CUDA {p.name} must be const exactly when it is an input"
        else:
            assert not is_ptr and kind == p.kind, f"{cid}: CUDA {p.name} is {base}, the case says {p.kind}"


# -------------------------------------------------------------------------------------------------
# compiling both sides with the real compilers
# -------------------------------------------------------------------------------------------------


def _threads(c: Case, config: str) -> int:
    block = c.launch(c.sizes[config]).block
    return block[0] * block[1] * block[2]


@pytest.mark.parametrize(("cid", "config"), CASE_CONFIGS)
def test_cuda_side_compiles_without_fma_and_fits(nvcc: Path, cid: str, config: str) -> None:
    c = case(cid)
    ptx, report = cuda_ptx(cid, config)
    facts = ptxas_facts(report)
    assert entry_params(ptx, c.cuda_kernel) == len(c.params)
    if cid not in EXP_CASES:
        assert fmas(ptx) == 0, f"{cid}: the CUDA PTX has f64 FMAs: the baseline must not fuse"
    elif config == "canonical":
        assert fmas(ptx) > 0  # libdevice's exp
        assert cuda_fmas_without_exp(cid) == 0, f"{cid}: the CUDA PTX fuses the case's own arithmetic"
    assert facts["registers"] * _threads(c, config) <= 65536, f"{cid}: too many registers for its block"
    assert facts["smem"] <= 48 * 1024


@pytest.mark.warpforthc
@pytest.mark.parametrize(("cid", "config"), CASE_CONFIGS)
def test_warpforth_side_compiles_without_fma_and_fits(warpforthc: Path, cid: str, config: str) -> None:
    c = case(cid)
    ptx, report = wf_ptx(cid, config, warpforthc)
    facts = ptxas_facts(report)
    assert entry_params(ptx, c.wf_kernel) == len(c.params), f"{cid}: WarpForth entry has another parameter count"
    if cid not in EXP_CASES:
        assert fmas(ptx) == 0, f"{cid}: the WarpForth PTX has f64 FMAs"
    elif config == "canonical":
        src = without_exp(cid, c.render(config)[0], "warpforth")
        assert fmas(compile_warpforth(src, binary=warpforthc, case_id=cid).ptx) == 0
    assert facts["registers"] * _threads(c, config) <= 65536, f"{cid}: too many registers for its block"
    _, shared = wf_header(c.render(config)[0])
    assert facts["smem"] == sum(8 * n for _, _, n in shared) <= 48 * 1024
    claim = re.search(r"(\d+) bytes stack frame", c.notes)
    if claim:  # the case documents what ptxas reports about the runtime stack: keep it true
        assert facts["stack"] == int(claim.group(1)), \
            f"{cid}: notes say {claim.group(1)} bytes stack frame, ptxas reports {facts['stack']}"


@pytest.mark.warpforthc
@pytest.mark.parametrize("cid", ALL)
def test_both_sides_use_the_same_shared_memory(nvcc: Path, warpforthc: Path, cid: str) -> None:
    cuda_smem = ptxas_facts(cuda_ptx(cid, "canonical")[1])["smem"]
    wf_smem = ptxas_facts(wf_ptx(cid, "canonical", warpforthc)[1])["smem"]
    assert cuda_smem == wf_smem


# -------------------------------------------------------------------------------------------------
# references against independent formulations (check size)
# -------------------------------------------------------------------------------------------------


def _reduce_by_simulation(x: np.ndarray, blocks: int) -> np.ndarray:
    """The kernel, thread by thread, in plain Python floats (IEEE doubles)."""
    values = x.tolist()
    stride = blocks * 256
    out = []
    for b in range(blocks):
        partial = []
        for t in range(256):
            acc = 0.0
            for i in range(b * 256 + t, len(values), stride):
                acc = acc + values[i]
            partial.append(acc)
        half = 128
        while half:
            for t in range(half):
                partial[t] = partial[t] + partial[t + half]
            half //= 2
        out.append(partial[0])
    return np.array(out)


def check_reduce(inputs: dict, want: dict, s: dict) -> None:
    x = inputs["X"]
    simulated = _reduce_by_simulation(x, s["BLOCKS"])
    assert np.array_equal(want["OUT"], simulated), "the reference must replay the kernel's order bit for bit"
    owner = (np.arange(x.size) % (s["BLOCKS"] * 256)) // 256
    exact = np.array([math.fsum(x[owner == b]) for b in range(s["BLOCKS"])])
    tol = case("reduce_sum_f64").tolerances["OUT"]
    assert np.allclose(want["OUT"], exact, rtol=tol.rtol, atol=tol.atol)
    assert not np.allclose(want["OUT"][1:], exact[:-1], rtol=tol.rtol, atol=tol.atol)  # the check can fail


def _check_matmul(inputs: dict, want: dict, s: dict) -> None:
    n = s["N"]
    a64, b64 = (np.rint(inputs[k] * 64).astype(np.int64) for k in ("A", "B"))
    assert np.array_equal(a64 / 64, inputs["A"]) and np.array_equal(b64 / 64, inputs["B"])
    exact = (a64.reshape(n, n) @ b64.reshape(n, n)).ravel()  # integer arithmetic: no rounding at all
    assert np.array_equal(want["C"], exact / 4096.0)


def _check_attention(inputs: dict, want: dict, s: dict) -> None:
    h, seq, d = s["HEADS"], s["SEQ"], s["HEAD_DIM"]
    q, k, v = (inputs[name].astype(np.float64).reshape(h, seq, d) for name in ("Q", "K", "V"))
    got = np.empty((h, seq, d))
    for head in range(h):
        for row in range(seq):  # only the keys the causal mask keeps: no -1e30 trick
            scores = np.array([np.dot(q[head, row], k[head, j]) for j in range(row + 1)]) / math.sqrt(d)
            w = np.exp(scores - scores.max())
            got[head, row] = (w / w.sum()) @ v[head, : row + 1]
    tol = case("attention_f32_naive").tolerances["O"]
    assert np.allclose(want["O"], got.astype(np.float32).ravel(), rtol=tol.rtol, atol=tol.atol)
    unmasked = np.exp(q @ k.transpose(0, 2, 1) / math.sqrt(d))
    unmasked = (unmasked / unmasked.sum(axis=2, keepdims=True)) @ v
    assert not np.allclose(want["O"], unmasked.astype(np.float32).ravel(), rtol=tol.rtol, atol=tol.atol)


def _check_polynomial(inputs: dict, want: dict, s: dict) -> None:
    from wfbench_cases.polynomial_f64 import COEFFS

    assert np.array_equal(want["Y"], np.polyval(COEFFS, inputs["X"]))  # numpy's own Horner, same roundings
    wf, cu = case("polynomial_f64").render("check")
    literal = r"-?\d+\.\d+"
    wf_coeffs = [float(t) for t in re.findall(literal, wf.split("F@", 1)[1])]
    assert wf_coeffs == list(COEFFS), "the WarpForth literals must be COEFFS, highest degree first"
    body = cu.split("x[i];", 1)[1]
    magnitudes = [float(num) for num in re.findall(r"\d+\.\d+", body)]
    signs = [-1.0 if sign == "-" else 1.0 for sign in re.findall(r"([-+]) \d+\.\d+;", body)]
    assert [magnitudes[0]] + [sg * m for sg, m in zip(signs, magnitudes[1:], strict=True)] == list(COEFFS), \
        "the CUDA Horner steps must use COEFFS, highest degree first"


def _check_transpose(inputs: dict, want: dict, s: dict) -> None:
    rows, cols = s["ROWS"], s["COLS"]
    a = inputs["A"]
    expected = [a[r * cols + c] for c in range(cols) for r in range(rows)]  # B[c, r] = A[r, c], B row-major
    assert np.array_equal(want["B"], np.array(expected))


def _check_scale(inputs: dict, want: dict, s: dict) -> None:
    k = int(inputs["K"])
    assert want["Y"].tolist() == [k * int(x) for x in inputs["X"].tolist()]


def _check_axpy(inputs: dict, want: dict, s: dict) -> None:
    a = float(inputs["A"])
    assert want["Z"].tolist() == [a * x + y for x, y in zip(inputs["X"].tolist(), inputs["Y"].tolist(), strict=True)]


INDEPENDENT: dict[str, Callable[[dict, dict, dict], None]] = {
    "reduce_sum_f64": check_reduce,
    "matmul_f64_naive": _check_matmul,
    "matmul_f64_tiled": _check_matmul,
    "attention_f32_naive": _check_attention,
    "polynomial_f64": _check_polynomial,
    "transpose_f64": _check_transpose,
    "scale_i64": _check_scale,
    "axpy_f64": _check_axpy,
    "matmul_f64_words": _check_matmul,
    "attention_f32_head64": _check_attention,
    "attention_f32_head256": _check_attention,
    "axpy_f16": language_checks.check_axpy_f16,
    "axpy_bf16": language_checks.check_axpy_bf16,
    "gemv_i8": language_checks.check_gemv,
    "stack_pick_f64": language_checks.check_stack_pick,
    "softmax_f32": lambda i, w, s: language_checks.check_softmax(i, w, s, case("softmax_f32").tolerances["Y"].rtol,
                                                                case("softmax_f32").tolerances["Y"].atol),
    "mandelbrot_i32": language_checks.check_mandelbrot,
}


@pytest.mark.parametrize("cid", ALL)
def test_reference_agrees_with_an_independent_formulation(cid: str) -> None:
    inputs, want = arrays(cid, "check")
    INDEPENDENT[cid](inputs, want, case(cid).sizes["check"])


@pytest.mark.parametrize("cid", ["matmul_f64_naive", "matmul_f64_tiled"])
def test_matmul_inputs_keep_every_sum_exact_at_both_sizes(cid: str) -> None:
    c = case(cid)
    for config in CONFIGS:
        inputs = c.make_inputs(config)
        a64, b64 = (np.abs(np.rint(inputs[k] * 64)).max() for k in ("A", "B"))
        # every partial sum of N products is an integer multiple of 1/4096 below 2**53 / 4096
        assert a64 * b64 * c.sizes[config]["N"] < 2.0**53


# -------------------------------------------------------------------------------------------------
# geometry and sizes
# -------------------------------------------------------------------------------------------------


def _grid_stride(s: dict, grid: tuple, block: tuple) -> None:
    assert grid[1:] == (1, 1) and block[1:] == (1, 1)
    assert grid[0] * block[0] <= s["N"], "grid-stride launch larger than the problem leaves threads idle"


def _naive(s: dict, grid: tuple, block: tuple) -> None:
    threads = grid[0] * block[0]
    assert threads >= s["NN"] > threads - block[0] and s["NN"] == s["N"] ** 2


def _tiled(s: dict, grid: tuple, block: tuple) -> None:
    assert block == (16, 16, 1) and grid == (s["N"] // 16, s["N"] // 16, 1) and s["N"] % 16 == 0
    assert s["NN"] == s["N"] ** 2


def _attention(s: dict, grid: tuple, block: tuple) -> None:
    assert grid == (s["SEQ"], s["HEADS"], 1) and block == (s["SEQ"], 1, 1) and 2 <= s["SEQ"] <= 1024
    assert s["WORDS"] * 2 >= s["HEADS"] * s["SEQ"] * s["HEAD_DIM"] > s["WORDS"] * 2 - 2


def _transpose(s: dict, grid: tuple, block: tuple) -> None:
    assert block == (32, 8, 1)
    assert grid[0] * 32 >= s["COLS"] > (grid[0] - 1) * 32 and grid[1] * 32 >= s["ROWS"] > (grid[1] - 1) * 32
    assert s["ROWS"] % 32 and s["COLS"] % 32, "sizes must not be multiples of the tile (boundary branches)"
    assert s["RC"] == s["ROWS"] * s["COLS"]


def _reduce(s: dict, grid: tuple, block: tuple) -> None:
    assert block == (256, 1, 1) and grid == (s["BLOCKS"], 1, 1)
    assert s["BLOCKS"] * 256 <= s["N"]


GEOMETRY: dict[str, Callable[[dict, tuple, tuple], None]] = {
    "scale_i64": _grid_stride, "axpy_f64": _grid_stride, "polynomial_f64": _grid_stride,
    "reduce_sum_f64": _reduce, "matmul_f64_naive": _naive, "matmul_f64_tiled": _tiled,
    "attention_f32_naive": _attention, "transpose_f64": _transpose,
    "axpy_f16": _grid_stride, "axpy_bf16": _grid_stride, "stack_pick_f64": _grid_stride,
    "matmul_f64_words": _naive, "attention_f32_head64": _attention, "attention_f32_head256": _attention,
    **language_checks.GEOMETRY,
}


@pytest.mark.parametrize(("cid", "config"), CASE_CONFIGS)
def test_launch_covers_the_problem_within_limits(cid: str, config: str) -> None:
    c = case(cid)
    s = c.sizes[config]
    launch = c.launch(s)
    assert launch.block[0] * launch.block[1] * launch.block[2] <= 1024
    assert launch.shared_bytes <= 48 * 1024
    GEOMETRY[cid](s, launch.grid, launch.block)


@pytest.mark.parametrize("cid", ALL)
def test_canonical_size_is_what_the_methodology_promises(cid: str) -> None:
    c = case(cid)
    canonical, check = c.work(c.sizes["canonical"]), c.work(c.sizes["check"])
    if cid in SMALL_BY_DESIGN:
        assert c.priority == "P1", f"{cid}: a P0 case must meet the general size promise"
        if c.metric == "bandwidth" and c.work(c.sizes["canonical"]).flops:
            assert canonical.bytes > L2_BYTES, f"{cid}: a bandwidth case must not fit in the L2"
    elif c.metric == "bandwidth":
        assert canonical.bytes >= MIN_BANDWIDTH_BYTES and canonical.bytes > 4 * L2_BYTES
    else:
        assert canonical.flops >= MIN_COMPUTE_FLOPS
    assert check.bytes < canonical.bytes and check.flops <= canonical.flops


def test_work_counts_the_operation() -> None:
    s = case("matmul_f64_naive").sizes["canonical"]
    assert case("matmul_f64_naive").work(s).flops == 2 * s["N"] ** 3 == case("matmul_f64_tiled").work(s).flops
    assert case("matmul_f64_naive").work(s).bytes == 3 * s["N"] ** 2 * 8
    s = case("reduce_sum_f64").sizes["canonical"]
    assert case("reduce_sum_f64").work(s).bytes >= 8 * s["N"]
    for cid in ALL:  # bytes at check size equal the buffers actually read and written
        inputs, want = arrays(cid, "check")
        moved = sum(np.asarray(v).nbytes for v in inputs.values() if np.ndim(v)) + sum(v.nbytes for v in want.values())
        assert case(cid).work(case(cid).sizes["check"]).bytes == moved, cid


# -------------------------------------------------------------------------------------------------
# documentation of the contract
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cid", NEW)
def test_notes_state_the_fairness_contract(cid: str) -> None:
    c = case(cid)
    for needle in ("Fairness", "olerance", "Work", "bytes stack frame", "-fmad=false", "idempotent"):
        assert needle in c.notes, f"{cid}: notes do not mention {needle!r}"
    for tol in c.tolerances.values():
        assert tol.why and "\n" not in tol.why


def test_methodology_documents_every_case_and_the_commands() -> None:
    text = DOCS.read_text()
    for cid in ALL:
        assert f"`{cid}`" in text, f"docs/methodology.md has no row for {cid}"
    for needle in ("wfbench run", "wfbench build", "wfbench execute", "MAD", "-fmad=false", "p95"):
        assert needle in text
