"""Options and helpers shared by several commands."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from wfbench_core.errors import WfbenchError

if TYPE_CHECKING:
    from wfbench_core.discover.registry import Registry
    from wfbench_core.record.request import ExecuteRequest, RunRequest
    from wfbench_core.record.results import RunResult, TimingProtocol

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "case_options", "check_cuda_option", "execute_options", "execute_request", "finish", "load_registry",
    "progress_printer", "protocol_from", "protocol_options", "resolve_warpforthc", "run_request", "split_opt",
    "warpforthc_option",
]


def load_registry() -> Registry:
    from wfbench_core.discover.registry import Registry

    return Registry.load()


def case_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--priority", "priorities", multiple=True, type=click.Choice(["P0", "P1"]),
                     help="Only cases of this priority (repeatable); default: all.")(f)
    f = click.option("--case", "-c", "case_ids", multiple=True, metavar="ID",
                     help="Case to include (repeatable); default: every installed case.")(f)
    return f


def warpforthc_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--warpforthc`` (a binary) and ``--warpforth`` (a source tree wfbench builds it from)."""
    f = click.option(
        "--warpforth", "warpforth", metavar="[LABEL=]PATH|URL[@REF]|REF", multiple=True,
        help="Build warpforthc from WarpForth source with WarpForth's recipe (cmake, ninja, MLIR), cached by "
             "commit and toolchain: a checkout's working tree (PATH), a ref of it (PATH@REF, or REF of the "
             "checkout here), or a repository URL[@REF]. Twice, base=REF and head=PATH, for one base/head run.",
    )(f)
    return click.option(
        "--warpforthc", "warpforthc", metavar="[LABEL=]PATH", multiple=True,
        help="warpforthc binary (else $WFBENCH_WARPFORTHC, else PATH). Give it twice as base=PATH and "
             "head=PATH to time two compilers against the same CUDA samples in one interleaved run.",
    )(f)


def _labelled(values: tuple[str, ...], option: str, several: bool) -> list[tuple[str, str]]:
    out = []
    for v in values:
        label, sep, path = v.partition("=")
        if not several:
            out.append(("", path if sep and not Path(v).exists() else v))
        elif not sep or not label or not path:
            raise WfbenchError(f"{option} {v!r}: with several compilers each needs a label, e.g. base=PATH")
        else:
            out.append((label, path))
    return out


def resolve_warpforthc(values: tuple[str, ...], warpforth: tuple[str, ...] = (),
                       progress: Callable[[str], None] = lambda msg: None) -> Path | dict[str, Path]:
    """One binary, or ``{label: binary}`` when several ``LABEL=…`` are given; ``--warpforth`` builds them."""
    from wfbench_core.compiling.compile import find_warpforthc

    several = len(values) + len(warpforth) > 1
    out: dict[str, Path] = {}
    for label, path in _labelled(values, "--warpforthc", several):
        if label in out:
            raise WfbenchError(f"--warpforthc: label {label!r} given twice")
        out[label] = find_warpforthc(path or None)
    if warpforth:
        from wfbench_core.compiling.warpforth_build import build_all

        for label, built in build_all(warpforth, progress=progress).items():
            if label in out:
                raise WfbenchError(f"label {label!r} given to both --warpforthc and --warpforth")
            out[label] = built.binary
    if not several:
        return out[""] if out else find_warpforthc(None)
    return out


def progress_printer(quiet: bool) -> Callable[[str], None]:
    if quiet:
        return lambda msg: None
    return functools.partial(click.echo, err=True)


def check_cuda_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--check-cuda/--no-check-cuda", default=True, show_default=True,
                        help="Also compile the CUDA side here when nvcc is installed, to fail before shipping "
                             "the bundle (the GPU host compiles it again for its own GPU).")(f)




def protocol_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """One option per timing-protocol setting, made from the fields of :class:`TimingProtocol` (their one home)."""
    import attrs

    from wfbench_core.record.results import TimingProtocol

    for field in reversed(attrs.fields(TimingProtocol)):
        meta = field.metadata
        if not meta.get("flag"):
            continue
        if meta.get("choices"):
            kind: Any = click.Choice(meta["choices"])
        elif field.type in (int, "int"):
            kind = click.IntRange(meta["low"], meta["high"])
        else:
            kind = click.FloatRange(meta["low"], meta["high"])
        f = click.option(meta["flag"], "protocol_" + field.name, type=kind, default=field.default,
                         show_default=True, help=meta["help"])(f)
    return f


