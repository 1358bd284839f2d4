"""Plain text: the markup dropped (console, notifications)."""

from __future__ import annotations

from collections.abc import Sequence

from channels.formatting.tree import Bold, Code, CodeBlock, Italic, Link, Node, Text, parse

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
            case Bold(children=ch) | Italic(children=ch):
                out.append(plain_nodes(ch))
            case Link(children=ch, url=url):
                label = plain_nodes(ch)
                out.append(label if label == url else f"{label} ({url})")
    return "".join(out)
