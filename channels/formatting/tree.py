"""The parsed document: node types, and the CommonMark parse (pulldown-cmark through pyromark) that builds it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pyromark

from channels.formatting.cjk import OPTIONS, cjk_emphasis

# ---------------------------------------------------------------- the tree


@dataclass(frozen=True, slots=True)
class Text:
    """Literal text."""

    text: str


@dataclass(frozen=True, slots=True)
class Bold:
    """``**bold**``."""

    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Italic:
    """``_italic_`` or ``*italic*``."""

    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Code:
    """An inline code span; its text is never interpreted."""

    text: str


@dataclass(frozen=True, slots=True)
class Link:
    """``[label](url)``; the label may hold emphasis and code, never another link."""

    children: tuple[Node, ...]
    url: str


@dataclass(frozen=True, slots=True)
class CodeBlock:
    """A fenced block (always at the top level), without its fences."""

    text: str
    lang: str = ""


@dataclass(frozen=True, slots=True)
class Strike:
    """``~~struck through~~``."""

    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Heading:
    """``## A heading`` (one line)."""

    level: int
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Item:
    """One line of a list: ``* item`` / ``- item`` (``marker`` ``•``) or ``3. item`` (``marker`` ``3.``);
    ``depth`` 0 at the margin, one more per two spaces of indentation."""

    depth: int
    marker: str
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Quote:
    """One line of a ``> quote`` (consecutive lines are consecutive quotes, ``Text("\n")`` between)."""

    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Table:
    """A pipe table: its rows of cells (plain text; the separator row dropped)."""

    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class Rule:
    """A thematic break (``---``)."""


Node = Text | Bold | Italic | Strike | Code | Link | CodeBlock | Heading | Item | Quote | Table | Rule
BLOCKS = (Heading, Item, Quote, Table, Rule, CodeBlock)


# ---------------------------------------------------------------- the parser

LANG = re.compile(r"[\w+#.-]+")
_INLINE = {"Emphasis": "i", "Strong": "b", "Strikethrough": "s"}


def parse(text: str) -> list[Node]:
    """Parse CommonMark (with GFM tables, strikethrough and task lists) into a flat list of nodes.

        Blocks become lines: headings, list items (nested ones deeper), quote lines, tables, rules and code
        blocks; paragraphs are their inline nodes.  Between blocks, ``Text("\n")`` or ``Text("\n\n")`` as the
        source had them.  HTML stays literal text.  Emphasis next to full-width punctuation is read as meant
    (:mod:`channels.formatting.cjk`).
    """
    return _Builder(cjk_emphasis(text)).build()


