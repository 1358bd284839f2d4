"""Telegram updates → bus events: messages (text, captions, media metadata), mentions, commands, button presses.

Pure functions of aiogram's types; the adapter owns I/O.  Entity offsets are in
UTF-16 code units (Telegram's unit), so text is sliced through UTF-16.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from aiogram.types import CallbackQuery, InaccessibleMessage, Message, MessageEntity, User

from bot.events import Action, Attachment, ChatKey, InboundMessage, Sender, repair_text

CHANNEL = "telegram"
UPDATE_TYPES = ("message", "callback_query")
"""What the adapter asks Telegram for (getUpdates / setWebhook ``allowed_updates``)."""

_COMMAND_TARGET = re.compile(r"^/([A-Za-z0-9_]+)@([A-Za-z0-9_]+)")
_MEDIA = ("animation", "video", "video_note", "audio", "voice", "sticker", "document")
"""A GIF comes as both ``animation`` and ``document`` (one file): the first kind wins."""


@dataclass(frozen=True)
class BotIdentity:
    """Who the bot is (from getMe): mentions and replies are matched against it."""

    id: int
    username: str
    """Without the ``@``; empty if the bot has none (never the case for real bots)."""

    @classmethod
    def from_user(cls, user: User) -> BotIdentity:
        return cls(id=user.id, username=user.username or "")

    def is_me(self, user: User | None) -> bool:
        return user is not None and user.id == self.id

    def is_my_name(self, name: str) -> bool:
        return bool(self.username) and name.lstrip("@").casefold() == self.username.casefold()


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def message_ref(chat_id: int | str, message_id: int) -> str:
    """The reference ``send`` returns and ``edit_of`` accepts: ``chat_id:message_id``."""
    return f"{chat_id}:{message_id}"


def parse_ref(ref: str) -> tuple[int | str, int]:
    chat, sep, message = ref.rpartition(":")
    if not sep or not chat or not message.isdigit():
        raise ValueError(f"not a Telegram message reference: {ref!r} (expected chat_id:message_id)")
    return chat_id_of(chat), int(message)


def chat_id_of(chat_id: str) -> int | str:
    """Telegram chat ids are integers (negative for groups); ``@channel`` names stay strings."""
    return int(chat_id) if chat_id.lstrip("-").isdigit() else chat_id


def thread_of(message: Message | InaccessibleMessage) -> str | None:
    """A forum topic is a thread; reply threads of ordinary groups are not (they would split the chat)."""
    if isinstance(message, Message) and message.is_topic_message and message.message_thread_id is not None:
        return str(message.message_thread_id)
    return None


def chat_key(message: Message | InaccessibleMessage) -> ChatKey:
    return ChatKey(channel=CHANNEL, chat_id=str(message.chat.id), thread_id=thread_of(message))


def sender_of(user: User) -> Sender:
    return Sender(id=str(user.id), name=user.full_name or user.username or str(user.id), is_bot=user.is_bot)


def message_event(update_id: int, message: Message, me: BotIdentity) -> InboundMessage | None:
    """The event for one message, or None (service messages, channel posts, commands for another bot)."""
    if message.from_user is None:
        return None
    # Repaired first: a lone surrogate cannot be sliced through UTF-16 (the entity offsets' unit).
    raw = repair_text(message.text if message.text is not None else (message.caption or ""))
    entities = message.entities if message.text is not None else message.caption_entities
    attachments = _attachments(message)
    if not raw.strip() and not attachments:
        return None
    text, mentioned = _strip_mentions(raw, entities or [], me)
    command = _COMMAND_TARGET.match(text)
    if command is not None:
        if not me.is_my_name(command.group(2)):
            return None  # ``/cmd@otherbot``: another bot's command
        text = f"/{command.group(1)}{text[command.end() :]}"
    if text.startswith("/"):
        mentioned = True  # a command in a group is addressed to the bots there, us included
    reply = _reply_of(message)
    if reply is not None and me.is_me(reply.from_user):
        mentioned = True
    return InboundMessage(
        id=str(update_id),
        chat=chat_key(message),
        sender=sender_of(message.from_user),
        text=text,
        is_direct=message.chat.type == "private",
        mentions_bot=mentioned,
        reply_to=message_ref(message.chat.id, reply.message_id) if reply is not None else None,
        attachments=attachments,
        received_at=message.date,
    )


_PLAIN_MESSAGE = frozenset({"message_id", "date", "chat", "from", "text"})
_PLAIN_USER = frozenset({"id", "is_bot", "first_name", "last_name", "username", "language_code", "is_premium"})
_PLAIN_CHAT = frozenset({"id", "type", "first_name", "last_name", "username"})
_SECONDS_BELOW = 20_000_000_000
"""pydantic reads a larger number as milliseconds: such a date goes the long way."""


def plain_private_event(body: bytes, me: BotIdentity) -> InboundMessage | None:
    """The event for the commonest update, a plain text message in a private chat (no entities, reply, media or
    topic), read from the webhook's JSON without aiogram's models: the same event :func:`message_event` makes of
    it (measured: see bench/README.md, "Telegram's plain private messages").  None for anything else (or a field
    of an unexpected type), which goes the long way and is validated there."""
    try:
        update = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deep: refused the long way
        return None
    if not isinstance(update, dict) or update.keys() != {"update_id", "message"}:
        return None
    update_id, message = update["update_id"], update["message"]
    if type(update_id) is not int or not isinstance(message, dict) or not message.keys() <= _PLAIN_MESSAGE:
        return None
    chat, user, text, date = message.get("chat"), message.get("from"), message.get("text"), message.get("date")
    if not (
        isinstance(chat, dict)
        and chat.keys() <= _PLAIN_CHAT
        and chat.get("type") == "private"
        and type(chat.get("id")) is int
        and isinstance(user, dict)
        and user.keys() <= _PLAIN_USER
        and type(user.get("id")) is int
        and type(user.get("is_bot")) is bool
        and type(message.get("message_id")) is int
        and type(date) is int
        and 0 <= date < _SECONDS_BELOW
        and isinstance(text, str)
        and isinstance(user.get("first_name"), str)
        and all(isinstance(user.get(k, ""), str) for k in ("last_name", "username", "language_code"))
        and type(user.get("is_premium", False)) is bool
        and isinstance(chat.get("first_name", ""), str)
        and isinstance(chat.get("last_name", ""), str)
        and isinstance(chat.get("username", ""), str)
    ):
        return None
    strings = (text, *(v for v in user.values() if type(v) is str), *(v for v in chat.values() if type(v) is str))
    if not all(s.isascii() or _encodes(s) for s in strings):
        return None  # a lone surrogate: refused the long way (pydantic's JSON reader takes none)
    if not text.strip() or _COMMAND_TARGET.match(text) is not None:
        return None  # nothing, or a command naming a bot: the long way decides
    first, last = user.get("first_name", ""), user.get("last_name")
    name = f"{first} {last}" if last else first
    return InboundMessage(
        id=str(update_id),
        chat=ChatKey(channel=CHANNEL, chat_id=str(chat["id"]), thread_id=None),
        sender=Sender(id=str(user["id"]), name=name or user.get("username") or str(user["id"]), is_bot=user["is_bot"]),
        text=text,
        is_direct=True,
        mentions_bot=text.startswith("/"),
        reply_to=None,
        attachments=(),
        received_at=datetime.fromtimestamp(date, UTC),
    )


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def action_event(update_id: int, query: CallbackQuery) -> Action | None:
    """A button press, or None when it cannot be tied to a message of ours (inline mode, no data)."""
    if query.message is None or query.data is None:
        return None
    return Action(
        id=str(update_id),
        chat=chat_key(query.message),
        sender=sender_of(query.from_user),
        payload=query.data,
        message_ref=message_ref(query.message.chat.id, query.message.message_id),
        platform={"callback_query_id": query.id},
    )


def _reply_of(message: Message) -> Message | None:
    """The message replied to; in a forum topic every message "replies" to the topic's root, which is not a reply."""
    reply = message.reply_to_message
    if reply is None or reply.forum_topic_created is not None:
        return None
    return reply


