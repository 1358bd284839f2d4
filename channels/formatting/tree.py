"""The parsed document: node types and the Markdown-subset parser (anything that does not parse stays text)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

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

_FENCE_OPEN = re.compile(r"( {0,3})(`{3,})([^`]*)")
LANG = re.compile(r"[\w+#.-]+")
_PARAGRAPH_BREAK = re.compile(r"(\n[ \t]*\n)")


def parse(text: str) -> list[Node]:
    """Parse the markdown subset into a flat list of nodes (code blocks at the top level only)."""
    nodes: list[Node] = []
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    segment_start = 0
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.fullmatch(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, info = len(opening[1]), opening[2], opening[3].strip()
        closing = re.compile(rf" {{0,3}}`{{{len(fence)},}}[ \t]*")
        j = i + 1
        while j < len(lines) and not closing.fullmatch(lines[j]):
            j += 1
        # Like CommonMark, an unclosed fence runs to the end of the text.
        body = "\n".join(_dedent(line, indent) for line in lines[i + 1 : j])
        lang_match = LANG.match(info)
        nodes.extend(_parse_paragraphs(text[segment_start : starts[i]]))
        nodes.append(CodeBlock(body, lang_match[0] if lang_match else ""))
        segment_start = min(starts[j + 1] - 1, len(text)) if j < len(lines) else len(text)
        i = j + 1
    nodes.extend(_parse_paragraphs(text[segment_start:]))
    return _merge_text(nodes)


def _dedent(line: str, indent: int) -> str:
    stripped = len(line) - len(line.lstrip(" "))
    return line[min(indent, stripped) :]


_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
_ITEM = re.compile(r"([ \t]*)([*+-]|\d{1,9}[.)])[ \t]+(.*)")
_QUOTE = re.compile(r" {0,3}>[ ]?(.*)")
_RULE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")
_TABLE_SEPARATOR = re.compile(r"[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*")


def _parse_paragraphs(text: str) -> list[Node]:
    """The lines between code blocks: headings, list items, quotes, tables and rules are blocks of their own
    (one line each, a table its lines); the other lines are paragraphs, parsed inline."""
    lines = text.split("\n")
    nodes: list[Node] = []
    plain: list[str] = []

    def flush() -> None:
        if plain:
            nodes.extend(_parse_lines("\n".join(plain)))
            plain.clear()
            nodes.append(Text("\n"))

    i = 0
    while i < len(lines):
        line = lines[i]
        block: Node | None = None
        if "|" in line and i + 1 < len(lines) and _TABLE_SEPARATOR.fullmatch(lines[i + 1]) and "|" in lines[i + 1]:
            rows = [_cells(line)]
            j = i + 2
            while j < len(lines) and "|" in lines[j] and lines[j].strip():
                rows.append(_cells(lines[j]))
                j += 1
            block, i = Table(tuple(rows)), j - 1
        elif (heading := _HEADING.fullmatch(line)) is not None:
            block = Heading(len(heading[1]), tuple(_parse_inline(heading[2])))
        elif _RULE.fullmatch(line):
            block = Rule()
        elif (item := _ITEM.fullmatch(line)) is not None:
            indent = len(item[1].expandtabs(4))
            marker = "•" if item[2] in "*+-" else item[2]
            block = Item(min(indent // 2, 8), marker, tuple(_parse_inline(item[3])))
        elif (quote := _QUOTE.fullmatch(line)) is not None:
            block = Quote(tuple(_parse_inline(quote[1])))
        if block is None:
            plain.append(line)
        else:
            flush()
            nodes.append(block)
            nodes.append(Text("\n"))
        i += 1
    flush()
    if nodes and nodes[-1] == Text("\n"):
        nodes.pop()  # no newline after the last line
    return nodes


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return tuple(cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", inner))


def _parse_lines(text: str) -> list[Node]:
    # Emphasis and code spans never cross a blank line.
    nodes: list[Node] = []
    for k, part in enumerate(_PARAGRAPH_BREAK.split(text)):
        nodes.extend([Text(part)] if k % 2 else _parse_inline(part))
    return nodes


@dataclass(slots=True)
class _Delim:
    """A run of ``*`` or ``_`` (or exactly ``~~``) that may open or close emphasis (strikethrough)."""

    char: str
    count: int
    can_open: bool
    can_close: bool


class _Bracket:
    """A ``[`` that may open a link label."""


_LINK_TARGET = re.compile(r"\((?:<([^<>\s]+)>|((?:[^\s()]|\([^\s()]*\))+))\)")


def _parse_inline(s: str) -> list[Node]:
    items: list[Node | _Delim | _Bracket] = []
    brackets: list[int] = []  # indices in ``items`` of the ``[`` that may still open a label
    missing_runs: dict[int, int] = {}  # backtick run length -> position from which no such run follows
    buf: list[str] = []

    def flush() -> None:
        if buf:
            items.append(Text("".join(buf)))
            buf.clear()

    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "`":
            j = _run_end(s, i)
            length = j - i
            end = -1 if missing_runs.get(length, n + 1) <= j else _find_backtick_run(s, j, length)
            if end < 0:
                missing_runs[length] = j
                buf.append(s[i:j])
                i = j
                continue
            flush()
            items.append(Code(_strip_code(s[j:end])))
            i = end + length
        elif c == "[":
            flush()
            brackets.append(len(items))
            items.append(_Bracket())
            i += 1
        elif c == "]" and brackets and (target := _LINK_TARGET.match(s, i + 1)) is not None:
            flush()
            opener = brackets.pop()
            url = target[1] or target[2]
            label = items[opener + 1 :]
            _match_emphasis(label)
            items[opener:] = [Link(tuple(_finish(label)) or (Text(url),), url)]
            brackets.clear()  # links do not nest: an outer "[" is now literal
            i = target.end()
        elif c in "*_" or (c == "~" and _run_end(s, i) - i == 2):
            j = _run_end(s, i)
            flush()
            items.append(_delim(s, i, j))
            i = j
        else:
            if c == "]" and brackets:
                brackets.pop()
            buf.append(c)
            i += 1
    flush()
    _match_emphasis(items)
    return _finish(items)


def _finish(items: Sequence[Node | _Delim | _Bracket]) -> list[Node]:
    """Unmatched delimiters and brackets back to text."""
    nodes: list[Node] = []
    for item in items:
        if isinstance(item, _Delim):
            nodes.append(Text(item.char * item.count))
        elif isinstance(item, _Bracket):
            nodes.append(Text("["))
        else:
            nodes.append(item)
    return _merge_text(nodes)


def _run_end(s: str, i: int) -> int:
    j = i
    while j < len(s) and s[j] == s[i]:
        j += 1
    return j


def _find_backtick_run(s: str, start: int, length: int) -> int:
    """The start of the next run of exactly ``length`` backticks at or after ``start``, or -1."""
    k = s.find("`", start)
    while k >= 0:
        end = _run_end(s, k)
        if end - k == length:
            return k
        k = s.find("`", end)
    return -1


def _strip_code(code: str) -> str:
    if len(code) >= 2 and code[0] == " " and code[-1] == " " and code.strip(" "):
        return code[1:-1]
    return code


def _is_wide(c: str) -> bool:
    return unicodedata.east_asian_width(c) in "WF"


def _is_punct(c: str) -> bool:
    # CJK punctuation counts as a letter, so that "**注意：**这里" is bold as writers mean it.
    return unicodedata.category(c)[0] in "PS" and not _is_wide(c)


def _is_word(c: str) -> bool:
    return c.isalnum() and not _is_wide(c)


def _delim(s: str, i: int, j: int) -> _Delim:
    char, count = s[i], j - i
    prev = s[i - 1] if i > 0 else " "
    nxt = s[j] if j < len(s) else " "
    left = not nxt.isspace() and (not _is_punct(nxt) or prev.isspace() or _is_punct(prev))
    right = not prev.isspace() and (not _is_punct(prev) or nxt.isspace() or _is_punct(nxt))
    # Intraword single markers stay literal (2*3*4, snake_case_name); so does any "__" (__init__).
    if (char == "_" and count > 1) or (_is_word(prev) and _is_word(nxt) and (char == "_" or count == 1)):
        return _Delim(char, count, False, False)
    return _Delim(char, count, left, right)


def _match_emphasis(items: list[Node | _Delim | _Bracket]) -> None:
    """Pair delimiter runs in place, CommonMark style: each closer takes the nearest opener of its kind."""
    bottom = {"*": -1, "_": -1, "~": -1}
    i = 0
    while i < len(items):
        closer = items[i]
        if not (isinstance(closer, _Delim) and closer.can_close and closer.count):
            i += 1
            continue
        j = i - 1
        while j > bottom[closer.char]:
            opener = items[j]
            if isinstance(opener, _Delim) and opener.char == closer.char and opener.can_open and opener.count:
                break
            j -= 1
        else:
            # Nothing below here can open for this kind; later closers need not look again.
            bottom[closer.char] = i - 1
            i += 1
            continue
        assert isinstance(opener, _Delim)
        used = 2 if opener.count >= 2 and closer.count >= 2 else 1
        children = tuple(_finish(items[j + 1 : i]))
        if closer.char == "~":
            items[j + 1 : i] = [Strike(children)]
        else:
            items[j + 1 : i] = [Bold(children) if used == 2 else Italic(children)]
        opener.count -= used
        closer.count -= used
        i = j + 2
        if opener.count == 0:
            del items[j]
            i -= 1
        if closer.count == 0:
            del items[i]


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
