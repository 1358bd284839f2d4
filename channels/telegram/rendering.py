"""Our Markdown as Telegram messages: text + entities chunks at the text limit, buttons as inline keyboards."""

from __future__ import annotations

from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup, MessageEntity

from bot.events import Button
from channels.formatting import TelegramText, split_entities, to_telegram
from channels.formatting.telegram import TEXT_LIMIT

__all__ = ["TEXT_LIMIT", "chunks_of", "entities_of", "keyboard"]


def chunks_of(text: str) -> list[TelegramText]:
    """The answer as messages: each at most :data:`TEXT_LIMIT` UTF-16 units, none empty."""
    if not text.strip():
        return []
    return split_entities(to_telegram(text), TEXT_LIMIT)


def entities_of(chunk: TelegramText) -> list[MessageEntity] | None:
    if not chunk.entities:
        return None
    return [
        MessageEntity(type=e.type, offset=e.offset, length=e.length, url=e.url, language=e.language)
        for e in chunk.entities
    ]


def keyboard(rows: tuple[tuple[Button, ...], ...]) -> InlineKeyboardMarkup | None:
    """Buttons as an inline keyboard; the payload is the callback data (at most 64 bytes)."""
    if not rows:
        return None
    return InlineKeyboardMarkup(
        inline_keyboard=[[InlineKeyboardButton(text=b.label, callback_data=b.payload) for b in row] for row in rows]
    )
