"""The environment of every program wfbench starts: its own, less every secret.

wfbench runs programs it does not vouch for: ``warpforthc`` (the compiler under test), nvcc, ptxas,
cuobjdump, Nsight Compute, compute-sanitizer, git in the WarpForth tree, and its own GPU worker, which runs
third-party case plugins. None of them needs a credential, so none gets one: a variable is dropped when its
name says it holds one (:func:`is_secret`), such as ``VAST_API_KEY`` (the Vast.ai transport reads it in this
process and sends it only in its own API calls), ``GITHUB_TOKEN`` or ``AWS_SECRET_ACCESS_KEY``, and so is
``SSH_AUTH_SOCK`` (the ssh agent's keys). Everything else (``PATH``, ``HOME``, ``CUDA_HOME``, ``LD_LIBRARY_PATH``
…) is passed on unchanged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["SECRET_NAMES", "child_env", "is_secret"]  # internal, not the plugin API

#: names that hold a credential: a whole word (between underscores) of these
_SECRET_WORD = re.compile(r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|AUTH)(_|$)",
                          re.IGNORECASE)
#: credentials by name, whatever their words
SECRET_NAMES = frozenset({"VAST_API_KEY", "SSH_AUTH_SOCK"})


def is_secret(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    return name.upper() in SECRET_NAMES or bool(_SECRET_WORD.search(name))


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its secrets, plus ``extra``: the ``env`` of every child process."""
    env = {name: value for name, value in os.environ.items() if not is_secret(name)}
    env.update(extra or {})
    return env
