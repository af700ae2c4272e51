"""The Markdown pieces every report is made of: tables, code blocks, collapsible sections.

``compare``, ``explain``, the head-against-base explanation and the pull-request comment all write GitHub
Markdown through these functions, so a table or a code block looks the same wherever it appears.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["bullets", "cell", "code", "code_block", "details", "table"]  # internal, not the plugin API


def cell(text: str) -> str:
    """A table cell: pipes escaped, line breaks flattened (a cell is one line)."""
    return text.replace("|", "\\|").replace("\n", " ")


def code(text: str) -> str:
    """Inline code; text that holds a backtick is fenced with two."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def table(rows: Sequence[Sequence[str]], align: str = "l") -> list[str]:
    """A table: the first row is the header. ``align="r"`` right-aligns every column but the first."""
    head, *body = rows
    sep = ["---"] + [("---:" if align == "r" else "---")] * (len(head) - 1)
    return ["| " + " | ".join(head) + " |", "| " + " | ".join(sep) + " |"] + \
        ["| " + " | ".join(r) + " |" for r in body]


def code_block(lines: Iterable[str], lang: str = "") -> list[str]:
    return [f"```{lang}", *lines, "```"]


def details(summary: str, body: Sequence[str]) -> list[str]:
    """A collapsed section (``<details>``): the summary line shows, the body opens on a click."""
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>"]


def bullets(items: Iterable[str]) -> list[str]:
    return [f"- {item}" for item in items]