def _strip_mentions(text: str, entities: list[MessageEntity], me: BotIdentity) -> tuple[str, bool]:
    """The text without the bot's own mentions, and whether there was one."""
    data = text.encode("utf-16-le")
    spans = []
    for entity in entities:
        start, end = entity.offset * 2, (entity.offset + entity.length) * 2
        named = entity.type == "mention" and me.is_my_name(data[start:end].decode("utf-16-le"))
        if named or (entity.type == "text_mention" and me.is_me(entity.user)):
            spans.append((start, end))
    if not spans:
        return text, False
    pieces: list[str] = []
    cursor = 0
    for start, end in sorted(spans):
        pieces.append(data[cursor:start].decode("utf-16-le"))
        cursor = end
    pieces.append(data[cursor:].decode("utf-16-le"))
    out = pieces[0]
    for piece in pieces[1:]:
        left, right = out.rstrip(" "), piece.lstrip(" ")
        glue = " " if left and right and not left.endswith("\n") and not right.startswith("\n") else ""
        out = left + glue + right
    if not pieces[0].strip():
        out = out.lstrip().lstrip(",:;").lstrip()  # "@bot, do this" → "do this"
    return out.strip(), True


def _attachments(message: Message) -> tuple[Attachment, ...]:
    """Media as metadata only (the file id is the reference; nothing is downloaded)."""
    found: list[Attachment] = []
    if message.photo:
        largest = message.photo[-1]
        found.append(Attachment(kind="photo", mime_type="image/jpeg", size=largest.file_size, ref=largest.file_id))
    seen = set()
    for kind in _MEDIA:
        media = getattr(message, kind, None)
        if media is None or media.file_unique_id in seen:
            continue
        seen.add(media.file_unique_id)
        found.append(
            Attachment(
                kind=kind,
                name=getattr(media, "file_name", None),
                mime_type=getattr(media, "mime_type", None),
                size=media.file_size,
                ref=media.file_id,
            )
        )
    if message.location is not None:
        found.append(Attachment(kind="location", ref=f"{message.location.latitude},{message.location.longitude}"))
    return tuple(found)
