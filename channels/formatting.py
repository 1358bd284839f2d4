"""The outbound markdown subset, rendered for each platform and split to its message limit.

``OutboundMessage.text`` uses a small subset: ``**bold**``, ``_italic_`` (or ``*italic*``), ```` `code` ````,
fenced ```` ```lang ```` blocks and ``[label](url)``.  It is parsed once into a few node types and rendered per
target.  Anything that does not parse as markup (``2*3*4``, ``snake_case_name``, an unclosed ``**``) stays
literal text, and code is never interpreted.

Render first, then split: ``split_telegram_html(to_telegram_html(text))``, or
``split_markdown(to_discord_markdown(text), 2000)``.  The splitters work on the rendered text so that escaping
never pushes a chunk over the limit.
"""

from __future__ import annotations

import asyncio
import bisect
import html
import re
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

R = TypeVar("R")

OFF_LOOP_CHARS = 4096
"""Texts longer than this are rendered on a worker thread (see :func:`rendered`)."""


async def rendered(render: Callable[[str], R], text: str) -> R:
    """``render(text)``; for a long text on a worker thread.

    Rendering costs a few µs per character, so a 40 KB answer would hold the event
    loop for a tenth of a second; on a thread, the interpreter hands the loop the
    GIL every few milliseconds and other chats go on meanwhile.
    """
    if len(text) <= OFF_LOOP_CHARS:
        return render(text)
    return await asyncio.to_thread(render, text)


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


Node = Text | Bold | Italic | Code | Link | CodeBlock


# ---------------------------------------------------------------- the parser

_FENCE_OPEN = re.compile(r"( {0,3})(`{3,})([^`]*)")
_LANG = re.compile(r"[\w+#.-]+")
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
        lang_match = _LANG.match(info)
        nodes.extend(_parse_paragraphs(text[segment_start : starts[i]]))
        nodes.append(CodeBlock(body, lang_match[0] if lang_match else ""))
        segment_start = min(starts[j + 1] - 1, len(text)) if j < len(lines) else len(text)
        i = j + 1
    nodes.extend(_parse_paragraphs(text[segment_start:]))
    return _merge_text(nodes)


def _dedent(line: str, indent: int) -> str:
    stripped = len(line) - len(line.lstrip(" "))
    return line[min(indent, stripped) :]


def _parse_paragraphs(text: str) -> list[Node]:
    # Emphasis and code spans never cross a blank line.
    nodes: list[Node] = []
    for k, part in enumerate(_PARAGRAPH_BREAK.split(text)):
        nodes.extend([Text(part)] if k % 2 else _parse_inline(part))
    return nodes


@dataclass(slots=True)
class _Delim:
    """A run of ``*`` or ``_`` that may open or close emphasis."""

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
        elif c in "*_":
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
    bottom = {"*": -1, "_": -1}
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


# ---------------------------------------------------------------- renderers


def plain_text(text: str) -> str:
    """The subset's markup removed (for notifications, previews, fallbacks)."""
    return _plain(parse(text))


def _plain(nodes: Sequence[Node]) -> str:
    out: list[str] = []
    for node in nodes:
        match node:
            case Text(text=t) | Code(text=t) | CodeBlock(text=t):
                out.append(t)
            case Bold(children=ch) | Italic(children=ch):
                out.append(_plain(ch))
            case Link(children=ch, url=url):
                label = _plain(ch)
                out.append(label if label == url else f"{label} ({url})")
    return "".join(out)


_TELEGRAM_SCHEMES = ("http://", "https://", "tg://")


def to_telegram_html(text: str) -> str:
    """Our markdown subset -> Telegram HTML (``parse_mode=HTML``).

    ``<b>``, ``<i>``, ``<code>``, ``<pre>`` (``<pre><code class="language-x">`` for ```` ```x ```` blocks) and
    ``<a href="...">``; everything else escaped.  Links with schemes Telegram refuses become ``label (url)``.
    """
    return _telegram(parse(text), in_link=False)


def _telegram(nodes: Sequence[Node], *, in_link: bool) -> str:
    out: list[str] = []
    for node in nodes:
        match node:
            case Text(text=t):
                out.append(html.escape(t, quote=False))
            case Bold(children=ch):
                out.append(f"<b>{_telegram(ch, in_link=in_link)}</b>")
            case Italic(children=ch):
                out.append(f"<i>{_telegram(ch, in_link=in_link)}</i>")
            case Code(text=t):
                # Telegram entities other than bold/italic cannot nest, so code inside a link is plain.
                out.append(html.escape(t, quote=False) if in_link else f"<code>{html.escape(t, quote=False)}</code>")
            case Link(children=ch, url=url):
                if not in_link and url.lower().startswith(_TELEGRAM_SCHEMES):
                    out.append(f'<a href="{html.escape(url)}">{_telegram(ch, in_link=True)}</a>')
                else:
                    label = _plain(ch)
                    out.append(html.escape(label if label == url else f"{label} ({url})", quote=False))
            case CodeBlock(text=t, lang=lang):
                if not t:
                    continue
                body = html.escape(t, quote=False)
                out.append(f'<pre><code class="language-{lang}">{body}</code></pre>' if lang else f"<pre>{body}</pre>")
    return "".join(out)


