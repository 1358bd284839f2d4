"""Emphasis next to full-width punctuation, read as Chinese and Japanese writers mean it.

CommonMark decides whether ``**`` opens or closes by the characters around it, and full-width punctuation
counts as punctuation: ``**注意：**请看`` leaves both ``**`` literal (the closer follows ``：`` and precedes a
letter), as does ``请看**「注意」**``.  Models write this all the time.  Where a parse leaves such a run of
``*`` unmatched, the punctuation moves to the other side of it (``**注意**：请看``, ``请看「**注意」**``): the
same characters in the same order, now emphasised as meant.  Both the Telegram conversion and our own parse
read the text through this, so every platform shows the same thing.
"""

from __future__ import annotations

import re
import unicodedata

import pyromark

OPTIONS = pyromark.Options.ENABLE_TABLES | pyromark.Options.ENABLE_STRIKETHROUGH | pyromark.Options.ENABLE_TASKLISTS
"""The extensions every reading of the model's Markdown enables (GFM tables, strikethrough, task lists)."""
_PASSES = 4
_WIDE_PUNCT = (
    "\u2329\u232a\u30a0\u30fb\ufe10-\ufe19\ufe30-\ufe6f\u3000-\u303f"
    "\uff00-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
)
_NEAR = re.compile(f"[{_WIDE_PUNCT}]\\*|\\*[{_WIDE_PUNCT}]")
"""A ``*`` next to CJK or full-width punctuation: only then can a parse go wrong."""


def _wide_punct(c: str) -> bool:
    return unicodedata.east_asian_width(c) in "WF" and unicodedata.category(c)[0] == "P"


def _plain(c: str) -> bool:
    """Neither whitespace nor punctuation: what blocks a delimiter run next to punctuation."""
    return bool(c) and not c.isspace() and unicodedata.category(c)[0] not in "PS"


def cjk_emphasis(markdown: str) -> str:
    """``markdown`` with full-width punctuation moved across ``*`` runs a parse would leave literal."""
    if "*" not in markdown or markdown.isascii() or not _NEAR.search(markdown):
        return markdown
    for _ in range(_PASSES):
        moved = _move_once(markdown)
        if moved == markdown:
            break
        markdown = moved
    return markdown


def _move_once(markdown: str) -> str:
    moves: list[tuple[int, int, bool]] = []  # (start, end, is a closer) of runs to mend
    pending: dict[tuple[int, int], bool] = {}  # (block, run length) -> an opener waits
    for block, start, end in _literal_runs(markdown):
        key = (block, end - start)
        closer = pending.pop(key, False)
        if not closer:
            pending[key] = True
        left, right = markdown[start - 1 : start], markdown[end : end + 1]
        if closer and _wide_punct(left) and _plain(right):
            moves.append((start, end, True))
        elif not closer and _plain(left) and _wide_punct(right):
            moves.append((start, end, False))
    for start, end, closer in reversed(moves):
        before, run, after = markdown[:start], markdown[start:end], markdown[end:]
        if closer:  # "**注意：**请看" -> "**注意**：请看"
            k = len(before)
            while k > 0 and _wide_punct(before[k - 1]):
                k -= 1
            markdown = before[:k] + run + before[k:] + after
        else:  # "请看**「注意」**" -> "请看「**注意」**"
            k = 0
            while k < len(after) and _wide_punct(after[k]):
                k += 1
            markdown = before + after[:k] + run + after[k:]
    return markdown


_BLOCK_ENDS = frozenset({"Paragraph", "Heading", "Item", "TableCell"})


def _literal_runs(markdown: str) -> list[tuple[int, int, int]]:
    """Runs of ``*`` the parse left as text: (block number, start, end) in characters, in order."""
    to_char: dict[int, int] | None = None
    stars: list[tuple[int, int]] = []
    in_code = False
    block = 0
    for event, span in pyromark.events_with_range(markdown, options=OPTIONS):
        if isinstance(event, dict) and event.keys() & {"Start", "End"}:
            tag = event.get("Start") or event.get("End")
            name = next(iter(tag)) if isinstance(tag, dict) else tag
            if name == "CodeBlock":
                in_code = "Start" in event
            elif name in _BLOCK_ENDS and "End" in event:
                block += 1
            continue
        if in_code or not (isinstance(event, dict) and "Text" in event and "*" in event["Text"]):
            continue
        if to_char is None:
            to_char = _char_offsets(markdown)
        a, b = to_char.get(span["start"]), to_char.get(span["end"])
        if a is not None and b is not None:
            stars.extend((block, i) for i in range(a, b) if markdown[i] == "*" and markdown[i - 1 : i] != "\\")
    runs: list[tuple[int, int, int]] = []
    for block_of, i in stars:
        if runs and runs[-1][2] == i and runs[-1][0] == block_of:
            runs[-1] = (block_of, runs[-1][1], i + 1)
        else:
            runs.append((block_of, i, i + 1))
    return runs


def _char_offsets(text: str) -> dict[int, int]:
    """UTF-8 byte offset -> character offset, at every character boundary."""
    offsets, byte = {}, 0
    for i, c in enumerate(text):
        offsets[byte] = i
        byte += len(c.encode())
    offsets[byte] = len(text)
    return offsets
