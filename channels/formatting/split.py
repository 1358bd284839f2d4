"""Splitting rendered text to a platform's message limit without cutting markup, links or code fences."""

from __future__ import annotations

import bisect
import re
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from channels.formatting.tree import LANG

# ---------------------------------------------------------------- splitting


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts (an astral emoji is 2)."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


_SEPARATORS = ("\n\n", "\n", " ")


def find_cut(vis: Sequence[str], cum: list[int], a: int, budget: int) -> tuple[int, int]:
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


def cumulative(sizes: Sequence[int]) -> list[int]:
    cum = [0]
    for size in sizes:
        cum.append(cum[-1] + size)
    return cum


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
    cum = cumulative([measure(c) for c in text])
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
        end, nxt = find_cut(text, cum, a, budget)
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
                    lang = info.strip() if LANG.fullmatch(info.strip()) else ""
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