_BACKTICK_RUN = re.compile(r"`{3,}")
_SLACK_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
# Slack code has no escape for a backtick; a look-alike keeps the span intact.
_SLACK_BACKTICK = "\u02cb"
_ZWSP = "\u200b"


def to_slack_mrkdwn(text: str) -> str:
    """-> Slack mrkdwn: ``*bold*``, ``_italic_``, ```` `code` ````, ```` ```blocks``` ````, ``<url|label>``.

    ``&``, ``<`` and ``>`` are escaped everywhere except in our own ``<url|label>`` syntax.
    """
    return _slack(parse(text))


def _slack(nodes: Sequence[Node]) -> str:
    pieces: list[str] = []
    for node in nodes:
        match node:
            case Text(text=t):
                # A literal ``` would open a code block in Slack.
                pieces.append(_slack_fence_safe(t.translate(_SLACK_ESCAPES)))
            case Bold(children=ch):
                pieces.append(f"*{_slack(ch)}*")
            case Italic(children=ch):
                pieces.append(f"_{_slack(ch)}_")
            case Code(text=t):
                pieces.append(f"`{t.translate(_SLACK_ESCAPES).replace('`', _SLACK_BACKTICK)}`")
            case Link(children=ch, url=url):
                label = _plain(ch).translate(_SLACK_ESCAPES)
                target = url.translate(_SLACK_ESCAPES).replace("|", "%7C")
                pieces.append(f"<{target}>" if _plain(ch) == url else f"<{target}|{label}>")
            case CodeBlock(text=t):
                body = _slack_fence_safe(t.translate(_SLACK_ESCAPES))
                pieces.append(f"```\n{body}\n```" if t else "")
    # Slack only formats at word boundaries; a zero-width space makes one inside "foo*bar*baz" or CJK text.
    for k, node in enumerate(nodes):
        if isinstance(node, Bold | Italic):
            if k > 0 and pieces[k - 1][-1:].isalnum():
                pieces[k] = _ZWSP + pieces[k]
            if k + 1 < len(pieces) and pieces[k + 1][:1].isalnum():
                pieces[k] += _ZWSP
    return "".join(pieces)


def _slack_fence_safe(text: str) -> str:
    return _BACKTICK_RUN.sub(lambda m: "``" + _SLACK_BACKTICK * (len(m[0]) - 2), text)


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
            case Bold(children=ch) | Italic(children=ch):
                marker = "**" if isinstance(node, Bold) else "*"
                self.out.append(marker)
                self.render(ch)
                self.out.append(marker)
            case Code(text=t):
                if "`" not in t:
                    self.out.append(f"`{t}`")
                elif "``" not in t:
                    self.out.append(f"`` {t} ``")
                else:
                    self.out.append(f"`{t.replace('`', _SLACK_BACKTICK)}`")
            case Link(children=ch, url=url):
                label = _plain(ch)
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
                    body = _BACKTICK_RUN.sub(lambda m: _ZWSP.join(m[0]), t)
                    self.out.append(f"```{lang}\n{body}\n```")


def _discord_escape(text: str, *, at_line_start: bool) -> str:
    def escape_inline(part: str) -> str:
        return _DISCORD_INLINE.sub(lambda m: _ZWSP + "@" if m[0] == "@" else "\\" + m[0], part)

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


