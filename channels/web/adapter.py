"""The web chat adapter: each signed-in console user's direct chat ``web:<name>``, kept for the page.

Its "platform" is the console's Chat page (:mod:`bot.web.chat_page`): the page hands over what a person typed,
pressed or attached (:meth:`WebChatChannel.say`, :meth:`~WebChatChannel.press`), and watches a chat
(:meth:`~WebChatChannel.watch`) to show what the bot sends as it comes.  Like every adapter, a message is
"received" (the page answered 202) only after :meth:`Inbox.submit` committed it; a press is first checked
(:meth:`Inbox.check_press`: a forged, stale or foreign payload is refused at once, as a toast) and checked again,
authoritatively, in the chat's turn.

What a chat shows lives in memory (the last ``keep_messages`` items): each item has a reference (what ``send``
returns, so a preview or a prompt is edited in place) and a sequence number that grows with every change, so a
page that reconnects asks for what changed after the last number it saw.  The numbers belong to this process
(``epoch``): a page that saw another process's numbers gets the whole chat again.  After a restart nothing is
in memory: the page seeds a chat from its stored history (:meth:`~WebChatChannel.seed`), and the gateway sends
every pending prompt again, with its buttons (``forgets_messages``), so they survive a restart.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import secrets
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.events import Action, Attachment, ChatKey, InboundMessage, OutboundMessage, Sender
from bot.inbox import Inbox, InboxClosed, Receipt
from channels.base import BuildContext
from channels.formatting import plain_text
from channels.terminal import terminal_safe
from channels.web.settings import WebChatSettings

log = logging.getLogger(__name__)

TEXT_LIMIT = 16_000
"""The longest text one message holds here (a browser has no limit; an answer longer is split by the gateway)."""
QUEUE = 1_000
"""Changes a watching page may fall behind by; past that its stream ends and it asks again for what it missed."""

Event = tuple[str, str, dict[str, Any]]
"""What a watcher gets: (``item`` | ``typing`` | ``end``, event id ``epoch.seq`` or "", data)."""


@dataclass
class Item:
    """One message of a chat as the page shows it."""

    ref: str
    role: str
    """``user``, ``bot`` or ``notice``."""
    text: str
    seq: int
    draft: bool = False
    buttons: list[list[dict[str, str]]] = field(default_factory=list)
    files: list[dict[str, str]] = field(default_factory=list)
    """``{"id", "name", "kind"}``: downloadable by the chat's person through the page."""

    def data(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "role": self.role,
            "text": self.text,
            "draft": self.draft,
            "buttons": self.buttons,
            "files": self.files,
        }


@dataclass
class _Chat:
    items: OrderedDict[str, Item] = field(default_factory=OrderedDict)
    files: dict[str, tuple[str, str]] = field(default_factory=dict)
    """File id → (path, name)."""
    watchers: set[asyncio.Queue[Event]] = field(default_factory=set)
    seeded: bool = False


def shown(text: str) -> str:
    """What the page prints of the bot's markdown: plain text, its controls and bidi marks written out."""
    return terminal_safe(plain_text(text)) if text else ""


