"""mandelbrot_i32 (P1): an escape-time loop — float comparisons, ``BEGIN … UNTIL``, ``LEAVE``, ``F>S``,
``IF … ELSE … THEN``, divergent trip counts, and the grid's z dimension.

Algorithm (both sides): ``FRAMES`` zoom levels of a ``W x H`` image, one per grid z; blocks of 16 x 16
threads, thread x takes a pixel column, rows by a grid-stride loop in y (grid y = H / 64, so four rows per
thread at the canonical size). Per pixel ``c = ((px - W/2) s - 0.75, (py - H/2) s)``, ``s = 3 / (W (f+1))``,
``z <- z^2 + c`` (``zx*zx - zy*zy + cx``, ``zx*2*zy + cy``) until ``|z|^2 > 4`` or ``MAXIT`` iterations.
The result is the iteration count where ``z`` escaped, else ``MAXIT + trunc(1000 |z|^2)``: inside points
carry their orbit's last value, so a wrong rounding anywhere shows. Neighbouring threads run very
different trip counts (1 to MAXIT): divergence is the point.

Fairness: both kernels take (OUT, W, H, MAXIT), use the same launch, loops and operations in the same
order, each rounded (``-fmad=false``); ``(long long)`` truncation is ``F>S``'s ``cvt.rzi``. The numpy
reference replays the same operations, so all three agree bit for bit (tolerance 0).

Work: writes 4 bytes per pixel; the arithmetic depends on the orbits (not declared: ``flops = 0``).
Canonical 1024 x 512 x 2 frames, MAXIT 128; check 100 x 37 x 2, MAXIT 64 (neither a multiple of the block).
Every launch writes every pixel from the sizes alone: idempotent.

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory.
"""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_core.case import Case, Launch, Param, Tolerance, Work, resource_text

TILE = 16
ROWS_PER_THREAD = 4


def sizes(w: int, h: int, frames: int, maxit: int) -> dict[str, int]:
    """Named sizes; WORDS is the int32 pixel count in 8-byte words (WarpForth arrays are declared i64[])."""
    return {"W": w, "H": h, "FRAMES": frames, "MAXIT": maxit, "WORDS": -(-w * h * frames // 2)}


def _launch(s):  # type: ignore[no-untyped-def]
    rows = -(-s["H"] // (TILE * ROWS_PER_THREAD))
    return Launch(grid=(-(-s["W"] // TILE), rows, s["FRAMES"]), block=(TILE, TILE))


def _inputs(s, rng):  # type: ignore[no-untyped-def]
    return {"W": s["W"], "H": s["H"], "MAXIT": s["MAXIT"]}


def _reference(inp, s):  # type: ignore[no-untyped-def]
    """The kernels' operations in the same order, vectorized over the pixels still iterating."""
    import numpy as np

    w, h, frames, maxit = int(inp["W"]), int(inp["H"]), s["FRAMES"], int(inp["MAXIT"])
    f, py, px = (a.ravel() for a in np.meshgrid(np.arange(frames), np.arange(h), np.arange(w), indexing="ij"))
    scale = 3.0 / (w * (f + 1)).astype(np.float64)
    cx = (px - w // 2).astype(np.float64) * scale + -0.75
    cy = (py - h // 2).astype(np.float64) * scale
    zx, zy = np.zeros_like(cx), np.zeros_like(cy)
    its = np.zeros(cx.size, dtype=np.int64)
    live = np.arange(cx.size)
    for _ in range(maxit):
        x, y = zx[live], zy[live]
        nx = (x * x - y * y) + cx[live]
        ny = (x * 2.0) * y + cy[live]
        zx[live], zy[live] = nx, ny
        its[live] += 1
        live = live[~(nx * nx + ny * ny > 4.0)]
        if live.size == 0:
            break
    inside = its >= maxit
    value = np.where(inside, maxit + ((zx * zx + zy * zy) * 1000.0).astype(np.int64), its)
    return {"OUT": value.astype(np.int32)}


CASE = Case(
    id="mandelbrot_i32",
    version=1,
    priority="P1",
    summary="escape-time Mandelbrot, 2 zoom levels on grid z; UNTIL, LEAVE, ELSE, F>S, divergent trip counts",
    warpforth=resource_text(__name__, "mandelbrot_i32.forth"),
    cuda=resource_text(__name__, "mandelbrot_i32.cu"),
    wf_kernel="mandelbrot_i32",
    cuda_kernel="mandelbrot_i32",
    params=(Param("OUT", "ptr", "int32", output=True), Param("W", "i64"), Param("H", "i64"),
            Param("MAXIT", "i64")),
    sizes={"check": sizes(100, 37, 2, 64), "canonical": sizes(1024, 512, 2, 128)},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"OUT": Tolerance(0.0, 0.0, "the same f64 operations in the same order on both sides and in numpy")},
    work=lambda s: Work(bytes=4 * s["W"] * s["H"] * s["FRAMES"], flops=0),
    metric="bandwidth",
    seed=17,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
