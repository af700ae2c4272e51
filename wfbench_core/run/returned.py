"""What comes back from a GPU host, checked against what was sent to it.

A GPU host is not trusted to say what it ran: a rented machine, or one whose executor was replaced, can write
any result file. Everything a result says about *what* was benchmarked is known here already, from the bundle
and the request that were sent: the source (commit and repository), the compiler records, the cases and the
PTX of each. :func:`check_returned` compares the host's result with those, field by field, and refuses one
that disagrees with one line naming the field; a refused result is never written or stored. What only the
host can know (the GPU, the timings) is left to the executor's own checks and the plausibility gate.

``created`` orders the history (``ci_steps.py base-commit`` once took the newest run by it), so the host's
clock does not set it: it becomes the time, on this machine's clock, at which the bundle was sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from wfbench_core import SUITE_VERSION, __version__
from wfbench_core.case import CaseKey
from wfbench_core.compiling.bundle import BundleManifest, read_variants
from wfbench_core.errors import WfbenchError
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import SCHEMA_VERSION, CaseResult, RunResult

__all__ = ["ForgedResult", "check_returned", "expected_cases"]  # internal, not the plugin API


class ForgedResult(WfbenchError):
    """A result that disagrees with the bundle and request it answers."""


def expected_cases(variants: dict[str, BundleManifest], request: ExecuteRequest) -> dict[CaseKey, Any]:
    """``{case key: its bundle entry, or None for a case the bundle records as not built}``: what the
    executor reports for this request (its order is the bundle's)."""
    wanted = set(request.case_ids)
    keys: dict[CaseKey, Any] = {}
    for label, manifest in variants.items():
        for entry in manifest.cases:
            if not wanted or entry.id in wanted:
                keys[CaseKey(entry.id, label)] = entry
        for cid in manifest.failures:
            if not wanted or cid in wanted:
                keys[CaseKey(cid, label)] = None
    return keys


def check_returned(result: RunResult, bundle: Path, request: ExecuteRequest, *, where: str, sent_at: str,
                   partial: bool = False) -> RunResult:
    """``result`` when it answers ``request`` on ``bundle``, with ``created`` set to ``sent_at``; else
    :class:`ForgedResult`, one line ``WHERE: the result's FIELD … is not … sent; …``.

    ``partial``: the cases a broken-off run finished (a subset of the expected ones, ``complete`` false).
    """
    variants = {label: manifest for label, (manifest, _) in read_variants(Path(bundle)).items()}
    first = next(iter(variants.values()))

    def refuse(field: str, got: Any, sent: Any) -> ForgedResult:
        shown = repr(got) if len(repr(got)) <= 80 else repr(got)[:77] + "..."
        return ForgedResult(f"{where}: the result's {field} {shown} is not what was sent ({sent!r}); it was "
                            f"refused and not stored: run again, on another host if it repeats")

    top = (("schema_version", result.schema_version, SCHEMA_VERSION),
           ("suite_version", result.suite_version, SUITE_VERSION),
           ("wfbench_version", result.wfbench_version, __version__),
           ("mode", result.mode, request.mode),
           ("protocol", result.protocol, request.protocol),
           ("source", result.source, first.source),
           ("warpforthc", result.warpforthc, first.warpforthc),
           ("compilers", result.compilers, {label: m.warpforthc for label, m in variants.items() if label}))
    for field, got, sent in top:
        if got != sent:
            raise refuse(field, got, sent)
    expected = expected_cases(variants, request)
    seen: set[CaseKey] = set()
    for case in result.cases:
        if case.key in seen:
            raise refuse("cases", f"{case.key} twice", "each case once")
        seen.add(case.key)
        if case.key not in expected:
            raise refuse("cases", str(case.key), sorted(map(str, expected)))
        _check_case(case, expected[case.key], refuse)
    if not partial and seen != set(expected):
        missing = sorted(str(k) for k in expected if k not in seen)
        raise refuse("cases", f"{len(seen)} case(s), without {', '.join(missing)}", sorted(map(str, expected)))
    return attrs.evolve(result, created=sent_at)


def _check_case(case: CaseResult, entry: Any, refuse: Any) -> None:
    """One case against its bundle entry (None: a case the bundle records as not built)."""
    name = f"case {case.key}"
    if entry is None:
        if case.compile_wf is not None:
            raise refuse(f"{name} compile_wf", case.compile_wf.ptx_sha256, "no PTX: it did not compile here")
        return
    sent = entry.configs["canonical"].compile_wf
    for field, got, want in (("fingerprint", case.fingerprint, entry.fingerprint),
                             ("version", case.version, entry.version)):
        if got != want:
            raise refuse(f"{name} {field}", got, want)
    if case.compile_wf is not None and case.compile_wf != sent:
        field = "PTX hash" if case.compile_wf.ptx_sha256 != sent.ptx_sha256 else "compile record"
        raise refuse(f"{name} {field}", case.compile_wf.ptx_sha256, sent.ptx_sha256)
    if case.warpforth_source_sha256 not in ("", sent.source_sha256):
        raise refuse(f"{name} warpforth_source_sha256", case.warpforth_source_sha256, sent.source_sha256)