# ---------------------------------------------------------------- splitting


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts (an astral emoji is 2)."""
    return len(text.encode("utf-16-le")) // 2


_SEPARATORS = ("\n\n", "\n", " ")


def _find_cut(vis: Sequence[str], cum: list[int], a: int, budget: int) -> tuple[int, int]:
    """Where the chunk starting at unit ``a`` ends: (end, start of the next chunk); separators between are dropped.

    ``vis[k]`` is the visible text of unit ``k`` and ``cum[k]`` the measured size of ``vis[:k]``.  Prefers a
    paragraph, then a line, then a word break in the second half of the window, then anywhere, then a hard
    split that keeps grapheme clusters (emoji sequences, combining marks) whole where it can.
    """
    n = len(vis)
    b = bisect.bisect_right(cum, cum[a] + budget) - 1
    if b >= n:
        return n, n
    if b <= a:  # one unit larger than the budget: it goes alone
        return a + 1, a + 1
    half = cum[a] + budget // 2
    for relaxed in (False, True):
        for sep in _SEPARATORS:
            for k in range(b, a, -1):
                if not relaxed and cum[k] < half:
                    break
                if vis[k] == sep[0] and (len(sep) == 1 or (k + 1 < n and vis[k + 1] == sep[1])):
                    return k, k + len(sep)
    k = b
    while k > a + 1 and b - k < 32 and _joins(vis[k - 1], vis[k]):
        k -= 1
    return (k, k) if not _joins(vis[k - 1], vis[k]) else (b, b)


def _joins(before: str, after: str) -> bool:
    """Whether a split between these two visible pieces would cut a grapheme cluster."""
    if not before or not after:
        return False
    first, last = ord(after[0]), ord(before[-1])
    if last == 0x200D or first == 0x200D or first == 0x20E3:
        return True
    if 0xFE00 <= first <= 0xFE0F or 0x1F3FB <= first <= 0x1F3FF or 0xE0020 <= first <= 0xE007F:
        return True
    if 0x1F1E6 <= first <= 0x1F1FF and 0x1F1E6 <= last <= 0x1F1FF:
        return True
    return unicodedata.category(after[0]).startswith("M")


def _cumulative(sizes: Sequence[int]) -> list[int]:
    cum = [0]
    for size in sizes:
        cum.append(cum[-1] + size)
    return cum


_HTML_ATOM = re.compile(r"<[^<>]*>|&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[a-zA-Z][a-zA-Z0-9]*);|.", re.DOTALL)
_TAG_NAME = re.compile(r"<(/?)([a-zA-Z][\w-]*)")
_EMPTY_ELEMENT = re.compile(r"<([a-zA-Z][\w-]*)(?:\s[^<>]*)?></\1>")


def split_telegram_html(html: str, limit: int = 4096) -> list[str]:
    """Split Telegram HTML into chunks of at most ``limit`` UTF-16 units of visible text (after entity parsing).

    Breaks prefer paragraphs, then lines, then words; a hard split comes last.  Each chunk is balanced HTML:
    tags open across a boundary are closed at the chunk's end and re-opened, with the same attributes, at the
    next chunk's start (a ``<pre><code class="language-x">`` continues as one).  Never splits an entity or a
    surrogate pair.  Whitespace-only chunks are dropped, so empty text gives ``[]``.
    """
    if limit < 2:
        raise ValueError(f"limit must be at least 2 UTF-16 units, got {limit}")
    atoms = _HTML_ATOM.findall(html)
    char_atoms: list[int] = []  # atom index of each visible unit
    vis: list[str] = []
    for index, atom in enumerate(atoms):
        if atom.startswith("<") and len(atom) > 1 and _TAG_NAME.match(atom):
            continue
        char_atoms.append(index)
        vis.append(_unescape(atom) if atom.startswith("&") else atom)
    cum = _cumulative([utf16_len(v) for v in vis])

    chunks: list[str] = []
    stack: list[tuple[str, str]] = []  # (tag name, opening tag as written)
    pos = 0
    unit = 0  # the visible unit ``pos`` is at or before
    start = 0
    while start < len(vis) or pos < len(atoms):
        end, nxt = _find_cut(vis, cum, start, limit) if start < len(vis) else (len(vis), len(vis))
        if end >= len(vis):
            end_atom = len(atoms)
        else:
            end_atom = char_atoms[end - 1] + 1
            while end_atom < len(atoms) and atoms[end_atom].startswith("</"):
                end_atom += 1
        body = ["".join(raw for _, raw in stack)]
        visible = []
        while pos < end_atom:
            atom = atoms[pos]
            if unit < len(char_atoms) and char_atoms[unit] == pos:
                if unit >= start:  # units before ``start`` are the dropped separator
                    body.append(atom)
                    visible.append(vis[unit])
                unit += 1
            else:
                body.append(atom)
                _track(stack, atom)
            pos += 1
        body.extend(f"</{name}>" for name, _ in reversed(stack))
        if "".join(visible).strip():
            chunks.append(_drop_empty_elements("".join(body)))
        start = nxt
        if end >= len(vis):
            break
    return chunks


def _unescape(entity: str) -> str:
    # Unknown entities stay as written (and count as such); Telegram would refuse them anyway.
    return html.unescape(entity)


def _track(stack: list[tuple[str, str]], tag: str) -> None:
    match = _TAG_NAME.match(tag)
    if match is None or tag.endswith("/>"):
        return
    closing, name = match[1], match[2].lower()
    if not closing:
        stack.append((name, tag))
        return
    for k in range(len(stack) - 1, -1, -1):
        if stack[k][0] == name:
            del stack[k:]
            return


def _drop_empty_elements(chunk: str) -> str:
    while True:
        reduced = _EMPTY_ELEMENT.sub("", chunk)
        if reduced == chunk:
            return chunk
        chunk = reduced


_FENCE_LINE = re.compile(r"[ \t]*```")
# Spans a split must not cut: entities, <url|label> and (<url>) links, masked links, inline code.
_PROTECTED = re.compile(r"&(?:#\d+|[a-zA-Z]+);|<[^<>\n]*>|\[[^\]\n]{0,500}\]\(<[^<>\n]*>\)|`[^`\n]+`")


@dataclass(frozen=True, slots=True)
class _Fence:
    open_start: int  # the ``` line
    content_start: int
    content_end: int  # the closing ``` line (or the end of the text)
    after: int  # where the text after the closing line starts (its newline skipped)
    lang: str


def split_markdown(text: str, limit: int, *, measure: Callable[[str], int] = len) -> list[str]:
    """Split rendered Slack/Discord text into chunks of at most ``limit`` (by ``measure``).

    Breaks prefer paragraphs, then lines, then words (never inside a link, entity or inline code span when
    avoidable).  A ``` block crossing a boundary is closed at the chunk's end and re-opened with its language
    at the next chunk's start.  ``measure`` must add up over characters (``len``, :func:`utf16_len`).
    Whitespace-only chunks are dropped, so empty text gives ``[]``.
    """
    fences = _fences(text)
    close = "\n```"
    reserve = measure(close) if fences else 0
    cum = _cumulative([measure(c) for c in text])
    protected = [(m.start(), m.end()) for m in _PROTECTED.finditer(text)]
    chunks: list[str] = []
    prefix = ""
    a, n = 0, len(text)
    while a < n:
        opening = next((f for f in fences if f.open_start <= a < f.content_start), None)
        if opening is not None:
            # A chunk that starts on a fence line carries it as the prefix, so the line can never end up alone.
            prefix, a = f"```{opening.lang}\n", opening.content_start
        budget = limit - measure(prefix) - reserve
        if budget < 1:
            raise ValueError(f"limit {limit} leaves no room for text after the code fences")
        end, nxt = _find_cut(text, cum, a, budget)
        if end < n:
            end, nxt = _avoid_protected(protected, a, end, nxt)
            end, nxt = _avoid_fence_lines(fences, a, end, nxt)
        piece = prefix + text[a:end]
        prefix = ""
        fence = next((f for f in fences if f.content_start < end <= f.content_end), None)
        if fence is not None and end < n:
            piece += close if not piece.endswith("\n") else close.lstrip("\n")
            if nxt >= fence.content_end:
                nxt = fence.after
            else:
                prefix = f"```{fence.lang}\n"
        if piece.strip():
            chunks.append(piece)
        a = nxt
    return chunks