def protocol_from(options: dict[str, Any]) -> TimingProtocol:
    """The :class:`TimingProtocol` of the ``protocol_*`` options (removed from ``options``)."""
    from wfbench_core.record.results import TimingProtocol

    values = {k[len("protocol_"):]: options.pop(k) for k in list(options) if k.startswith("protocol_")}
    return TimingProtocol(**values)


def execute_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """What the GPU host is asked to do, shared by ``run`` and ``execute``."""
    f = protocol_options(f)
    f = click.option("--aa", is_flag=True, help="A/A: time the CUDA PTX against itself (the method's floor).")(f)
    f = click.option("--case-timeout", type=click.FloatRange(1), default=None, metavar="S",
                     help="Deadline of every wait on the GPU; a case that misses it is killed and reported as a "
                          "hang [default: max(10 s, 50 x the expected time)].")(f)
    f = click.option("--sanitize", is_flag=True,
                     help="Launch each side's check configuration once under compute-sanitizer (memcheck, plus "
                          "racecheck with shared memory) first; a finding fails the case.")(f)
    f = click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True,
                     help="Run every case in K fresh processes; the table shows the spread of the gap.")(f)
    f = click.option("--cuda-compiler", type=click.Choice(["auto", "nvcc", "nvrtc"]), default="auto",
                     show_default=True)(f)
    f = click.option("--ceiling", is_flag=True,
                     help="Also time each case's library ceiling (cuBLAS, CUB; pip install 'wfbench[ceiling]' on the "
                          "GPU host) in the same rounds, and show 'WarpForth time / ceiling time' in the table. Never "
                          "part of the gap (docs/ceiling.md).")(f)
    return f


def execute_request(case_ids: Iterable[str], options: dict[str, Any]) -> ExecuteRequest:
    """The :class:`ExecuteRequest` of the options made by :func:`execute_options` (removed from ``options``)."""
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import MODE_AA, MODE_PAIRED

    return ExecuteRequest(
        case_ids=tuple(case_ids), protocol=protocol_from(options),
        mode=MODE_AA if options.pop("aa") else MODE_PAIRED, cuda_compiler=options.pop("cuda_compiler"),
        case_timeout_s=options.pop("case_timeout"), repeat=options.pop("repeat"), sanitize=options.pop("sanitize"),
        ceiling=options.pop("ceiling"),
    )


def run_request(registry: Registry, case_ids: tuple[str, ...], priorities: tuple[str, ...],
                warpforthc: tuple[str, ...], *, warpforth: tuple[str, ...] = (), execute: ExecuteRequest | None = None,
                commit: str | None = None, check_cuda: bool = True, transport: str = "local",
                transport_opts: tuple[str, ...] = (), progress: Callable[[str], None] = lambda msg: None) -> RunRequest:
    """The :class:`RunRequest` of the command line: cases selected, compilers resolved (or built), options
    parsed. Cases are selected first, so a bad case name costs no compiler build."""
    import attrs

    from wfbench_core.record.request import ExecuteRequest, RunRequest

    cases = registry.select(case_ids, priorities=priorities)
    binary = resolve_warpforthc(warpforthc, warpforth, progress)
    compilers = {"": binary} if isinstance(binary, Path) else binary
    execute = execute or ExecuteRequest()
    return RunRequest(cases=registry.refs(cases), execute=attrs.evolve(execute, case_ids=tuple(c.id for c in cases)),
                      compilers=compilers, transport=transport,
                      transport_options=dict(split_opt(o) for o in transport_opts), commit=commit,
                      check_cuda=check_cuda)


def split_opt(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of ``--transport-opt`` (``-`` in keys becomes ``_``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise click.BadParameter(f"expected KEY=VALUE, got {text!r}", param_hint="--transport-opt")
    return key.strip().replace("-", "_"), value


def finish(result: RunResult, out: Path | None, as_json: bool, *, ceiling: bool = False) -> None:
    """Print the result (the file is already written); exit 1 when a case failed or could not run."""
    from wfbench_core.errors import CaseFailed
    from wfbench_core.record.results import FAILING, dumps
    from wfbench_core.review.report import render

    if as_json:
        click.echo(dumps(result), nl=False)
    else:
        click.echo(render(result, ceiling=ceiling))
        if out is not None:
            click.echo(f"result: {out}")
    bad = [c.id for c in result.cases if c.status in FAILING]
    if bad:
        raise CaseFailed(f"{len(bad)} case(s) failed or could not run: {', '.join(bad)}")
