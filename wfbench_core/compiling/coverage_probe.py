"""Which words a warpforthc binary accepts: one tiny kernel per word, compiled (never run).

A word is accepted when its kernel compiles. Most words need no context (the stack is only known at run
time, so ``1 2 3 WORD`` compiles whatever WORD does with it); control words, loop indices, definitions and
locals get the smallest kernel that uses them correctly. A word the binary does not know fails with
warpforthc's own message (``unknown word: …``), which is what the probe reports.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterable
from pathlib import Path

__all__ = ["HEADER", "SNIPPETS", "WORKERS", "probe", "probe_source"]  # internal, not the plugin API

HEADER = "\\! kernel probe\n\\! param A i64[4]\n"
_NEST3 = "4 0 DO 4 0 DO 4 0 DO {} LOOP LOOP LOOP"
_LOCALS = ": W { X Y -- } X Y + ; 1 2 W DROP"
SNIPPETS = {
    "<integer>": "42 DROP", "<float>": "1.5e3 DROP",
    "IF": "1 IF THEN", "THEN": "1 IF THEN", "ELSE": "1 IF ELSE THEN",
    "BEGIN": "BEGIN 1 UNTIL", "UNTIL": "BEGIN 1 UNTIL", "WHILE": "BEGIN 1 WHILE REPEAT",
    "REPEAT": "BEGIN 1 WHILE REPEAT",
    "DO": "4 0 DO LOOP", "LOOP": "4 0 DO LOOP", "+LOOP": "4 0 DO 1 +LOOP", "I": "4 0 DO I DROP LOOP",
    "J": _NEST3.format("J DROP"), "K": _NEST3.format("K DROP"), "LEAVE": "4 0 DO LEAVE LOOP",
    "UNLOOP": ": W 4 0 DO UNLOOP EXIT LOOP ; W", "EXIT": ": W EXIT ; W",
    ":": ": W 1 ; W DROP", ";": ": W 1 ; W DROP", "{": _LOCALS, "--": _LOCALS, "}": _LOCALS,
    "(": "( a comment ) 1 DROP",
}
WORKERS = 4


def probe_source(word: str) -> str:
    """The kernel that shows whether a warpforthc accepts ``word``."""
    return HEADER + SNIPPETS.get(word, f"1 2 3 {word}") + "\n"


def _verdict(word: str, binary: Path) -> str:
    from wfbench_core.compiling.compile import CompileError, compile_warpforth

    try:
        compile_warpforth(probe_source(word), binary=binary, case_id="probe")
    except CompileError as exc:
        errors = [ln for ln in exc.diagnostic.splitlines() if "error:" in ln]
        return errors[0].split("error:", 1)[1].strip() if errors else str(exc)
    return ""


def probe(binary: Path, words: Iterable[str]) -> dict[str, str]:
    """``{word: ""}`` for each word ``binary`` accepts, ``{word: its first error}`` for each it rejects."""
    words = list(dict.fromkeys(words))
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(words, pool.map(lambda w: _verdict(w, binary), words)))
