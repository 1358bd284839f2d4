"""The outbound Markdown (what models write), rendered for each platform and split to its message limit.

Inline: ``**bold**``, ``_italic_`` (or ``*italic*``), ``~~strike~~``, ```` `code` ```` and ``[label](url)``;
blocks: fenced ```` ```lang ```` code, ``#`` headings, ``*``/``-``/``+`` and ``1.`` list items (nested by
indentation), ``>`` quotes, pipe tables and ``---`` rules.  It is parsed once into a few node types and
rendered per target: Telegram HTML (headings bold, bullets, ``<blockquote>``, tables in ``<pre>``), Slack
mrkdwn (the same, with ``>`` quotes and tables in code blocks), Discord Markdown (passed through as Discord
renders it), plain text.  Anything that does not parse as markup (``2*3*4``, ``snake_case_name``, an unclosed
``**``) stays literal text, and code is never interpreted.

Render first, then split: ``split_telegram_html(to_telegram_html(text))``, or
``split_markdown(to_discord_markdown(text), 2000)``.  The splitters work on the rendered text so that escaping
never pushes a chunk over the limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from channels.formatting.discord import to_discord_markdown
from channels.formatting.plain import plain_text
from channels.formatting.slack import to_slack_mrkdwn
from channels.formatting.split import split_markdown, split_telegram_html, utf16_len
from channels.formatting.telegram import to_telegram_html
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

__all__ = [
    "OFF_LOOP_CHARS",
    "Bold",
    "Code",
    "CodeBlock",
    "Heading",
    "Italic",
    "Item",
    "Link",
    "Node",
    "Quote",
    "Rule",
    "Strike",
    "Table",
    "Text",
    "parse",
    "plain_text",
    "rendered",
    "split_markdown",
    "split_telegram_html",
    "to_discord_markdown",
    "to_slack_mrkdwn",
    "to_telegram_html",
    "utf16_len",
]

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
