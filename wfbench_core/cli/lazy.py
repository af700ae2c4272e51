"""A click group whose commands are imported only when one of them runs (the lazy-group pattern).

``wfbench --help`` lists every command from the table without importing any command module: each help line
is the first paragraph of the command function's docstring, read from its source file (its one home), so
the listing costs nothing but click and a few file reads. A test checks it against the imported command.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any, NamedTuple

import click

__all__ = ["LazyCommand", "LazyGroup"]  # internal, not the plugin API


class LazyCommand(NamedTuple):
    """Where a command lives: its module and the click command's attribute there."""

    module: str
    attribute: str

    @property
    def help(self) -> str:
        """The first paragraph of the command function's docstring, read without importing its module."""
        return _docstring_head(self.module, self.attribute)


def _docstring_head(module: str, attribute: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"no module {module}")
    with open(spec.origin, encoding="utf-8") as fh:
        source = fh.read()
    start = source.find(f"\ndef {attribute}(")
    opening = source.find('"""', start)
    if start < 0 or opening < 0:
        raise LookupError(f"{module}.{attribute}: no command function with a docstring")
    doc = source[opening + 3: source.find('"""', opening + 3)]
    return " ".join(doc.strip().split("\n\n")[0].split())


class LazyGroup(click.Group):
    """A group whose subcommands are ``{name: LazyCommand}``, each imported on first use."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, LazyCommand] = {}, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            self.add_command(self.load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def load(self, cmd_name: str) -> click.Command:
        entry = self.lazy_commands[cmd_name]
        command = getattr(importlib.import_module(entry.module), entry.attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{entry.module}.{entry.attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the table: what click prints, without importing the commands."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in self.lazy_commands and name not in self.commands:
                stand_in = click.Command(name, help=self.lazy_commands[name].help)  # click shortens the line
                rows.append((name, stand_in.get_short_help_str(limit)))
            else:
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
