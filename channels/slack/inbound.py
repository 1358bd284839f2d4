"""Slack payloads → bus events: messages (mentions, DMs, thread replies), button presses, the slash command.

Pure functions of the JSON that bolt hands over; the adapter owns the I/O (user names, thread look-ups).
Message references (``send``'s return value, ``Action.message_ref``, ``InboundMessage.id``) are
``channel:ts``: unique per message and all ``chat.update`` needs.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from bot.events import Action, Attachment, ChatKey, InboundMessage, Sender

CHANNEL = "slack"
ACCEPTED_SUBTYPES = (None, "file_share", "thread_broadcast")
"""Messages people write; every other subtype (edits, deletions, joins, bot posts, …) is ignored."""

# Bounded repeats: a 40 KB message of "<@U1|<@U1|…" must not make every search scan to the end.
_USER = re.compile(r"<@([UW][A-Z0-9]{1,20})(?:\|([^<>]{0,200}))?>")
_CONVERSATION = re.compile(r"<#([CGD][A-Z0-9]{1,20})(?:\|([^<>]{0,200}))?>")
_SPECIAL = re.compile(r"<!(here|channel|everyone)(?:\|[^<>]{0,200})?>")
_GROUP = re.compile(r"<!subteam\^([A-Z0-9]{1,20})(?:\|([^<>]{0,200}))?>")
_LINK = re.compile(r"<((?:https?|mailto|tel):[^|<>\s]{1,2000})(?:\|([^<>]{0,500}))?>")


def message_ref(channel: str, ts: str) -> str:
    return f"{channel}:{ts}"


def parse_ref(ref: str) -> tuple[str, str]:
    channel, sep, ts = ref.partition(":")
    if not sep or not channel or not ts:
        raise ValueError(f"not a Slack message reference: {ref!r} (expected channel:ts)")
    return channel, ts


@dataclass(frozen=True)
class BotIdentity:
    """Who the bot is (from ``auth.test``): its own mentions and messages are recognised by it."""

    user_id: str
    bot_id: str | None = None
    mention: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Starts with a literal (a leading \s* would rescan long runs of spaces from every position).
        object.__setattr__(self, "mention", re.compile(rf"<@{re.escape(self.user_id)}(?:\|[^<>]{{0,200}})?>"))

    def mentioned_in(self, text: str) -> bool:
        return self.mention.search(text) is not None

    def strip_mention(self, text: str) -> str:
        return " ".join(part.strip() for part in self.mention.split(text) if part.strip())

    def wrote(self, message: dict[str, Any]) -> bool:
        return message.get("user") == self.user_id or (self.bot_id is not None and message.get("bot_id") == self.bot_id)


@dataclass(frozen=True)
class Post:
    """A message event worth answering: who wrote what, where."""

    channel: str
    ts: str
    user: str
    text: str
    """As Slack sent it (``<@U…>`` mentions, ``&lt;`` escapes)."""
    thread_ts: str | None
    """The thread's parent when this is a reply in a thread."""
    direct: bool
    mentioned: bool
    files: tuple[dict[str, Any], ...] = ()

    @property
    def key(self) -> str:
        """``channel:ts``: the same post arriving as ``app_mention`` and ``message``, or retried, has one key."""
        return message_ref(self.channel, self.ts)


def post_from_event(event: dict[str, Any], me: BotIdentity) -> Post | None:
    """An ``app_mention`` or ``message`` event from a person, or None (bots, edits, other subtypes)."""
    if event.get("type") not in ("app_mention", "message") or event.get("subtype") not in ACCEPTED_SUBTYPES:
        return None
    user, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
    if not user or not channel or not ts or event.get("bot_id") or event.get("edited") or me.wrote(event):
        return None
    text = event.get("text") or ""
    thread_ts = event.get("thread_ts")
    channel_type = event.get("channel_type")
    return Post(
        channel=channel,
        ts=ts,
        user=user,
        text=text,
        thread_ts=thread_ts if thread_ts and thread_ts != ts else None,
        direct=channel_type == "im" or (channel_type is None and channel.startswith("D")),
        mentioned=event["type"] == "app_mention" or me.mentioned_in(text),
        files=tuple(event.get("files") or ()),
    )


