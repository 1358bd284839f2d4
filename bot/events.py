"""The bus contract: typed, frozen events.  Nothing platform-specific past the adapter."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator


def _now() -> datetime:
    return datetime.now(UTC)


def repair_text(text: str) -> str:
    """``text`` as valid Unicode: lone surrogates (from JSON escapes such as ``\\ud800``) become U+FFFD.

    Platforms hand over whatever their clients sent; a lone surrogate cannot be encoded
    (UTF-8 for the database, UTF-16 for Telegram's entity offsets), so it is repaired at
    the door.  A surrogate *pair* written as two escapes becomes the character it encodes.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


_CACHED = ("as_str", "settings_key", "dedupe_key")
"""The events' strings made once (``cached_property``: kept in the instance's ``__dict__``)."""


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with changes, its cached strings are made again (a copy takes them along)."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            kept = copied.__dict__
            for name in _CACHED:
                kept.pop(name, None)
        return copied


class ChatKey(_Event):
    """Where a conversation happens; its string form keys sessions, locks and settings."""

    channel: str
    chat_id: str
    thread_id: str | None = None

    def __str__(self) -> str:
        return self.as_str

    def __hash__(self) -> int:
        return hash(self.as_str)  # equal keys have equal strings

    @cached_property
    def as_str(self) -> str:
        """``channel:chat_id[:thread_id]``, made once: a message's path hashes and prints its chat key about a dozen
        times, and pydantic's hash of a frozen model is slower than a cached one (see bench/README.md)."""
        return f"{self.channel}:{self.chat_id}:{self.thread_id}" if self.thread_id else self.settings_key

    @cached_property
    def settings_key(self) -> str:
        """``channel:chat_id``: chat settings (strategy, grants) ignore the thread."""
        return f"{self.channel}:{self.chat_id}"

    @classmethod
    def parse(cls, text: str) -> ChatKey:
        """The key whose string form is ``text`` (``channel:chat_id[:thread_id]``)."""
        channel, sep, rest = text.partition(":")
        if not sep or not channel or not rest:
            raise ValueError(f"not a chat key: {text!r} (expected channel:chat_id[:thread_id])")
        chat_id, _, thread = rest.partition(":")
        return cls(channel=channel, chat_id=chat_id, thread_id=thread or None)


class Sender(_Event):
    id: str
    name: str = ""

    _repair = field_validator("id", "name")(repair_text)

    is_admin: bool = False
    """Resolved by the gateway from configuration, never trusted from the platform."""
    is_bot: bool = False


class Attachment(_Event):
    kind: str
    name: str | None = None
    mime_type: str | None = None
    size: int | None = None
    ref: str | None = None


class InboundMessage(_Event):
    id: str
    """Platform message/update id, used for de-duplication."""
    chat: ChatKey
    sender: Sender
    text: str
    is_direct: bool = False
    mentions_bot: bool = False
    reply_to: str | None = None
    attachments: tuple[Attachment, ...] = ()
    received_at: datetime = Field(default_factory=_now)

    _repair = field_validator("id", "text")(repair_text)

    @cached_property
    def dedupe_key(self) -> str:
        """:func:`event_key`, made once (a message's path asks for it five times)."""
        return f"{self.chat.channel}:{self.id}"


class ConsoleInput(_Event):
    """What the web console adds to a press: the signed-in admin who made it there and what they typed.

    Set only by the console (adapters never do), which signed the person in; the supervisor checks the name
    against ``web`` again when it handles the press.
    """

    user: str
    text: str | None = None
    """An answer (``ask_user``) or what to change in a plan (``edit``)."""
    arguments: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Call id → edited arguments (``tool_confirm``'s Edit arguments)."""

    @field_validator("text")
    @classmethod
    def _repair(cls, text: str | None) -> str | None:
        return None if text is None else repair_text(text)


class Action(_Event):
    """A button press."""

    id: str
    """The platform's action id (de-duplication)."""
    chat: ChatKey
    sender: Sender
    payload: str
    message_ref: str | None = None
    """The platform message holding the buttons (to edit it)."""
    platform: dict[str, Any] = Field(default_factory=dict)
    """Ids the adapter needs to acknowledge or edit (e.g. an interaction token)."""
    console: ConsoleInput | None = None
    """A press made in the web console (``bot/web``), not on the platform."""
    received_at: datetime = Field(default_factory=_now)

    _repair = field_validator("id", "payload")(repair_text)

    @cached_property
    def dedupe_key(self) -> str:
        """:func:`event_key`, made once."""
        return f"{self.chat.channel}:{self.id}"


class Button(_Event):
    label: str
    payload: str


class OutboundFile(_Event):
    """A file the bot sends (the ``send_file`` tool): a path every sending process can read."""

    path: str
    name: str
    kind: Literal["photo", "document"] = "document"
    """``photo``: shown inline as a picture (Telegram ``sendPhoto``); ``document``: a file to download."""


class OutboundMessage(_Event):
    chat: ChatKey
    text: str = ""
    """A small markdown subset: **bold**, _italic_, `code`, ```blocks```, [links](url)."""
    buttons: tuple[tuple[Button, ...], ...] = ()
    reply_to: str | None = None
    edit_of: str | None = None
    kind: Literal["text", "notice", "typing", "draft"] = "text"
    """``draft``: a preview of an answer still being written (never stored); a platform with native drafts
    (Telegram private chats) shows it as one, others as a message that later previews edit."""
    file: OutboundFile | None = None
    """A file sent with ``text`` as its caption (a long text goes first, as messages of its own)."""
    key: str | None = None
    """Idempotency: two sends with one key are one message.  A platform that de-duplicates by it
    (Discord's nonce) turns a resend after a crash into nothing; set on replies and prompts."""


InboundEvent = InboundMessage | Action


def event_key(event: InboundEvent) -> str:
    """``channel:platform id``: an inbound event's de-duplication key."""
    return event.dedupe_key
