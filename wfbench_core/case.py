"""The case model: one WarpForth kernel, its CUDA twin, and everything that defines the measurement.

A case is a frozen record. Its sources are templates (``string.Template``, ``${N}``) filled from the
case's named size parameters, because WarpForth arrays have fixed sizes in the kernel header. Each case
has two configurations: ``check`` (small, checked exhaustively) and ``canonical`` (the timed size).
A case may also declare a :class:`Sweep`: the sizes ``wfbench sweep`` times it over (a series of its own).

The **fingerprint** hashes everything that defines the measurement (rendered sources, sizes, geometry,
parameter types, tolerances, seed, work formulas and a digest of the generated inputs), so a changed case
can never pass as the same series.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BF16", "BUFFER_DTYPES", "CONFIGS", "F16", "F32", "F64", "F64_NO_FMA", "FLOP_TYPES", "PRIORITIES", "SCALAR_KINDS",
    "TENSOR_BF16", "TENSOR_F16", "TENSOR_F64", "TENSOR_FP8", "TENSOR_TF32", "TIMING_COLD_L2", "TIMING_EVENTS", "TIMING_GRAPH",
    "TIMING_MODES", "Arrays", "Case", "CaseKey", "Launch", "Param", "Sizes", "Sweep", "Tolerance", "Work",
    "powers_of_two", "resource_text", "resources_read", "sha256_text",
]

CONFIGS = ("check", "canonical")
F64, F64_NO_FMA, F32, F16, BF16 = "f64", "f64-no-fma", "f32", "f16", "bf16"
TENSOR_F64, TENSOR_TF32, TENSOR_F16, TENSOR_BF16, TENSOR_FP8 = (
    "tensor-f64", "tensor-tf32", "tensor-f16", "tensor-bf16", "tensor-fp8")
#: the arithmetic a case's FLOPs are (``Work.flop_type``, a ceiling's ``flop_type``), each judged against its own
#: peak (wfbench_core.record.yardsticks); "" derives it from the case's widest float dtype
FLOP_TYPES = (F64, F64_NO_FMA, F32, F16, BF16, TENSOR_F64, TENSOR_TF32, TENSOR_F16, TENSOR_BF16, TENSOR_FP8)
PRIORITIES = ("P0", "P1")
SCALAR_KINDS = {"i32": "int32", "i64": "int64", "f32": "float32", "f64": "float64"}  # kind -> numpy type
BUFFER_DTYPES = ("int8", "int16", "int32", "int64", "float16", "float32", "float64")
# how a sample is timed (the protocol's --timing-mode; a case may name the mode its kernels need)
TIMING_EVENTS = "events"
TIMING_GRAPH = "graph"
TIMING_COLD_L2 = "cold-l2"
TIMING_MODES = (TIMING_EVENTS, TIMING_GRAPH, TIMING_COLD_L2)


def _check_kind(instance: Any, attribute: Any, value: str) -> None:
    if value != "ptr" and value not in SCALAR_KINDS:
        raise ValueError(f"param kind must be 'ptr' or one of {sorted(SCALAR_KINDS)}, got {value!r}")


@attrs.frozen
class Param:
    """One kernel parameter, in signature order; both kernels take the same parameters.

    ``kind`` is ``ptr`` (a device buffer of ``dtype``) or a scalar kind (``i64``, ``f64`` …).
    ``output`` buffers are what the kernel writes and what correctness compares.
    """

    name: str
    kind: str = attrs.field(validator=_check_kind)
    dtype: str | None = None
    output: bool = False

    def __attrs_post_init__(self) -> None:
        if self.kind == "ptr" and self.dtype not in BUFFER_DTYPES:
            raise ValueError(f"buffer param {self.name!r} needs dtype in {BUFFER_DTYPES}, got {self.dtype!r}")
        if self.kind != "ptr" and self.output:
            raise ValueError(f"scalar param {self.name!r} cannot be an output")


def _dim3(value: Any) -> tuple[int, int, int]:
    dims = tuple(int(v) for v in (value if isinstance(value, (tuple, list)) else (value,)))
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise ValueError(f"launch dimensions must be 1 to 3 positive integers, got {value!r}")
    return dims[0], dims[1] if len(dims) > 1 else 1, dims[2] if len(dims) > 2 else 1


def _as_tuple(value: Any) -> tuple[Any, ...]:
    # a Python function, not the builtin: attrs reads a converter's signature, and a builtin's is parsed from
    # its text signature (the tokenizer's patterns compile on first use, ~10 ms that listing cases would pay)
    return tuple(value)


@attrs.frozen
class Launch:
    """Launch geometry: grid and block (x, y, z) and dynamic shared memory in bytes."""

    grid: tuple[int, int, int] = attrs.field(converter=_dim3)
    block: tuple[int, int, int] = attrs.field(converter=_dim3)
    shared_bytes: int = 0


@attrs.frozen
class Tolerance:
    """``|got - want| <= atol + rtol * |want|`` elementwise; ``why`` justifies it in one line."""

    rtol: float
    atol: float = 0.0
    why: str = ""


@attrs.frozen
class Work:
    """What the *operation* must do at least once (not what a kernel happens to do)."""

    bytes: int
    flops: int = 0
    # the arithmetic of those FLOPs, judged against its own peak (wfbench_core.gpu.plausibility.FLOP_TYPES:
    # "f64", "f64-no-fma", "f32", "f16", "bf16", "tensor-f64", "tensor-tf32", "tensor-f16" ...); "" for the
    # case's widest float dtype
    flop_type: str = ""


Sizes = Mapping[str, int]
Arrays = Mapping[str, Any]


def _sizes_tuple(value: Any) -> tuple[dict[str, int], ...]:
    return tuple(dict(v) for v in (value() if callable(value) else value))


@attrs.frozen
class Sweep:
    """The sizes ``wfbench sweep`` times a case over (the canonical configuration replaced by each in turn).

    :param sizes: size dicts (or a function returning them), each naming some of the case's size parameters;
        the rest come from the canonical sizes, then ``derive``. Declared sizes are not part of the case's
        fingerprint: a sweep is its own series, and each of its points is identified by its own sizes.
    :param derive: completes a size dict (e.g. the block count from ``N``); used for the declared sizes and for
        sizes given on the command line alike. None: the other parameters keep their canonical values.
    """

    sizes: tuple[dict[str, int], ...] = attrs.field(converter=_sizes_tuple, default=())
    derive: Callable[[dict[str, int]], Mapping[str, int]] | None = attrs.field(default=None, eq=False)


def powers_of_two(name: str, low: int, high: int, step: int = 1) -> tuple[dict[str, int], ...]:
    """``({name: 2**low}, {name: 2**(low + step)}, ...)`` up to ``2**high``: a sweep's sizes."""
    return tuple({name: 1 << k} for k in range(low, high + 1, step))


