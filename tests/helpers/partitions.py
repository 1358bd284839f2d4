"""Inbound console messages numbered per chat, for the partition tests."""

from __future__ import annotations

from bot.events import ChatKey, InboundMessage, Sender


def message(chat: str, n: int) -> InboundMessage:
    return InboundMessage(
        id=f"{chat}-{n}", chat=ChatKey(channel="console", chat_id=chat), sender=Sender(id="u", name="u"), text=f"m{n}"
    )
