"""The command line loads lazily: ``--help`` imports no command, ``list`` and ``transports`` no schema.

What each command loads is checked by module name in a fresh interpreter (no clock: CI machines are loaded).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import click
import pytest

from wfbench_core.cli import COMMANDS, main

#: what listing must never import: the result schema and the converter, numerics, GPU and SSH stacks, and what
#: only a run needs: importlib.metadata with its email parser (entry points are read without it), sockets,
#: signal handlers, XML
HEAVY = ("wfbench_core.record.results", "wfbench_core.stats", "cattrs", "numpy", "scipy", "numba", "cuda",
         "pynvml", "paramiko", "vastai", "hashlib", "importlib.metadata", "email", "socket", "signal", "xml")


def _modules(code: str, *args: str) -> list[str]:
    """The modules a fresh interpreter holds after ``code``."""
    code = (f"import sys, json\ntry:\n    {code}\nfinally:\n"
            "    sys.stdout.flush()\n    sys.stderr.write(json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1])  # type: ignore[no-any-return]


@functools.cache
def _click_alone() -> frozenset[str]:
    """What click itself loads (on Python 3.10, click's import of uuid brings subprocess and signal; wfbench
    cannot run without click): one interpreter for the module's tests."""
    return frozenset(_modules("import click"))


def _modules_after(*args: str) -> list[str]:
    """What wfbench loads for ``args`` beyond what click itself loads."""
    loaded = _modules("from wfbench_core.cli import main; main(sys.argv[1:], standalone_mode=False)", *args)
    return [m for m in loaded if m not in _click_alone()]


def _heavy(loaded: list[str]) -> list[str]:
    """The modules of :data:`HEAVY` that ``loaded`` holds, or any module of theirs."""
    return [m for m in HEAVY if m in loaded or any(x.startswith(m + ".") for x in loaded)]


def test_what_is_left_out_as_clicks_own_is_at_most_signal() -> None:
    """The tests below leave out what click loads by itself: none of HEAVY but signal (on Python 3.10), so they
    still catch every other heavy module."""
    assert set(_heavy(sorted(_click_alone()))) <= {"signal"}


def test_help_imports_no_command_module() -> None:
    loaded = _modules_after("--help")
    commands = sorted(m for m in loaded if m.startswith("wfbench_core.cli.") and m != "wfbench_core.cli.lazy")
    assert commands == []
    assert _heavy(loaded) == []


@pytest.mark.parametrize("command", ["list", "transports"])
def test_listing_loads_neither_schema_nor_numerics(command: str) -> None:
    loaded = _modules_after(command)
    assert f"wfbench_core.cli.{'cases' if command == 'list' else command}" in loaded  # it did run
    assert _heavy(loaded) == []


def test_table_matches_each_command() -> None:
    """Each entry names the command it loads, and its help line (read from the source) is that command's own."""
    ctx = click.Context(main)
    for name, entry in COMMANDS.items():
        command = main.load(name)
        assert command.name == name, entry
        assert command.help is not None and " ".join(command.help.split("\n\n")[0].split()) == entry.help, name
    assert sorted(main.list_commands(ctx)) == sorted(COMMANDS)


def test_help_lists_every_command_as_click_would() -> None:
    """The lazy listing prints what click prints once every command is loaded."""
    def commands_section(group: click.Group) -> str:
        formatter = click.HelpFormatter()
        group.format_commands(click.Context(group, info_name="wfbench"), formatter)
        return formatter.getvalue()

    loaded = click.Group("wfbench", commands=[main.load(n) for n in COMMANDS])
    lazy = commands_section(main)
    assert lazy.startswith("Commands:") and lazy == commands_section(loaded)


def test_reading_and_exporting_a_result_does_not_import_scipy_stats(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Loading a result recomputes its intervals (t quantiles) and export its geomean: both from numpy and
    scipy.special, never scipy.stats, whose import is most of such a command's start."""
    from pathlib import Path

    result = Path(__file__).parent / "fixtures" / "h200-suite1.json"
    loaded = _modules_after("export", str(result), "--format", "github-action-benchmark",
                            "-o", str(tmp_path / "gab.json"))
    assert "wfbench_core.cli.export" in loaded and json.loads((tmp_path / "gab.json").read_text())  # it did run
    assert [m for m in loaded if m == "scipy.stats" or m.startswith("scipy.stats.")] == []