def _fences(text: str) -> list[_Fence]:
    fences: list[_Fence] = []
    opened: tuple[int, int, str] | None = None
    offset = 0
    for line in text.split("\n"):
        line_end = offset + len(line)
        if opened is None:
            if _FENCE_LINE.match(line):
                info = line.strip()[3:]
                if "```" not in info:
                    lang = info.strip() if _LANG.fullmatch(info.strip()) else ""
                    opened = (offset, min(line_end + 1, len(text)), lang)
        elif "```" in line:
            open_start, content_start, lang = opened
            fences.append(_Fence(open_start, content_start, offset, min(line_end + 1, len(text)), lang))
            opened = None
        offset = line_end + 1
    if opened is not None:
        fences.append(_Fence(opened[0], opened[1], len(text), len(text), opened[2]))
    return fences


def _avoid_protected(spans: list[tuple[int, int]], a: int, end: int, nxt: int) -> tuple[int, int]:
    k = bisect.bisect_right(spans, (end, sys.maxsize)) - 1
    if k >= 0 and spans[k][0] < end < spans[k][1] and spans[k][0] > a:
        return spans[k][0], spans[k][0]
    return end, nxt


def _avoid_fence_lines(fences: list[_Fence], a: int, end: int, nxt: int) -> tuple[int, int]:
    for fence in fences:
        # Never cut on the opening line (or leave a block empty); end before the fence instead.
        if fence.open_start < end <= fence.content_start and fence.open_start > a:
            return fence.open_start, fence.open_start
        # A cut in the closing line: cut before it; the synthetic close replaces it.
        if fence.content_end < end < fence.after:
            return fence.content_end, fence.content_end
    return end, nxt
