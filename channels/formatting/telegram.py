"""Telegram: the model's Markdown as plain text plus message entities (no ``parse_mode``, so nothing to refuse).

The conversion is telegramify-markdown's (pulldown-cmark through pyromark, as our own parse, so every platform
reads the same Markdown the same way).  Around it: HTML the model writes stays visible text (the library would
drop it), links Telegram would refuse become ``label (url)``, and :func:`split_entities` cuts long answers at
paragraph, line or word breaks outside inline entities; a code block or quote crossing a cut continues as one
in the next chunk.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

import pyromark
import telegramify_markdown
from telegramify_markdown.config import RenderConfig

from channels.formatting.cjk import OPTIONS, cjk_emphasis
from channels.formatting.plain import RULE, table_text
from channels.formatting.split import cumulative, find_cut, utf16_len
from channels.formatting.tree import Table, parse

TEXT_LIMIT = 4096
"""UTF-16 units in one Telegram message."""

_LINK_SCHEMES = ("http://", "https://", "tg://")
_BACKTICKS = re.compile(r"`+")
_LINKS = frozenset({"text_link"})
_QUOTES = frozenset({"blockquote", "expandable_blockquote"})
_BLOCK_TYPES = _QUOTES | {"pre"}
"""Entities a cut may go through (each chunk gets its part); inline ones are kept whole where they fit."""


@dataclass(frozen=True, slots=True)
class Entity:
    """A Telegram ``MessageEntity``: ``offset`` and ``length`` in UTF-16 units."""

    type: str
    offset: int
    length: int
    url: str | None = None
    language: str | None = None


@dataclass(frozen=True, slots=True)
class TelegramText:
    """Message text with its entities, sent as ``text`` + ``entities``."""

    text: str
    entities: tuple[Entity, ...] = ()


def _config() -> RenderConfig:
    config = RenderConfig.isolated()
    symbols = config.markdown_symbol
    for level in range(1, 7):  # headings are bold (and underlined at levels 1-2), with no emoji before them
        setattr(symbols, f"heading_level_{level}", "")
    symbols.unordered_list_item = "•"
    symbols.task_uncompleted = "☐"
    symbols.horizontal_rule = RULE
    return config


_CONFIG = _config()


def to_telegram(markdown: str) -> TelegramText:
    """Markdown -> text + entities: bold, italic, underlined headings, strike, code, ``pre`` blocks (with their
    language; tables too, as aligned text), quotes, links; bullets and numbers as text."""
    text, entities = telegramify_markdown.convert(_prepared(cjk_emphasis(markdown)), config=_CONFIG)
    ours = [
        Entity(e.type, e.offset, e.length, e.url, e.language)
        for e in entities
        if e.length > 0 and (e.type != "text_link" or e.url)
    ]
    return _unlink_refused(text, _nestable(ours))


def _nestable(entities: list[Entity]) -> list[Entity]:
    """Drop what Telegram cannot nest: code in a link label (the link stays), a quote in a quote (of two
    over the same text, the later)."""
    drop: set[int] = set()
    links = sorted((e.offset, e.offset + e.length) for e in entities if e.type in _LINKS)  # never overlapping
    starts = [start for start, _ in links]
    for i, e in enumerate(entities):
        if e.type == "code" and links:
            k = bisect.bisect_right(starts, e.offset) - 1
            if k >= 0 and links[k][1] >= e.offset + e.length:
                drop.add(i)
    reach = -1  # the furthest end of the quotes kept so far, in order of their start
    for offset, negative_length, i in sorted(
        (e.offset, -e.length, i) for i, e in enumerate(entities) if e.type in _QUOTES
    ):
        end = offset - negative_length
        if end <= reach:
            drop.add(i)
        reach = max(reach, end)
    return [e for i, e in enumerate(entities) if i not in drop] if drop else entities


def _prepared(markdown: str) -> str:
    """What the converter reads: the ``<`` of HTML the model wrote (``<br>``, ``<div>``) escaped, so it shows
    as the text it is (the converter would drop it); top-level tables as code blocks of aligned text, with
    wide (CJK, emoji) characters counted as two columns."""
    if "<" not in markdown and "|" not in markdown:
        return markdown
    source = markdown.encode()
    edits: list[tuple[int, int, bytes]] = []
    nested = 0
    replaced = 0  # the end of the last table replaced: what lies before it is done
    for event, span in pyromark.events_with_range(markdown, options=OPTIONS):
        start, end = span["start"], span["end"]
        if start < replaced:
            continue
        if isinstance(event, dict) and ("InlineHtml" in event or "Html" in event):
            edits.extend((k, k, b"\\") for k in range(start, end) if source[k] == 0x3C)  # "<"
        elif isinstance(event, dict) and ("Start" in event or "End" in event):
            tag = event.get("Start") or event.get("End")
            name = next(iter(tag)) if isinstance(tag, dict) else tag
            if name in ("BlockQuote", "Item"):
                nested += 1 if "Start" in event else -1
            elif name == "Table" and "Start" in event and not nested:
                edits.append((start, end, _table_block(source[start:end].decode())))
                replaced = end
    if not edits:
        return markdown
    pieces, last = [], 0
    for start, end, replacement in sorted(edits):
        pieces += [source[last:start], replacement]
        last = end
    pieces.append(source[last:])
    return b"".join(pieces).decode()


def _table_block(table: str) -> bytes:
    rows = next((node.rows for node in parse(table) if isinstance(node, Table)), ())
    if not rows:
        return table.encode()
    body = table_text(rows)
    fence = "`" * max(3, 1 + max((len(run) for run in _BACKTICKS.findall(body)), default=0))
    return f"{fence}\n{body}\n{fence}\n".encode()


def _unlink_refused(text: str, entities: list[Entity]) -> TelegramText:
    """A link Telegram would refuse (``mailto:``, ``javascript:``, a relative path) becomes ``label (url)``."""
    refused = [e for e in entities if e.type == "text_link" and not (e.url or "").lower().startswith(_LINK_SCHEMES)]
    if not refused:
        return TelegramText(text, tuple(entities))
    kept = [e for e in entities if e not in refused]
    units = text.encode("utf-16-le")
    for link in sorted(refused, key=lambda e: e.offset, reverse=True):
        at = link.offset + link.length
        label = units[2 * link.offset : 2 * at].decode("utf-16-le")
        if label == link.url:
            continue
        added = f" ({link.url})"
        size = utf16_len(added)
        units = units[: 2 * at] + added.encode("utf-16-le") + units[2 * at :]
        kept = [
            replace(e, offset=e.offset + size)
            if e.offset >= at
            else replace(e, length=e.length + size)
            if e.offset < at < e.offset + e.length
            else e
            for e in kept
        ]
    return TelegramText(units.decode("utf-16-le"), tuple(sorted(kept, key=lambda e: e.offset)))


def split_entities(message: TelegramText, limit: int = TEXT_LIMIT) -> list[TelegramText]:
    """Chunks of at most ``limit`` UTF-16 units, whitespace trimmed at their ends (whitespace-only dropped).

    Cuts prefer a paragraph, then a line, then a word break, and move before an inline entity (a link, bold
    words, a code span) rather than through it, unless it alone is longer than a chunk.  Entities crossing a
    cut (code blocks, quotes) are clipped into both chunks.
    """
    if limit < 2:
        raise ValueError(f"limit must be at least 2 UTF-16 units, got {limit}")
    text = message.text
    cum = list(range(len(text) + 1)) if text.isascii() else cumulative([utf16_len(c) for c in text])
    if cum[-1] <= limit:
        piece = _piece(message, cum, 0, len(text))
        return [piece] if piece is not None else []
    inline = _merged(
        (bisect.bisect_left(cum, e.offset), bisect.bisect_left(cum, e.offset + e.length))
        for e in message.entities
        if e.type not in _BLOCK_TYPES
    )
    chunks: list[TelegramText] = []
    a = 0
    while a < len(text):
        end, nxt = find_cut(text, cum, a, limit)
        k = bisect.bisect_right(inline, (end, len(text) + 1)) - 1
        if end < len(text) and k >= 0 and inline[k][0] < end < inline[k][1] and inline[k][0] > a:
            end = nxt = inline[k][0]
        piece = _piece(message, cum, a, end)
        if piece is not None:
            chunks.append(piece)
        a = nxt
    return chunks


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or nested spans as one span each, in order."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _piece(message: TelegramText, cum: list[int], a: int, b: int) -> TelegramText | None:
    text = message.text
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    if a == b:
        return None
    lo, hi = cum[a], cum[b]
    entities = []
    for e in message.entities:
        start, end = max(e.offset, lo), min(e.offset + e.length, hi)
        if start < end:
            entities.append(replace(e, offset=start - lo, length=end - start))
    return TelegramText(text[a:b], tuple(entities))
