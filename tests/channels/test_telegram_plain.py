"""The webhook's short way for plain private text messages (channels/telegram/inbound.py, plain_private_event): the
same event as aiogram's models and message_event make of the update, and the long way for everything else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiogram.types import Update
from pydantic import ValidationError

from channels.telegram.inbound import BotIdentity, message_event, plain_private_event

ME = BotIdentity(id=42, username="TestBot")
USER = {"id": 7, "is_bot": False, "first_name": "Alice", "username": "alice"}
CHAT = {"id": 7, "type": "private", "first_name": "Alice"}


def update(text: Any = "hello", *, user: Any = USER, chat: Any = CHAT, **message: Any) -> dict[str, Any]:
    return {
        "update_id": 1001,
        "message": {"message_id": 55, "date": 1_796_000_000, "chat": chat, "from": user, "text": text, **message},
    }


def long_way(body: bytes) -> Any:
    try:
        parsed = Update.model_validate_json(body)
    except (ValueError, ValidationError):
        return "refused"
    assert parsed.message is not None
    return message_event(parsed.update_id, parsed.message, ME)


SHORT = {
    "plain": update(),
    "full name": update(user={**USER, "last_name": "Liddell", "language_code": "en", "is_premium": True}),
    "empty last name": update(user={**USER, "last_name": ""}),
    "no first name's worth": update(user={"id": 7, "is_bot": False, "first_name": "", "username": "alice"}),
    "nameless": update(user={"id": 7, "is_bot": False, "first_name": ""}),
    "a bot sender": update(user={**USER, "is_bot": True}),
    "unicode": update("naïve café — 北京 🙂"),
    "a command": update("/start now"),
    "a slash later": update("a/b"),
    "spaces around": update("  padded  "),
    "chat with names": update(chat={**CHAT, "last_name": "L", "username": "alice"}),
}

LONG = {
    "a group": update(chat={"id": -100, "type": "group", "title": "G"}),
    "a command for a bot": update("/start@TestBot"),
    "a command for another bot": update("/start@OtherBot"),
    "entities": update("@TestBot hi", entities=[{"type": "mention", "offset": 0, "length": 8}]),
    "a reply": update(reply_to_message={"message_id": 3, "date": 1, "chat": CHAT, "text": "x"}),
    "a topic": update(message_thread_id=9, is_topic_message=True),
    "a photo": update(photo=[{"file_id": "f", "file_unique_id": "u", "width": 1, "height": 1}]),
    "no text": update(None),
    "a lone surrogate": update("bad \ud800 text"),
    "a lone surrogate in a name": update(user={**USER, "first_name": "A\udc00"}),
    "blank text": update("   "),
    "a string id": update(user={**USER, "id": "7"}),
    "no first name": update(user={"id": 7, "is_bot": False}),
    "a number for a name": update(user={**USER, "first_name": 5}),
    "a date in milliseconds": update(date=1_796_000_000_000),
    "a float date": update(date=1.5),
    "no sender": {"update_id": 1, "message": {"message_id": 1, "date": 1, "chat": CHAT, "text": "x"}},
    "a press": {"update_id": 1, "callback_query": {"id": "q", "from": USER, "chat_instance": "c", "data": "d"}},
    "an extra field": {**update(), "edited_message": None},
    "a bool update id": {**update(), "update_id": True},
}


@pytest.mark.parametrize("name", SHORT)
def test_the_short_way_makes_the_long_ways_event(name: str) -> None:
    body = json.dumps(SHORT[name]).encode()
    short = plain_private_event(body, ME)
    assert short is not None
    expected = long_way(body)
    assert short == expected
    assert short.model_dump_json() == expected.model_dump_json()


@pytest.mark.parametrize("name", LONG)
def test_everything_else_goes_the_long_way(name: str) -> None:
    assert plain_private_event(json.dumps(LONG[name]).encode(), ME) is None


@pytest.mark.parametrize(
    "body", [b"", b"not json", b"[]", b"null", b'{"update_id": 1}', b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000]
)
def test_what_is_not_an_update_goes_the_long_way(body: bytes) -> None:
    assert plain_private_event(body, ME) is None
