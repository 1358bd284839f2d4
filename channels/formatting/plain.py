"""Plain text: the markup dropped (console, notifications)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from channels.formatting.tree import (
    Bold,
    Code,
    CodeBlock,
    Heading,
    Italic,
    Item,
    Link,
    Node,
    Quote,
    Rule,
    Strike,
    Table,
    Text,
    parse,
)

RULE = "────────"
"""A thematic break, drawn (no platform renders ``---``)."""

# ---------------------------------------------------------------- renderers


def plain_text(text: str) -> str:
    """The subset's markup removed (for notifications, previews, fallbacks)."""
    return plain_nodes(parse(text))


def plain_nodes(nodes: Sequence[Node]) -> str:
    out: list[str] = []
    for node in nodes:
        match node:
            case Text(text=t) | Code(text=t) | CodeBlock(text=t):
                out.append(t)
            case Bold(children=ch) | Italic(children=ch) | Strike(children=ch) | Heading(children=ch):
                out.append(plain_nodes(ch))
            case Item(depth=depth, marker=marker, children=ch):
                out.append(f"{indent(depth)}{marker} {plain_nodes(ch)}")
            case Quote(children=ch):
                out.append(f"│ {plain_nodes(ch)}")
            case Table(rows=rows):
                out.append(table_text(rows))
            case Rule():
                out.append(RULE)
            case Link(children=ch, url=url):
                label = plain_nodes(ch)
                out.append(label if label == url else f"{label} ({url})")
    return "".join(out)


def indent(depth: int) -> str:
    """A list item's indentation (two no-break spaces a level: platforms collapse ordinary leading spaces)."""
    return "\u00a0\u00a0" * depth


def table_text(rows: tuple[tuple[str, ...], ...]) -> str:
    """A table as aligned monospace text (wide CJK characters count two columns)."""
    columns = max(len(row) for row in rows)
    grid = [[*row, *([""] * (columns - len(row)))] for row in rows]
    widths = [max(_width(row[c]) for row in grid) for c in range(columns)]
    lines = [" | ".join(cell + " " * (widths[c] - _width(cell)) for c, cell in enumerate(row)).rstrip() for row in grid]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
