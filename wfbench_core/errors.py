"""Errors that are the user's to fix: the CLI prints them as one line and exits non-zero."""

from __future__ import annotations

__all__ = ["CaseFailed", "NoGpuError", "WfbenchError"]


class WfbenchError(Exception):
    """A problem the user can act on; ``str()`` is the whole message, one line."""

    exit_code = 2


class CaseFailed(WfbenchError):
    """At least one case failed correctness; exit code 1, like a failing test."""

    exit_code = 1


class NoGpuError(WfbenchError):
    """No usable NVIDIA GPU or driver here."""

    exit_code = 3

    def with_hint(self, hint: str) -> NoGpuError:
        """The same error with where to go instead: a hint naming only what the command printing it offers."""
        return NoGpuError(f"{self}; {hint}")
