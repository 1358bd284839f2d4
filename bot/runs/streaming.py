"""An answer shown while the model writes it: a preview message, edited as the text grows, that the final
reply then replaces.

The preview (a native draft where the platform has them: Telegram private chats) goes out ``first_s`` after
the first text (an answer complete by then is simply sent: short and
non-streaming answers look as before), then is edited at most every ``every_s`` (platforms limit edits to
about one a second per chat; an edit that fails is logged and the next one carries all the text).  It ends
in ``…`` while more is coming.  The final reply is committed and delivered as usual, as an edit of the
preview when it fits in one message; a longer one puts its first part in the preview and the rest after it.  A tool
call or a pause mid-answer ends the preview where it is; history and traces hold only the final text.
"""

from __future__ import annotations

import asyncio
import logging

from bot.clock import SYSTEM_CLOCK, Clock
from bot.delivery import Delivery
from bot.events import ChatKey, OutboundMessage
from channels.formatting import split_markdown

log = logging.getLogger(__name__)

MORE = " …"
ROOM = 200
"""Characters kept free below the message limit for what rendering adds (bullets, escapes)."""


class ReplyStream:
    """The :class:`~agents.models.base.AnswerStream` of one run in one chat."""

    def __init__(
        self,
        delivery: Delivery,
        chat: ChatKey,
        *,
        reply_to: str | None,
        limit: int | None,
        first_s: float = 0.25,
        every_s: float = 1.0,
        more: str = MORE,
        terminal: bool = False,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``terminal``: a channel that prints every piece as it comes (no pauses, nothing appended)."""
        if terminal:
            first_s, every_s, more = 0, 0, ""
        self.delivery = delivery
        self.clock = clock
        self.chat = chat
        self.reply_to = reply_to
        self.limit = limit or 4000
        self.first_s = first_s
        self.every_s = every_s
        self.more = more
        """Appended to a preview while more is coming (nothing for a terminal, which prints only what is new)."""
        self.text = ""
        self.shown = ""
        self.ref: str | None = None
        self._pump: asyncio.Task[None] | None = None
        self._starting: asyncio.Handle | None = None
        """The pump's start, due in the next turn of the loop (an answer complete before then needs no task)."""
        self._more = asyncio.Event()
        self._sending = asyncio.Lock()

    async def write(self, delta: str) -> None:
        self.text += delta
        self._more.set()
        if self._pump is None and self._starting is None:
            self._starting = asyncio.get_running_loop().call_soon(self._start)

    def _start(self) -> None:
        self._starting = None
        self._pump = asyncio.create_task(self._run(), name=f"stream:{self.chat}")

    async def interrupt(self) -> None:
        """The text so far was not the answer: the preview keeps it (without ``…``); the next text starts anew.

        A native draft vanishes unless a message follows, so its text is then sent as a message."""
        await self._stop()
        if self.ref is not None and self.text:
            if _is_draft(self.ref):
                await self.delivery.send(OutboundMessage(chat=self.chat, text=self.text, reply_to=self.reply_to))
            else:
                await self._show(self.text, final=True)
        self.text, self.shown, self.ref = "", "", None

    async def final(self, reply: OutboundMessage) -> OutboundMessage:
        """The reply to commit: an edit of the preview when there is one and the answer fits in it."""
        await self._stop()
        if self.ref is None or _is_draft(self.ref):
            return reply  # a native draft is replaced by the message itself
        if reply.buttons:
            await self._show(self.text, final=True)
            return reply
        if len(reply.text) <= self.limit:
            return reply.model_copy(update={"edit_of": self.ref})
        # Longer than one message: the preview becomes its first part, the rest follows as the reply.
        first = split_markdown(reply.text, self.limit - ROOM)[0]
        if not reply.text.startswith(first):  # cut inside a code block: the preview keeps what it showed
            await self._show(self.text, final=True)
            return reply
        await self._show(first, final=True)
        return reply.model_copy(update={"text": reply.text[len(first) :].lstrip("\n")})

    async def close(self) -> None:
        """The run ended otherwise (failed, cancelled): no more previews."""
        await self._stop()

    async def _stop(self) -> None:
        if self._starting is not None:  # the whole answer came in one turn of the loop: no pump ever ran
            self._starting.cancel()
            self._starting = None
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
            self._pump = None
        async with self._sending:  # a preview in flight lands before what follows it
            pass

    async def _run(self) -> None:
        await self.clock.sleep(self.first_s)
        while True:
            self._more.clear()
            if self.text != self.shown:
                # Shielded: a preview being sent when the answer ends is not cut off mid-request (a platform
                # library's rate-limit bucket can stay taken by a cancelled request: discord.py then held the
                # final edit for its 30 s timeout). ``_stop`` waits for it through ``_sending``.
                await asyncio.shield(self._show(self.text, final=False))
            await self.clock.sleep(self.every_s)
            if self.text == self.shown:
                await self._more.wait()

    async def _show(self, text: str, *, final: bool) -> None:
        if final and len(text) <= self.limit:
            preview = text
        elif self.more:
            preview = text[: self.limit - len(self.more)].rstrip() + self.more
        else:
            preview = text
        async with self._sending:
            kind = "text" if final else "draft"
            if self.ref is None:
                message = OutboundMessage(chat=self.chat, text=preview, reply_to=self.reply_to, kind=kind)
                self.ref = await self.delivery.send(message)
                if self.ref is None:
                    log.info("chat %s: the answer's preview could not be sent; the answer comes whole", self.chat)
            else:
                await self.delivery.send(OutboundMessage(chat=self.chat, text=preview, edit_of=self.ref, kind=kind))
            self.shown = text


def _is_draft(ref: str) -> bool:
    return ref.startswith("draft:")