class WebChatChannel:
    name = "web"
    text_limit = TEXT_LIMIT
    forgets_messages = True
    """Pages keep nothing across a restart: the gateway sends every pending prompt again at start."""
    prints_as_written = True
    """An answer streams to the page piece by piece (each preview carries all the text so far)."""

    def __init__(self, settings: WebChatSettings | None = None) -> None:
        self.settings = settings or WebChatSettings()
        self.epoch = secrets.token_hex(4)
        """This process's numbering of changes (a page that saw another's gets the whole chat again)."""
        self.attached = False
        """Set by the console's Chat page when it is built (no page: nobody can reach this channel)."""
        self._inbox: Inbox | None = None
        self._chats: dict[str, _Chat] = {}
        self._seq = itertools.count(1)
        self._ids = itertools.count(1)

    # -- the channel -----------------------------------------------------------------------

    async def start(self, inbox: Inbox) -> None:
        self._inbox = inbox
        if not self.attached:
            log.warning(
                "channel web: the web console is off, so nobody can reach this chat: turn on web.enabled "
                "(with web.users or BOT_WEB__TOKEN), or set channels.web.enabled: false"
            )

    async def stop(self) -> None:
        self._inbox = None
        for chat in self._chats.values():
            for queue in list(chat.watchers):
                self._end(chat, queue)

    async def send(self, message: OutboundMessage) -> str | None:
        chat = self._chat(message.chat.chat_id)
        if message.kind == "typing":
            self._tell(chat, ("typing", "", {}))
            return None
        buttons = [[{"label": shown(b.label), "payload": b.payload} for b in row] for row in message.buttons]
        files = []
        if message.file is not None:
            file_id = secrets.token_urlsafe(12)
            chat.files[file_id] = (message.file.path, message.file.name)
            files.append({"id": file_id, "name": shown(message.file.name), "kind": message.file.kind})
        item = chat.items.get(message.edit_of) if message.edit_of else None
        if item is None:
            role = "notice" if message.kind == "notice" else "bot"
            item = self._add(chat, role, shown(message.text), buttons=buttons, files=files)
        else:  # a preview growing, a final answer replacing it, a prompt edited after it was answered
            item.text, item.buttons, item.seq = shown(message.text), buttons, next(self._seq)
            item.files = files or item.files
        item.draft = message.kind == "draft"
        self._tell(chat, ("item", self._id(item.seq), item.data()))
        return item.ref

    # -- what the page hands over ------------------------------------------------------------

    def sender(self, user: str) -> Sender:
        """The signed-in console user as a sender (its rights come from the gateway's access policy)."""
        return Sender(id=user, name=user)

    def chat_key(self, user: str) -> ChatKey:
        return ChatKey(channel="web", chat_id=user)

    async def say(self, user: str, text: str, attachments: Sequence[tuple[Attachment, str]] = ()) -> Receipt:
        """``user`` wrote ``text`` (with files already stored: each an attachment and its path), shown at once;
        :class:`~bot.inbox.NotStored` when it was not committed (the message is taken back: send it again)."""
        inbox = self._inbox
        if inbox is None:
            raise InboxClosed("the web chat is not running")
        chat = self._chat(user)
        files = []
        for attachment, path in attachments:
            file_id = os.path.basename(path)  # the page stores each upload under a random name
            chat.files[file_id] = (path, attachment.name or "file")
            files.append({"id": file_id, "name": shown(attachment.name or "file"), "kind": attachment.kind})
        item = self._add(chat, "user", terminal_safe(text), files=files)
        self._tell(chat, ("item", self._id(item.seq), item.data()))
        event = InboundMessage(
            id=f"{self.epoch}-m{next(self._ids)}",
            chat=self.chat_key(user),
            sender=self.sender(user),
            text=text,
            is_direct=True,
            mentions_bot=True,
            attachments=tuple(a for a, _path in attachments),
        )
        try:
            return await inbox.submit(event)
        except Exception:
            self._take_back(chat, item)
            raise

    async def press(self, user: str, payload: str, ref: str | None) -> str | None:
        """``user`` pressed a button: why it is refused (said at once, nothing submitted), or None (submitted)."""
        inbox = self._inbox
        if inbox is None:
            raise InboxClosed("the web chat is not running")
        action = Action(
            id=f"{self.epoch}-p{next(self._ids)}",
            chat=self.chat_key(user),
            sender=self.sender(user),
            payload=payload,
            message_ref=ref,
        )
        refusal = await inbox.check_press(action)
        if refusal is not None:
            return refusal
        await inbox.submit(action)
        return None

    # -- what the page shows -----------------------------------------------------------------

    def seeded(self, user: str) -> bool:
        return self._chat(user).seeded

    def seed(self, user: str, history: Sequence[tuple[str, str]]) -> None:
        """The chat's stored history (role, text), before what this process showed of it (once per process;
        before any page watched it, so nothing seen is renumbered)."""
        chat = self._chat(user)
        if chat.seeded:
            return
        chat.seeded = True
        later = list(chat.items.values())
        chat.items.clear()
        for role, text in history[-self.settings.keep_messages :]:
            self._add(chat, role, shown(text) if role == "bot" else terminal_safe(text))
        for item in later:
            item.seq = next(self._seq)
            chat.items[item.ref] = item
        self._trim(chat)

    def watch(self, user: str, since: str) -> tuple[bool, list[Event], asyncio.Queue[Event]]:
        """What changed in ``user``'s chat after the event id ``since`` (all of it, and True, when that id is
        another process's or none), and a queue of the changes to come; :meth:`unwatch` it at the end."""
        chat = self._chat(user)
        epoch, _, number = since.partition(".")
        after = int(number) if epoch == self.epoch and number.isdigit() else 0
        changed = [item for item in chat.items.values() if item.seq > after]
        events: list[Event] = [("item", "", item.data()) for item in changed]
        top = max((item.seq for item in changed), default=after)
        events.append(("sync", self._id(top), {}))
        queue: asyncio.Queue[Event] = asyncio.Queue(QUEUE)
        chat.watchers.add(queue)
        return after == 0, events, queue

    def unwatch(self, user: str, queue: asyncio.Queue[Event]) -> None:
        self._chat(user).watchers.discard(queue)

    def file(self, user: str, file_id: str) -> tuple[str, str] | None:
        """(path, name) of a file shown in ``user``'s own chat; None for any other."""
        chat = self._chats.get(user)
        return chat.files.get(file_id) if chat is not None else None

    def pending_buttons(self, user: str) -> list[str]:
        """The payloads of the buttons ``user``'s chat shows now."""
        chat = self._chats.get(user)
        items = chat.items.values() if chat is not None else ()
        return [b["payload"] for item in items for row in item.buttons for b in row]

    # -- inside ------------------------------------------------------------------------------

    def _chat(self, user: str) -> _Chat:
        chat = self._chats.get(user)
        if chat is None:
            chat = self._chats[user] = _Chat()
        return chat

    def _add(
        self,
        chat: _Chat,
        role: str,
        text: str,
        *,
        buttons: list[list[dict[str, str]]] | None = None,
        files: list[dict[str, str]] | None = None,
    ) -> Item:
        item = Item(f"{self.epoch}-{next(self._ids)}", role, text, next(self._seq), buttons=buttons or [])
        item.files = files or []
        chat.items[item.ref] = item
        self._trim(chat)
        return item

    def _trim(self, chat: _Chat) -> None:
        while len(chat.items) > self.settings.keep_messages:
            _ref, old = chat.items.popitem(last=False)
            for file in old.files:
                chat.files.pop(file["id"], None)

    def _take_back(self, chat: _Chat, item: Item) -> None:
        chat.items.pop(item.ref, None)
        for file in item.files:
            chat.files.pop(file["id"], None)
        self._tell(chat, ("gone", self._id(next(self._seq)), {"ref": item.ref}))

    def _id(self, seq: int) -> str:
        return f"{self.epoch}.{seq}"

    def _tell(self, chat: _Chat, event: Event) -> None:
        for queue in list(chat.watchers):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:  # a page far behind: its stream ends, it reconnects and catches up
                self._end(chat, queue)

    def _end(self, chat: _Chat, queue: asyncio.Queue[Event]) -> None:
        chat.watchers.discard(queue)
        while not queue.empty():
            queue.get_nowait()
        queue.put_nowait(("end", "", {}))


def build(settings: WebChatSettings, context: BuildContext) -> WebChatChannel:
    """The channel plugin's factory (:mod:`channels.registry`)."""
    return WebChatChannel(settings)
