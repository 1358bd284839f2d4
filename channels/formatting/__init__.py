"""The outbound Markdown (what models write), rendered for each platform and split to its message limit.

The model's CommonMark (with GFM tables, strikethrough and task lists) is read by one parser, pulldown-cmark
(through pyromark): :func:`parse` builds a few node types that our Slack mrkdwn, Discord Markdown and plain
text renderers walk, and Telegram's text + entities come from telegramify-markdown on the same parser.
Headings, nested lists, quotes, tables (as aligned monospace text), rules, code, links, strike: none of it
reaches a user as raw markup, and text that is not markup (``snake_case_name``, an unclosed ``**``, HTML the
model writes) stays as written.

Render first, then split: ``split_entities(to_telegram(text))``, or
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
from channels.formatting.split import split_markdown, utf16_len
from channels.formatting.telegram import Entity, TelegramText, split_entities, to_telegram
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
    "Entity",
    "Heading",
    "Italic",
    "Item",
    "Link",
    "Node",
    "Quote",
    "Rule",
    "Strike",
    "Table",
    "TelegramText",
    "Text",
    "parse",
    "plain_text",
    "rendered",
    "split_entities",
    "split_markdown",
    "to_discord_markdown",
    "to_slack_mrkdwn",
    "to_telegram",
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
