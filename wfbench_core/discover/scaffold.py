"""``wfbench new-case NAME``: a case plugin package that installs as a wheel with its kernels.

The package is the smallest complete case: the case module, both kernel files (declared as package
data, so a wheel carries them), the ``wfbench`` entry point, and a test that runs
:func:`wfbench_core.testing.check_case`. It works as written (``y = a*x`` over float64); its author then
edits the kernels, the reference and the sizes.
"""

from __future__ import annotations

import re
from pathlib import Path

from wfbench_core.errors import WfbenchError
from wfbench_core.record.fsutil import atomic_write

__all__ = ["CUDA", "FORTH", "MODULE", "PYPROJECT", "README", "TEST", "new_case"]  # internal, not the plugin API

_NAME = re.compile(r"[a-z][a-z0-9_]*")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "@DIST@"
version = "0.1.0"
description = "wfbench case @NAME@: a WarpForth kernel and its hand-written CUDA twin"
requires-python = ">=3.10"
dependencies = ["wfbench"]

# wfbench finds the case through this entry point (group "wfbench"), like its own built-in cases.
[project.entry-points.wfbench]
@NAME@ = "@PACKAGE@"

[tool.setuptools]
packages = ["@PACKAGE@"]

# The kernel files are package data: without this a wheel (and so a GPU host) would not have them.
[tool.setuptools.package-data]
@PACKAGE@ = ["*.forth", "*.cu"]
"""

MODULE = '''\
"""@NAME@: y = a*x over float64 (the scaffold's starting point: edit both kernels, the reference and the sizes).

Fairness: both kernels take (a, x, y, n), run the same grid-stride loop and launch, and round the one
multiply the same way (WarpForth emits mul.rn; the CUDA side is built with -fmad=false).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Tolerance, Work, resource_text

if TYPE_CHECKING:
    import numpy as np


def _launch(s: Sizes) -> Launch:
    return Launch(grid=s["blocks"], block=256)


def _inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    return {"A": 1.5, "X": rng.standard_normal(s["N"]), "N": s["N"]}


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    return {"Y": inp["A"] * inp["X"]}


CASE = Case(
    id="@NAME@",
    version=1,
    priority="P1",
    summary="y = a*x over float64",
    warpforth=resource_text(__name__, "@NAME@.forth"),  # ${N} placeholders are filled from the sizes
    cuda=resource_text(__name__, "@NAME@.cu"),
    wf_kernel="@NAME@",
    cuda_kernel="@NAME@",
    params=(Param("A", "f64"), Param("X", "ptr", "float64"), Param("Y", "ptr", "float64", output=True),
            Param("N", "i64")),
    sizes={"check": {"N": 100_003, "blocks": 40}, "canonical": {"N": 1 << 24, "blocks": 4096}},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"Y": Tolerance(1e-15, 0.0, "one rounded multiply matches numpy bit for bit")},
    work=lambda s: Work(bytes=16 * s["N"], flops=s["N"]),  # read x, write y; one multiply per element
    metric="bandwidth",
    seed=1,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
'''

FORTH = r"""\ y[i] = a * x[i], grid-stride loop.
\! kernel @NAME@
\! param A f64
\! param X f64[${N}]
\! param Y f64[${N}]
\! param N i64
GLOBAL-ID
BEGIN DUP N < WHILE
  DUP CELLS X + F@ A F*
  OVER CELLS Y + F!
  GDIM-X BDIM-X * +
REPEAT
DROP
"""

CUDA = """\
// y[i] = a * x[i], grid-stride loop: the WarpForth kernel's loop and launch. Built with -fmad=false.
extern "C" __global__ void @NAME@(double a, const double* __restrict__ x, double* __restrict__ y, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * x[i];
    }
}
"""

TEST = '''\
"""The case is well formed (no GPU needed; the CUDA side is compiled when nvcc is installed)."""

from wfbench_core.testing import check_case

from @PACKAGE@ import CASE


def test_the_case_is_well_formed() -> None:
    check_case(CASE)
'''

README = """\
# @DIST@

A wfbench case plugin: `@NAME@`, a WarpForth kernel (`@PACKAGE@/@NAME@.forth`) and its CUDA twin
(`@PACKAGE@/@NAME@.cu`), registered through the `wfbench` entry-point group.

```bash
pip install .              # a wheel with both kernel files (package data in pyproject.toml)
wfbench list               # @NAME@, plugin @DIST@
pytest tests               # check_case: sources, inputs, reference, the CUDA side through nvcc
wfbench run -c @NAME@      # on a GPU
```
"""


def new_case(name: str, parent: Path) -> Path:
    """Write the package ``wfbench-<name>`` under ``parent``; its folder."""
    if not _NAME.fullmatch(name):
        raise WfbenchError(f"new-case {name!r}: a case ID is lower-case letters, digits and '_', starting with a "
                           f"letter (it names the kernels too)")
    dist = "wfbench-" + name.replace("_", "-")
    package = "wfbench_" + name
    root = Path(parent) / dist
    if root.exists():
        raise WfbenchError(f"new-case {name}: {root} already exists; choose another name or folder (--dir)")
    files = {"pyproject.toml": PYPROJECT, "README.md": README, f"{package}/__init__.py": MODULE,
             f"{package}/{name}.forth": FORTH, f"{package}/{name}.cu": CUDA, f"tests/test_{name}.py": TEST}
    for rel, text in files.items():
        path = root / rel
        atomic_write(path, text.replace("@NAME@", name).replace("@PACKAGE@", package).replace("@DIST@", dist))
    return root