class _Builder:
    """pulldown-cmark events (through pyromark) -> the flat node list."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.source = text.encode()
        self.nodes: list[Node] = []
        self.stack: list[list[Node]] = []  # inline content: [the line, then one list per open span]
        self.spans: list[tuple[str, str]] = []  # open inline spans: (kind, url)
        self.line: tuple[str, int, str] | None = None  # the open line: (kind, level or depth, marker)
        self.next_line: tuple[str, int, str] | None = None  # what the next line opened becomes
        self.lists: list[int | None] = []  # open lists: the next number, or None for bullets
        self.quotes = 0
        self.code: list[str] | None = None
        self.lang = ""
        self.rows: list[tuple[str, ...]] | None = None
        self.cells: list[str] = []
        self.end = 0  # where (UTF-8 byte offset) the content emitted last ended

    def build(self) -> list[Node]:
        if not self.text.strip():
            return [Text(self.text)] if self.text else []
        for event, span in pyromark.events_with_range(self.text, options=OPTIONS):
            self._event(event, span["start"], span["end"])
        self._close_line()
        return _merge_text(self.nodes)

    # -- lines and separators

    def _separate(self, start: int) -> None:
        if self.nodes:
            breaks = self.source.count(b"\n", self.end, max(start, self.end))
            self.nodes.append(Text("\n\n" if breaks >= 2 else "\n"))

    def _open_line(self, start: int) -> None:
        if self.line is None:
            self._separate(start)
            self.line = self.next_line or (("quote", 0, "") if self.quotes else ("text", 0, ""))
            self.next_line = None
            self.stack = [[]]

    def _close_line(self) -> None:
        if self.line is None and self.next_line is not None and self.next_line[0] == "item":
            self._open_line(self.end)  # an empty item is still an item
        if self.line is None:
            return
        while self.spans:  # unclosed spans cannot happen in CommonMark; never lose their text
            self._end_span()
        children = _merge_text(self.stack[0])
        if children and isinstance(children[-1], Text) and children[-1].text.endswith("\n"):
            trimmed = children[-1].text.rstrip("\n")
            children[-1:] = [Text(trimmed)] if trimmed else []
        kind, number, marker = self.line
        if kind == "heading":
            self.nodes.append(Heading(number, tuple(children)))
        elif kind == "item":
            self.nodes.append(Item(number, marker, tuple(children)))
        elif kind == "quote":
            self.nodes.append(Quote(tuple(children)))
        else:
            self.nodes.extend(children)
        self.line = None
        self.stack = []

    def _block(self, node: Node, start: int) -> None:
        self._close_line()
        self._separate(start)
        self.nodes.append(node)

    def _inline(self, node: Node, start: int) -> None:
        if self.rows is None:
            self._open_line(start)
        self.stack[-1].append(node)

    # -- events

    def _event(self, event: object, start: int, end: int) -> None:
        if isinstance(event, str):  # SoftBreak, HardBreak, Rule
            if event == "Rule":
                self._block(Rule(), start)
            elif self.line is not None and self.line[0] == "quote" and not self.spans:
                self._close_line()  # a quote goes on line by line
            elif self.stack:
                self.stack[-1].append(Text("\n"))
        elif isinstance(event, dict):
            ((kind, value),) = event.items()
            if kind == "Start":
                self._start(value, start)
                return
            if kind == "End":
                self._end(value)
            elif kind == "Text" and self.code is not None:
                self.code.append(value)
            elif kind in ("Text", "Html", "InlineHtml", "InlineMath", "DisplayMath"):
                self._inline(Text(value), start)
            elif kind == "Code":
                self._inline(Code(value), start)
            elif kind == "TaskListMarker":
                self._inline(Text("☑ " if value else "☐ "), start)
            elif kind == "FootnoteReference":
                self._inline(Text(f"[{value}]"), start)
        while end > start and self.source[end - 1 : end].isspace():
            end -= 1
        self.end = max(self.end, end)

    def _start(self, tag: object, start: int) -> None:
        name, value = next(iter(tag.items())) if isinstance(tag, dict) else (tag, None)
        if name in _INLINE or name in ("Link", "Image"):
            if self.rows is None:
                self._open_line(start)
            url = value.get("dest_url", "") if isinstance(value, dict) else ""
            kind = _INLINE.get(name, name)
            if kind == "s" and self.source[start + 1 : start + 2] != b"~":
                kind = "~"  # one tilde is "about" (~5 minutes), not strikethrough
            self.spans.append((kind, url))
            self.stack.append([])
        elif name == "Heading":
            self._close_line()
            level = int(str(value.get("level", "H1"))[1:]) if isinstance(value, dict) else 1
            self.next_line = ("quote", 0, "") if self.quotes else ("heading", level, "")
        elif name == "List":
            self._close_line()
            self.lists.append(value if isinstance(value, int) else None)
        elif name == "Item":
            self._close_line()
            number = self.lists[-1] if self.lists else None
            marker = "•" if number is None else f"{number}."
            if number is not None:
                self.lists[-1] = number + 1
            depth = min(max(len(self.lists) - 1, 0), 8)
            self.next_line = ("item", depth, marker)
            if self.quotes:
                self.next_line = ("quote", 0, "")
                self._open_line(start)
                self.stack[0].append(Text("\u00a0\u00a0" * depth + marker + " "))
        elif name == "BlockQuote":
            self._close_line()
            self.quotes += 1
        elif name == "CodeBlock":
            self._close_line()
            self._separate(start)
            self.code = []
            info = value.get("Fenced", "") if isinstance(value, dict) else ""
            lang = LANG.match(info.strip())
            self.lang = lang[0] if lang else ""
        elif name == "Table":
            self._close_line()
            self._separate(start)
            self.rows = []
        elif name in ("TableHead", "TableRow"):
            self.cells = []
        elif name == "TableCell":
            self.stack = [[]]
        elif name in ("Paragraph", "HtmlBlock") and self.line is None and self.next_line is None and self.quotes:
            self.next_line = ("quote", 0, "")

    def _end(self, tag: object) -> None:
        name = next(iter(tag)) if isinstance(tag, dict) else tag
        if name in _INLINE or name in ("Link", "Image"):
            self._end_span()
        elif name in ("Paragraph", "Heading", "Item", "HtmlBlock"):
            self._close_line()
        elif name == "List":
            self._close_line()
            self.lists.pop()
        elif name == "BlockQuote":
            self._close_line()
            self.quotes -= 1
        elif name == "CodeBlock" and self.code is not None:
            body = "".join(self.code)
            self.nodes.append(CodeBlock(body[:-1] if body.endswith("\n") else body, self.lang))
            self.code = None
        elif name == "TableCell":
            self.cells.append(_flat(self.stack[0]).strip() if self.stack else "")
            self.stack = []
        elif name in ("TableHead", "TableRow") and self.rows is not None:
            self.rows.append(tuple(self.cells))
        elif name == "Table" and self.rows is not None:
            self.nodes.append(Table(tuple(self.rows)))
            self.rows = None

    def _end_span(self) -> None:
        kind, url = self.spans.pop()
        children = tuple(_merge_text(self.stack.pop()))
        node: Node
        if kind in ("Link", "Image") and any(k in ("Link", "Image") for k, _ in self.spans):
            self.stack[-1].extend(children)  # links do not nest: an image in a link label is its alt text
            return
        if kind in ("Link", "Image"):
            node = Link(children or (Text(url),), url)
        elif kind == "b":
            node = Bold(children)
        elif kind == "i":
            node = Italic(children)
        elif kind == "~":
            self.stack[-1].extend((Text("~"), *children, Text("~")))
            return
        else:
            node = Strike(children)
        self.stack[-1].append(node)


def _flat(nodes: Sequence[Node]) -> str:
    """The text of inline nodes (a table cell)."""
    out: list[str] = []
    for node in nodes:
        if isinstance(node, Text | Code):
            out.append(node.text)
        elif isinstance(node, Bold | Italic | Strike | Link):
            out.append(_flat(node.children))
    return "".join(out)


def _merge_text(nodes: Sequence[Node]) -> list[Node]:
    merged: list[Node] = []
    run: list[str] = []
    for node in nodes:
        if isinstance(node, Text):
            run.append(node.text)
            continue
        if "".join(run):
            merged.append(Text("".join(run)))
        run.clear()
        merged.append(node)
    if "".join(run):
        merged.append(Text("".join(run)))
    return merged
