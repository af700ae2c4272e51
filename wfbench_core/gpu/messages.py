"""The messages between the executor and its GPU worker: typed records, one JSON line each.

The executor sends :class:`Init`, then one :class:`RunCase` per case (``wfbench sweep``: one :class:`RunPoint`
per size and timing mode), then :class:`Exit`. The worker answers
:class:`Ready` and :class:`Results` (or :class:`CaseError` for a case it could not check), and while it works
sends :class:`ProgressLine`, and :class:`Arm` / :class:`Disarm` around each wait on the GPU (the watchdog's
deadlines). :class:`Fatal` ends the whole run (no GPU, a broken installation).

Every message goes through the one converter (:func:`wfbench_core.record.results.converter`) as a tagged
union: ``{"kind": "RunCase", "case_id": "axpy_f64"}``. A line that is not one of these messages is refused.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import CaseResult, CompilerInfo, Environment, converter

if TYPE_CHECKING:
    import cattrs

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "TAG", "Arm", "CaseError", "Disarm", "Exit", "Fatal", "Init", "Message", "ProgressLine", "Ready", "Reply",
    "Request", "Results", "RunCase", "RunPoint", "decode", "encode", "fatal_error",
]

# -- executor -> worker ------------------------------------------------------------------------------


@attrs.frozen
class Init:
    """Read the GPU and toolchain; compile the CUDA side of ``prefetch`` ahead; measure the yardsticks if ``copy``,
    else judge cases by the first worker's (``copy_gbps``, ``fp64_peak_gflops``)."""

    bundle: str
    request: ExecuteRequest
    copy: bool = False
    prefetch: tuple[str, ...] = ()
    copy_gbps: float | None = None
    fp64_peak_gflops: float | None = None


@attrs.frozen
class RunCase:
    """Check and time one case."""

    case_id: str


@attrs.frozen
class RunPoint:
    """Check and time one size of a case's sweep (point ``index`` of the bundle's sweep of it) in ``timing_mode``."""

    case_id: str
    index: int
    timing_mode: str


@attrs.frozen
class Exit:
    """End the worker."""


# -- worker -> executor ------------------------------------------------------------------------------


@attrs.frozen
class Ready:
    """The answer to :class:`Init`."""

    environment: Environment
    cuda: CompilerInfo
    arch: str


@attrs.frozen
class Results:
    """The answer to :class:`RunCase`: one result per compiler label."""

    results: tuple[CaseResult, ...]


@attrs.frozen
class CaseError:
    """The case could not be checked; ``restart``: this worker is no longer to be trusted."""

    message: str
    restart: bool = False


@attrs.frozen
class Fatal:
    """A problem that ends the run, with the exit code the executor ends with."""

    message: str
    exit_code: int = 2


@attrs.frozen
class ProgressLine:
    line: str


@attrs.frozen
class Arm:
    """A wait on the GPU begins; it may take ``deadline_s`` before it counts as a hang."""

    deadline_s: float
    what: str


@attrs.frozen
class Disarm:
    """The wait ended: the quiet limit applies again."""


Request = Init | RunCase | RunPoint | Exit
Reply = Ready | Results | CaseError | Fatal | ProgressLine | Arm | Disarm
Message = Init | RunCase | RunPoint | Exit | Ready | Results | CaseError | Fatal | ProgressLine | Arm | Disarm
TAG = "kind"


@functools.lru_cache(maxsize=1)
def _converter() -> cattrs.Converter:
    """The one converter, taught the tagged union of these messages (once)."""
    from cattrs.strategies import configure_tagged_union

    conv = converter()
    configure_tagged_union(Message, conv, tag_name=TAG)
    return conv


def encode(message: Message) -> str:
    """One JSON line (with its newline)."""
    return json.dumps(_converter().unstructure(message, Message)) + "\n"


def decode(line: str | bytes) -> Message:
    """The message of one line; :class:`WfbenchError` for anything else."""
    try:
        message: Message = _converter().structure(json.loads(line), Message)  # type: ignore[arg-type]  # a union is no type[T]
        return message
    except Exception as exc:  # JSON and cattrs errors alike: the other side speaks another protocol
        text = line.decode(errors="replace") if isinstance(line, bytes) else line
        raise WfbenchError(f"not a worker message ({type(exc).__name__}): {text[:120]!r}; are both sides the same "
                           "wfbench version?") from None


def fatal_error(message: Fatal) -> WfbenchError:
    """The error a :class:`Fatal` message ends the run with (no GPU: :class:`NoGpuError`, its exit code 3)."""
    from wfbench_core.errors import NoGpuError

    cls = NoGpuError if message.exit_code == NoGpuError.exit_code else WfbenchError
    err = cls(message.message)
    err.exit_code = message.exit_code
    return err