def chat_key(post: Post, *, reply_in_thread: bool) -> ChatKey:
    """Conventions: a top-level mention starts a thread keyed by its ``ts``; DMs are unthreaded."""
    if post.thread_ts is not None:
        thread: str | None = post.thread_ts
    elif post.direct or not reply_in_thread:
        thread = None
    else:
        thread = post.ts
    return ChatKey(channel=CHANNEL, chat_id=post.channel, thread_id=thread)


def inbound_message(
    post: Post, me: BotIdentity, *, sender_name: str, in_bot_thread: bool, reply_in_thread: bool
) -> InboundMessage:
    """A reply in a thread the bot takes part in counts as addressed to the bot, like a mention."""
    return InboundMessage(
        id=post.key,
        chat=chat_key(post, reply_in_thread=reply_in_thread),
        sender=Sender(id=post.user, name=sender_name),
        text=readable_text(me.strip_mention(post.text)),
        is_direct=post.direct,
        mentions_bot=post.mentioned or in_bot_thread,
        reply_to=message_ref(post.channel, post.thread_ts) if post.thread_ts else None,
        attachments=attachments(post.files),
    )


def readable_text(text: str) -> str:
    """Slack's message markup as plain text: ``<@U1|ann>`` → ``@ann``, ``<url|label>`` → ``[label](url)``."""
    text = _USER.sub(lambda m: "@" + (m[2] or m[1]), text)
    text = _CONVERSATION.sub(lambda m: "#" + (m[2] or m[1]), text)
    text = _SPECIAL.sub(lambda m: "@" + m[1], text)
    text = _GROUP.sub(lambda m: "@" + (m[2] or m[1]), text)
    text = _LINK.sub(_link, text)
    return html.unescape(text).strip()


def _link(m: re.Match[str]) -> str:
    url, label = m[1], m[2]
    if not label or label == url or url.endswith(":" + label):
        return label or url
    return f"[{label}]({url})"


def attachments(files: tuple[dict[str, Any], ...]) -> tuple[Attachment, ...]:
    out = []
    for f in files:
        mime = f.get("mimetype") or None
        major = mime.split("/", 1)[0] if mime else ""
        out.append(
            Attachment(
                kind=major if major in ("image", "audio", "video") else "file",
                name=f.get("name") or f.get("title"),
                mime_type=mime,
                size=f.get("size"),
                # The download URL (with the bot token); a file shared from elsewhere may have only url_private.
                ref=f.get("url_private_download") or f.get("url_private") or f.get("id"),
            )
        )
    return tuple(out)


def action_from_payload(body: dict[str, Any]) -> Action | None:
    """A ``block_actions`` press on one of our buttons (it carries a ``value``), or None."""
    pressed = [a for a in body.get("actions") or () if a.get("value") is not None]
    user = body.get("user") or {}
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    ts = container.get("message_ts") or message.get("ts")
    if not pressed or not user.get("id") or not channel or not ts:
        return None
    action = pressed[0]
    # The prompt is in a thread when it has a parent; a top-level prompt that later got replies is its own
    # thread's parent (thread_ts == ts) but still belongs to the unthreaded chat.
    thread = message.get("thread_ts") or container.get("thread_ts")
    return Action(
        id=body.get("trigger_id") or f"{channel}:{action.get('action_ts', ts)}:{user['id']}",
        chat=ChatKey(channel=CHANNEL, chat_id=channel, thread_id=thread if thread and thread != ts else None),
        sender=Sender(id=user["id"], name=user.get("name") or user.get("username") or ""),
        payload=action["value"],
        message_ref=message_ref(channel, ts),
        platform={
            "response_url": body.get("response_url"),
            "trigger_id": body.get("trigger_id"),
            "action_id": action.get("action_id"),
        },
    )


def command_message(body: dict[str, Any]) -> InboundMessage:
    """``/bot <command> …`` → the text ``/<command> …`` (Slack reserves other ``/`` words); ``/bot`` → ``/help``."""
    words = (body.get("text") or "").strip()
    text = words if words.startswith("/") else f"/{words}" if words else "/help"
    channel = body.get("channel_id") or ""
    return InboundMessage(
        id=f"command:{body.get('trigger_id') or body.get('command_ts') or channel}",
        chat=ChatKey(channel=CHANNEL, chat_id=channel),
        sender=Sender(id=body.get("user_id") or "", name=body.get("user_name") or ""),
        text=text,
        is_direct=channel.startswith("D") or body.get("channel_name") == "directmessage",
        mentions_bot=True,
    )
