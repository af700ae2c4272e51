"""Options and helpers shared by several commands."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import click

from wfbench_core.errors import WfbenchError

if TYPE_CHECKING:
    from wfbench_core.discover.registry import Registry


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
    return click.option(
        "--warpforthc", "warpforthc", metavar="[LABEL=]PATH", multiple=True,
        help="warpforthc binary (else $WFBENCH_WARPFORTHC, else PATH). Give it twice as base=PATH and "
             "head=PATH to time two compilers against the same CUDA samples in one interleaved run.",
    )(f)


def resolve_warpforthc(values: tuple[str, ...]) -> Path | dict[str, Path]:
    """One binary, or ``{label: binary}`` when several ``LABEL=PATH`` are given."""
    from wfbench_core.build.compile import find_warpforthc

    if len(values) <= 1:
        value = values[0] if values else None
        if value and "=" in value and not Path(value).exists():
            value = value.split("=", 1)[1]
        return find_warpforthc(value)
    out: dict[str, Path] = {}
    for v in values:
        label, sep, path = v.partition("=")
        if not sep or not label or not path:
            raise WfbenchError(f"--warpforthc {v!r}: with several compilers each needs a label, e.g. base=PATH")
        if label in out:
            raise WfbenchError(f"--warpforthc: label {label!r} given twice")
        out[label] = find_warpforthc(path)
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


def protocol_from(options: dict[str, Any]) -> Any:
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
    return f


def execute_request(case_ids: Any, options: dict[str, Any]) -> Any:
    """The :class:`ExecuteRequest` of the options made by :func:`execute_options` (removed from ``options``)."""
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import MODE_AA, MODE_PAIRED

    return ExecuteRequest(
        case_ids=tuple(case_ids), protocol=protocol_from(options),
        mode=MODE_AA if options.pop("aa") else MODE_PAIRED, cuda_compiler=options.pop("cuda_compiler"),
        case_timeout_s=options.pop("case_timeout"), repeat=options.pop("repeat"), sanitize=options.pop("sanitize"),
    )


def run_request(registry: Registry, case_ids: tuple[str, ...], priorities: tuple[str, ...],
                warpforthc: tuple[str, ...], *, execute: Any = None, commit: str | None = None,
                check_cuda: bool = True, transport: str = "local", transport_opts: tuple[str, ...] = ()) -> Any:
    """The :class:`RunRequest` of the command line: cases selected, compilers resolved, options parsed."""
    import attrs

    from wfbench_core.record.request import ExecuteRequest, RunRequest

    cases = registry.select(case_ids, priorities=priorities)
    binary = resolve_warpforthc(warpforthc)
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


def finish(result: Any, out: Path | None, as_json: bool) -> None:
    """Print the result (the file is already written); exit 1 when a case failed or could not run."""
    from wfbench_core.errors import CaseFailed
    from wfbench_core.review.report import render
    from wfbench_core.record.results import FAILING, dumps

    if as_json:
        click.echo(dumps(result), nl=False)
    else:
        click.echo(render(result))
        if out is not None:
            click.echo(f"result: {out}")
    bad = [c.id for c in result.cases if c.status in FAILING]
    if bad:
        raise CaseFailed(f"{len(bad)} case(s) failed or could not run: {', '.join(bad)}")
