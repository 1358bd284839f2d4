"""Our Markdown as Telegram messages: HTML chunks at the text limit, buttons as inline keyboards."""

from __future__ import annotations

import html
import re

from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from bot.events import Button
from channels.formatting import split_telegram_html, to_telegram_html

TEXT_LIMIT = 4096
"""Characters (UTF-16 units, after entity parsing) in one message."""


def chunks_of(text: str) -> list[str]:
    if not text.strip():
        return []
    return [c for c in split_telegram_html(to_telegram_html(text), TEXT_LIMIT) if c.strip()]


def keyboard(rows: tuple[tuple[Button, ...], ...]) -> InlineKeyboardMarkup | None:
    """Buttons as an inline keyboard; the payload is the callback data (at most 64 bytes)."""
    if not rows:
        return None
    return InlineKeyboardMarkup(
        inline_keyboard=[[InlineKeyboardButton(text=b.label, callback_data=b.payload) for b in row] for row in rows]
    )


_TAG = re.compile(r"<[^>]*>")


def html_to_plain(text: str) -> str:
    """The fallback when Telegram refuses our HTML: the same text without markup (never lose a reply)."""
    return html.unescape(_TAG.sub("", text)).strip() or "…"
