"""mandelbrot_i32 (P1): an escape-time loop — float comparisons, ``BEGIN … UNTIL``, ``LEAVE``, ``F>S``,
``IF … ELSE … THEN``, nested ``DO`` loops with ``J``, divergent trip counts, and the grid's z dimension.

Algorithm (both sides): ``FRAMES`` zoom levels of a ``W x H`` image, one per grid z; blocks of 16 x 16
threads, thread x takes a pixel column, rows by a grid-stride loop in y (grid y = H / 64, so four rows per
thread at the canonical size). Each pixel is supersampled 2 x 2: subsample ``(J, I)`` (two nested ``DO``
loops) has ``c = (((px - W/2) 2 + I) h - 0.75, ((py - H/2) 2 + J) h)``, ``h = 1.5 / (W (f+1))``, and
iterates ``z <- z^2 + c`` (``zx*zx - zy*zy + cx``, ``zx*2*zy + cy``) until ``|z|^2 > 4`` or ``MAXIT``
iterations. A subsample's value is the iteration count where ``z`` escaped, else ``MAXIT + trunc(1000
|z|^2)`` (inside points carry their orbit's last value, so a wrong rounding anywhere shows); a pixel is the
sum of its four. Neighbouring threads run very different trip counts (1 to MAXIT): divergence is the point.

Fairness: both kernels take (OUT, W, H, MAXIT), use the same launch, loops and operations in the same
order, each rounded (``-fmad=false``); ``(long long)`` truncation is ``F>S``'s ``cvt.rzi``. The numpy
reference replays the same operations, so all three agree bit for bit (tolerance 0).

Work: writes 4 bytes per pixel; the arithmetic depends on the orbits (not declared: ``flops = 0``).
Canonical 512 x 256 x 2 frames (a million subsamples), MAXIT 128; check 60 x 37 x 2, MAXIT 64 (neither a
multiple of the block). Every launch writes every pixel from the sizes alone: idempotent.

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Tolerance, Work, resource_text

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["CASE", "ROWS_PER_THREAD", "TILE", "sizes", "subsample_values", "wfbench_register_cases"]

TILE = 16
ROWS_PER_THREAD = 4


def sizes(w: int, h: int, frames: int, maxit: int) -> dict[str, int]:
    """Named sizes; WORDS is the int32 pixel count in 8-byte words (WarpForth arrays are declared i64[])."""
    return {"W": w, "H": h, "FRAMES": frames, "MAXIT": maxit, "WORDS": -(-w * h * frames // 2)}


def _launch(s: Sizes) -> Launch:
    rows = -(-s["H"] // (TILE * ROWS_PER_THREAD))
    return Launch(grid=(-(-s["W"] // TILE), rows, s["FRAMES"]), block=(TILE, TILE))


def _inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    return {"W": s["W"], "H": s["H"], "MAXIT": s["MAXIT"]}


def subsample_values(cx: npt.NDArray[np.float64], cy: npt.NDArray[np.float64], maxit: int
                     ) -> npt.NDArray[np.int64]:
    """Each subsample's value: the kernels' operations in the same order, vectorized over those still
    iterating."""
    import numpy as np

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
    return np.where(its >= maxit, maxit + ((zx * zx + zy * zy) * 1000.0).astype(np.int64), its)


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    import numpy as np

    w, h, frames, maxit = int(inp["W"]), int(inp["H"]), s["FRAMES"], int(inp["MAXIT"])
    f, py, px, sy, sx = (a.ravel() for a in np.meshgrid(np.arange(frames), np.arange(h), np.arange(w),
                                                        np.arange(2), np.arange(2), indexing="ij"))
    step = 1.5 / (w * (f + 1)).astype(np.float64)
    cx = ((px - w // 2) * 2 + sx).astype(np.float64) * step + -0.75
    cy = ((py - h // 2) * 2 + sy).astype(np.float64) * step
    values = subsample_values(cx, cy, maxit).reshape(frames * h * w, 4)
    return {"OUT": values.sum(axis=1).astype(np.int32)}


CASE = Case(
    id="mandelbrot_i32",
    version=1,
    priority="P1",
    summary="escape-time Mandelbrot, 2x2 supersampled, zoom levels on grid z; UNTIL, LEAVE, J, ELSE, F>S, divergence",
    warpforth=resource_text(__name__, "mandelbrot_i32.forth"),
    cuda=resource_text(__name__, "mandelbrot_i32.cu"),
    wf_kernel="mandelbrot_i32",
    cuda_kernel="mandelbrot_i32",
    params=(Param("OUT", "ptr", "int32", output=True), Param("W", "i64"), Param("H", "i64"),
            Param("MAXIT", "i64")),
    sizes={"check": sizes(60, 37, 2, 64), "canonical": sizes(512, 256, 2, 128)},
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
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
