"""``python -m wfbench_core ARGS`` with tests/tool_cache.py installed first, as the stand-in GPU's worker has it:
what ptxas, cuobjdump and nvcc print for the same PTX or source is read from the session's folder (named in
``tool_cache.ENV``) instead of running them again. Where that folder cannot be written by this process (a test
that drops its privileges) the tools run as usual.

    python tests/cached_cli.py explain CASE ...
"""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import tool_cache  # beside this script: the script's folder is first on sys.path

folder = os.environ.get(tool_cache.ENV)
if folder:
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)  # made by the first answer kept
    except OSError:
        pass
    if os.access(folder, os.W_OK | os.X_OK):
        tool_cache.install(setattr, Path(folder))
runpy.run_module("wfbench_core", run_name="__main__", alter_sys=True)
