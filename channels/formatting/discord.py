"""Discord markdown: the model's markup passed through as Discord renders it (headings, lists, quotes, strike,
code, links); what would be misread in plain text (mentions, a stray ``#`` or ``>`` at a line start) escaped."""

from __future__ import annotations

import re
from collections.abc import Sequence

from channels.formatting.plain import RULE, plain_nodes, table_text
from channels.formatting.slack import BACKTICK_LOOKALIKE, BACKTICK_RUN, ZWSP
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

_DISCORD_URL = re.compile(r"https?://[^\s<]+[^<.,:;\"'\]\s]")
_DISCORD_INLINE = re.compile(r"[\\*_~|`]|<(?=[@#:/]|a:|t:)|@(?=everyone|here)")
# Quotes, headings and "-# " subtext; lists are left alone (they read the same either way).
_DISCORD_LINE_START = re.compile(r"^([ \t]*)(>|#|-(?=#))", re.MULTILINE)
_DISCORD_URL_UNSAFE = str.maketrans({" ": "%20", ">": "%3E"})


def to_discord_markdown(text: str) -> str:
    """-> Discord markdown: ``**bold**``, ``*italic*``, ```` `code` ````, ```` ```lang ```` blocks, links.

    Links render as ``[label](<url>)`` (no embed), or ``<url>`` when the label is the url.  Plain text is
    escaped where Discord would read markup (``* _ ~ | ` \\``, ``>``/``#`` at a line start, mention
    syntax), and ``@everyone``/``@here`` are neutralised with a zero-width space.  Adapters should still send
    with mentions disabled.
    """
    return _DiscordRenderer().render(parse(text))


class _DiscordRenderer:
    def __init__(self) -> None:
        self.out: list[str] = []

    def render(self, nodes: Sequence[Node]) -> str:
        for node in nodes:
            self._node(node)
        return "".join(self.out)

    def _at_line_start(self) -> bool:
        for piece in reversed(self.out):
            if piece:
                return piece.endswith("\n")
        return True

    def _node(self, node: Node) -> None:
        match node:
            case Text(text=t):
                self.out.append(_discord_escape(t, at_line_start=self._at_line_start()))
            case Bold(children=ch) | Italic(children=ch) | Strike(children=ch):
                marker = "**" if isinstance(node, Bold) else "~~" if isinstance(node, Strike) else "*"
                self.out.append(marker)
                self.render(ch)
                self.out.append(marker)
            case Heading(level=level, children=ch):
                # Discord renders #, ## and ###; deeper levels read as bold.
                self.out.append("#" * level + " " if level <= 3 else "**")
                self.render(ch)
                if level > 3:
                    self.out.append("**")
            case Item(depth=depth, marker=marker, children=ch):
                self.out.append("  " * depth + ("- " if marker == "•" else f"{marker} "))
                self.render(ch)
            case Quote(children=ch):
                self.out.append("> ")
                self.render(ch)
            case Table(rows=rows):
                body = BACKTICK_RUN.sub(lambda m: ZWSP.join(m[0]), table_text(rows))
                self.out.append(f"```\n{body}\n```")
            case Rule():
                self.out.append(RULE)
            case Code(text=t):
                if "`" not in t:
                    self.out.append(f"`{t}`")
                elif "``" not in t:
                    self.out.append(f"`` {t} ``")
                else:
                    self.out.append(f"`{t.replace('`', BACKTICK_LOOKALIKE)}`")
            case Link(children=ch, url=url):
                label = plain_nodes(ch)
                if not url.lower().startswith(("http://", "https://")):
                    self.out.append(_discord_escape(label if label == url else f"{label} ({url})", at_line_start=False))
                elif label == url:
                    self.out.append(f"<{url.translate(_DISCORD_URL_UNSAFE)}>")
                else:
                    self.out.append("[")
                    self.render(ch)
                    self.out.append(f"](<{url.translate(_DISCORD_URL_UNSAFE)}>)")
            case CodeBlock(text=t, lang=lang):
                if t:
                    body = BACKTICK_RUN.sub(lambda m: ZWSP.join(m[0]), t)
                    self.out.append(f"```{lang}\n{body}\n```")


def _discord_escape(text: str, *, at_line_start: bool) -> str:
    def escape_inline(part: str) -> str:
        return _DISCORD_INLINE.sub(lambda m: ZWSP + "@" if m[0] == "@" else "\\" + m[0], part)

    pieces: list[str] = []
    last = 0
    for url in _DISCORD_URL.finditer(text):
        pieces.append(escape_inline(text[last : url.start()]))
        pieces.append(url[0])
        last = url.end()
    pieces.append(escape_inline(text[last:]))
    escaped = "".join(pieces)
    lead = "" if at_line_start else "\0"
    return _DISCORD_LINE_START.sub(lambda m: m[1] + "\\" + m[2], lead + escaped).removeprefix(lead)