@attrs.frozen(order=True)
class CaseKey:
    """Which case, built by which WarpForth compiler, at which configuration: the one identity of a case.

    Printed one way, everywhere (messages, compile file names, bundle failures): ``axpy_f64``,
    ``axpy_f64[check]``, ``axpy_f64 (head)``, ``axpy_f64[check] (head)``. Nothing parses that text: code
    keeps the key.

    :param compiler: the compiler label of a base/head run (``base``, ``head``); ``""`` with one compiler.
    :param config: ``check`` or ``canonical``; ``""`` for the case as a whole.
    """

    case_id: str
    compiler: str = ""
    config: str = ""

    def __str__(self) -> str:
        text = f"{self.case_id}[{self.config}]" if self.config else self.case_id
        return f"{text} ({self.compiler})" if self.compiler else text

    def at(self, config: str) -> CaseKey:
        """The same case and compiler at ``config``."""
        return attrs.evolve(self, config=config)


@attrs.frozen(kw_only=True)
class Case:
    """A benchmark case: a WarpForth kernel and its hand-written CUDA equivalent.

    :param id: stable ID, ``[a-z0-9_]+``; never reused for a different measurement.
    :param version: bumped on any change of algorithm, geometry, dtype, size, tolerance or source.
    :param priority: ``P0`` (in the headline suite) or ``P1``.
    :param warpforth: WarpForth source template (``${NAME}`` placeholders filled from the sizes).
    :param cuda: CUDA C++ source template, filled the same way.
    :param wf_kernel: kernel entry name in the WarpForth PTX (``\\! kernel NAME``).
    :param cuda_kernel: ``extern "C" __global__`` name in the CUDA source.
    :param params: kernel parameters in signature order (the same ABI for both kernels).
    :param sizes: ``{"check": {...}, "canonical": {...}}`` named integer size parameters.
    :param launch: sizes -> :class:`Launch`.
    :param inputs: (sizes, numpy Generator) -> values for every non-output parameter.
    :param reference: (inputs, sizes) -> expected array for every output parameter (numpy).
    :param tolerances: per output parameter.
    :param work: sizes -> :class:`Work` of the operation.
    :param metric: ``bandwidth`` (GB/s is the headline) or ``compute`` (GFLOP/s).
    :param seed: seed of the input generator.
    :param notes: fairness and numerical-contract notes shown with the case.
    :param timing_mode: the timing mode this case is always timed in, whatever the run's ``--timing-mode``
        (``graph`` for kernels of a few microseconds, whose back-to-back launches would time the host's
        launch rate); ``""`` takes the run's. Part of the fingerprint when set.
    :param sweep: the sizes ``wfbench sweep`` times the case over (:class:`Sweep`); None: only given ones.
        Not part of the fingerprint.
    """

    id: str
    version: int
    priority: str = attrs.field(validator=attrs.validators.in_(PRIORITIES))
    summary: str
    warpforth: str
    cuda: str
    wf_kernel: str
    cuda_kernel: str
    params: tuple[Param, ...] = attrs.field(converter=_as_tuple)
    sizes: Mapping[str, Mapping[str, int]]
    launch: Callable[[Sizes], Launch] = attrs.field(eq=False, hash=False)
    inputs: Callable[[Sizes, np.random.Generator], Arrays] = attrs.field(eq=False, hash=False)
    reference: Callable[[Arrays, Sizes], Arrays] = attrs.field(eq=False, hash=False)
    tolerances: Mapping[str, Tolerance]
    work: Callable[[Sizes], Work] = attrs.field(eq=False, hash=False)
    metric: str = attrs.field(default="bandwidth", validator=attrs.validators.in_(("bandwidth", "compute")))
    seed: int = 0
    notes: str = ""
    timing_mode: str = attrs.field(default="", validator=attrs.validators.in_(("",) + TIMING_MODES))
    sweep: Sweep | None = attrs.field(default=None, eq=False, hash=False)

    def __attrs_post_init__(self) -> None:
        if not self.id or not all(c.isalnum() or c == "_" for c in self.id) or self.id != self.id.lower():
            raise ValueError(f"case id must be lower-case letters, digits and '_', got {self.id!r}")
        if self.version < 1:
            raise ValueError(f"case {self.id}: version must be >= 1")
        missing = [c for c in CONFIGS if c not in self.sizes]
        if missing:
            raise ValueError(f"case {self.id}: sizes lack configuration(s) {missing}")
        outputs = {p.name for p in self.params if p.output}
        if not outputs:
            raise ValueError(f"case {self.id}: no output parameter")
        if set(self.tolerances) != outputs:
            raise ValueError(f"case {self.id}: tolerances must name exactly the outputs {sorted(outputs)}")
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"case {self.id}: duplicate parameter names")

    # -- derived ----------------------------------------------------------------------------------

    @property
    def outputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.output)

    def key(self, config: str = "", compiler: str = "") -> CaseKey:
        """This case's identity at ``config`` (and ``compiler``)."""
        return CaseKey(self.id, compiler, config)

    def render(self, config: str) -> tuple[str, str]:
        """Return the (WarpForth, CUDA) sources for a configuration, with the sizes filled in."""
        from string import Template  # here: its pattern compiles on import, and listing cases renders nothing

        sizes = {k: str(v) for k, v in self.sizes[config].items()}
        try:
            return (
                Template(self.warpforth).substitute(sizes),
                Template(self.cuda).substitute(sizes),
            )
        except (KeyError, ValueError) as exc:
            raise ValueError(f"case {self.id}: source template needs size parameter {exc}") from None

    def sweep_point(self, given: Sizes) -> dict[str, int]:
        """The full sizes of one sweep point: the canonical sizes, ``given`` over them, then the sweep's
        ``derive``. A parameter the case does not have, or a value that is not a positive integer, is a
        ValueError naming the case."""
        canonical = dict(self.sizes["canonical"])
        unknown = sorted(set(given) - set(canonical))
        if unknown:
            raise ValueError(f"case {self.id}: no size parameter {', '.join(unknown)}; it has "
                             f"{', '.join(sorted(canonical))}")
        point = {**canonical, **{k: int(v) for k, v in given.items()}}
        if self.sweep is not None and self.sweep.derive is not None:
            point = {**point, **dict(self.sweep.derive(dict(point)))}
        bad = sorted(k for k, v in point.items() if k not in canonical or isinstance(v, bool) or
                     not isinstance(v, int) or v < 1)
        if bad:
            raise ValueError(f"case {self.id}: sweep size {', '.join(f'{k}={point[k]!r}' for k in bad)} is not a "
                             f"positive integer size parameter of the case")
        return point

    def sweep_points(self, given: Any = None) -> list[dict[str, int]]:
        """The sizes of a sweep, in order and without repeats: ``given`` (size dicts), else the declared ones.
        A case that declares none and is given none is a ValueError saying what to do."""
        sizes = list(given) if given else list(self.sweep.sizes if self.sweep is not None else ())
        if not sizes:
            raise ValueError(f"case {self.id} declares no sweep sizes; give them (--size, --range)")
        out: list[dict[str, int]] = []
        for s in sizes:
            point = self.sweep_point(s)
            if point not in out:
                out.append(point)
        return out

    def at_sizes(self, sizes: Sizes) -> Case:
        """This case with its canonical configuration at ``sizes`` (a sweep point); ``check`` is unchanged, so
        correctness is checked at the case's check size and then at ``sizes``."""
        return attrs.evolve(self, sizes={"check": dict(self.sizes["check"]), "canonical": dict(sizes)})

    def make_inputs(self, config: str) -> dict[str, Any]:
        """Generate the inputs of a configuration deterministically from the case's seed."""
        import numpy as np

        rng = np.random.Generator(np.random.PCG64(self.seed))
        values = dict(self.inputs(self.sizes[config], rng))
        expected = {p.name for p in self.params if not p.output}
        if set(values) != expected:
            raise ValueError(
                f"case {self.id}: inputs() must return exactly {sorted(expected)}, got {sorted(values)}"
            )
        for p in self.params:
            if p.output:
                continue
            if p.kind == "ptr":
                values[p.name] = np.ascontiguousarray(values[p.name], dtype=p.dtype)
            else:
                values[p.name] = getattr(np, SCALAR_KINDS[p.kind])(values[p.name])
        return values

    def make_reference(self, inputs: Arrays, config: str) -> dict[str, np.ndarray]:
        """Compute the expected outputs with the case's numpy reference."""
        import numpy as np

        out = dict(self.reference(inputs, self.sizes[config]))
        if set(out) != {p.name for p in self.outputs}:
            raise ValueError(f"case {self.id}: reference() must return exactly the outputs")
        return {p.name: np.ascontiguousarray(out[p.name], dtype=p.dtype) for p in self.outputs}

    def describe(self) -> dict[str, Any]:
        """Everything that defines the measurement, as plain JSON-able data (the fingerprint's input)."""
        configs = {}
        for config in CONFIGS:
            wf, cu = self.render(config)
            launch = self.launch(self.sizes[config])
            work = self.work(self.sizes[config])
            configs[config] = {
                "sizes": dict(sorted(self.sizes[config].items())),
                "warpforth_sha256": sha256_text(wf),
                "cuda_sha256": sha256_text(cu),
                "grid": list(launch.grid),
                "block": list(launch.block),
                "shared_bytes": launch.shared_bytes,
                "work": {"bytes": work.bytes, "flops": work.flops},
            }
        import hashlib

        import numpy as np

        check_inputs = self.make_inputs("check")
        digest = hashlib.sha256()
        for name in sorted(check_inputs):
            digest.update(name.encode())
            digest.update(np.asarray(check_inputs[name]).tobytes())
        described = {
            "id": self.id,
            "version": self.version,
            "wf_kernel": self.wf_kernel,
            "cuda_kernel": self.cuda_kernel,
            "params": [attrs.asdict(p) for p in self.params],
            "tolerances": {k: [v.rtol, v.atol] for k, v in sorted(self.tolerances.items())},
            "seed": self.seed,
            "configs": configs,
            "check_inputs_sha256": digest.hexdigest(),
        }
        if self.timing_mode:  # only when set: the cases that take the run's mode keep their fingerprints
            described["timing_mode"] = self.timing_mode
        return described

    def fingerprint(self) -> str:
        """SHA-256 over everything that defines the measurement (computed once per case and process)."""
        known = _FINGERPRINTS.get(id(self))
        if known is None:
            import json

            known = _FINGERPRINTS[id(self)] = sha256_text(json.dumps(self.describe(), sort_keys=True,
                                                                     separators=(",", ":")))
            weakref.finalize(self, _FINGERPRINTS.pop, id(self), None)
        return known

    def cuda_source_sha256(self) -> str:
        """Hash of the canonical CUDA baseline source: part of every series key."""
        return sha256_text(self.render("canonical")[1])


#: fingerprints already computed: rendering sources and generating check inputs is not free
#: (keyed by id(); an entry leaves with its case)
_FINGERPRINTS: dict[int, str] = {}


def sha256_text(text: str | bytes) -> str:
    import hashlib  # here: listing the installed cases needs no hashing

    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


_RESOURCES: dict[str, set[str]] = {}  # package -> kernel files its cases read (checked before a package is shipped)


def resource_text(package: str, name: str) -> str:
    """Read a kernel file shipped beside a case module (``resource_text(__name__, "x.cu")``).

    A file that is not installed is one clear error: the package did not declare it as package data.
    """
    from importlib.resources import files

    _RESOURCES.setdefault(package, set()).add(name)
    try:
        return files(package).joinpath(name).read_text()
    except FileNotFoundError:
        raise FileNotFoundError(f"{package}: kernel file {name} is not installed beside the module; declare the "
                                f"kernel files as package data ([tool.setuptools.package-data]) and reinstall") \
            from None


def resources_read() -> dict[str, frozenset[str]]:
    """The kernel files read through :func:`resource_text` so far, by package."""
    return {package: frozenset(names) for package, names in _RESOURCES.items()}
