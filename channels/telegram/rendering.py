"""Our Markdown as Telegram messages: text + entities chunks at the text limit, buttons as inline keyboards."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from aiogram.methods import SendMessage
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup, MessageEntity, ReplyParameters

from bot.events import Button
from channels.formatting import TelegramText, split_entities, to_telegram
from channels.formatting.telegram import TEXT_LIMIT, Entity

__all__ = ["TEXT_LIMIT", "chunks_of", "entities_of", "keyboard", "text_message"]


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


def text_message(
    chat_id: int | str,
    chunk: TelegramText,
    *,
    thread: int | None,
    reply: int | None,
    markup: InlineKeyboardMarkup | None,
    silent: bool,
) -> tuple[dict[str, Any], Callable[[], SendMessage]]:
    """A ``sendMessage`` call: its JSON parameters, and how to build the same call as an aiogram method (to read
    an unsuccessful answer as aiogram does)."""
    payload: dict[str, Any] = {"chat_id": chat_id, "text": chunk.text}
    if chunk.entities:
        payload["entities"] = [_entity(e) for e in chunk.entities]
    if thread is not None:
        payload["message_thread_id"] = thread
    if reply:
        payload["reply_parameters"] = {"message_id": reply, "allow_sending_without_reply": True}
    if markup is not None:
        payload["reply_markup"] = markup.model_dump(mode="json", exclude_none=True)
    if silent:
        payload["disable_notification"] = True
    method = functools.partial(
        SendMessage,
        chat_id=chat_id,
        text=chunk.text,
        entities=entities_of(chunk),
        parse_mode=None,
        message_thread_id=thread,
        reply_parameters=ReplyParameters(message_id=reply, allow_sending_without_reply=True) if reply else None,
        reply_markup=markup,
        disable_notification=True if silent else None,
    )
    return payload, method


def _entity(entity: Entity) -> dict[str, Any]:
    """A ``MessageEntity`` as the Bot API's JSON (only the fields that are set)."""
    out: dict[str, Any] = {"type": entity.type, "offset": entity.offset, "length": entity.length}
    if entity.url is not None:
        out["url"] = entity.url
    if entity.language is not None:
        out["language"] = entity.language
    return out
