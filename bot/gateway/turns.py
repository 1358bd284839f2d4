"""The chats whose turn is running work that ``/cancel`` (or ``/stop``) may cut short, and what is urgent.

The bus is built with :meth:`ChatTurns.is_urgent` as its urgency predicate (a port injected at construction):
a ``/cancel`` or ``/stop`` for a chat that is busy skips the chat's queue, so it can stop what holds the chat.
The supervisor marks a chat busy while its turn runs a request (:meth:`ChatTurns.start`) and asks it to stop
one (:meth:`ChatTurns.stop`).
"""

from __future__ import annotations

import asyncio

from bot.commands.registry import parse_command
from bot.events import ChatKey, InboundEvent, InboundMessage

STOP_COMMANDS = frozenset({"cancel", "stop"})


class ChatTurns:
    """The task running each busy chat's request, and which of them were asked to stop."""

    def __init__(self, bot_name: str) -> None:
        self.bot_names = frozenset({bot_name.lower()})
        self._busy: dict[ChatKey, asyncio.Task[object]] = {}
        self._requesters: dict[ChatKey, str] = {}
        self._stopping: set[ChatKey] = set()

    def is_urgent(self, event: InboundEvent) -> bool:
        """``/cancel`` or ``/stop`` while the chat is busy: handled at once, outside the chat's queue."""
        if not isinstance(event, InboundMessage) or not event.text.lstrip().startswith("/") or not self._busy:
            return False
        parsed = parse_command(event.text, self.bot_names)
        return parsed is not None and parsed[0] in STOP_COMMANDS and event.chat in self._busy

    def busy(self, chat: ChatKey) -> bool:
        return chat in self._busy

    def start(self, chat: ChatKey, requester: str) -> asyncio.Task[object]:
        """The current task runs ``chat``'s request, made by ``requester`` (until :meth:`end`)."""
        task = asyncio.current_task()
        assert task is not None
        self._busy[chat] = task
        self._requesters[chat] = requester
        return task

    def requester(self, chat: ChatKey) -> str | None:
        """Who made the request running in ``chat`` (None: nothing runs there)."""
        return self._requesters.get(chat) if chat in self._busy else None

    def end(self, chat: ChatKey) -> None:
        """``chat``'s request is over, stopped or not."""
        self._busy.pop(chat, None)
        self._requesters.pop(chat, None)
        self._stopping.discard(chat)

    def stopping(self, chat: ChatKey) -> bool:
        """Whether a cancellation of ``chat``'s turn was asked for by ``/cancel`` (not a shutdown)."""
        return chat in self._stopping

    def done(self, chat: ChatKey) -> None:
        """Nothing left to stop in ``chat``: what follows must not be cut short by another ``/cancel``."""
        self._busy.pop(chat, None)

    def stop(self, chat: ChatKey) -> bool:
        """Cancel ``chat``'s running request; False when nothing runs there."""
        task = self._busy.get(chat)
        if task is None:
            return False
        self._stopping.add(chat)
        task.cancel()
        return True
