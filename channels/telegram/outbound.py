"""Telegram's outbound side: a message rendered into chunks and posted (in order per chat, quoting what it answers
in a group), a prompt edited in place, a private chat's native draft, and "typing…" kept up until the answer.

Everything goes through :class:`~channels.telegram.delivery.Api` (flood control, retries); the HTTP session is
counted in use (:meth:`TelegramOutbound.session`) so a ``send`` after ``stop`` closes it again when done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator

from aiogram import Bot
from aiogram.exceptions import TelegramAPIError, TelegramBadRequest, TelegramMigrateToChat
from aiogram.methods import EditMessageReplyMarkup, EditMessageText, SendChatAction, SendMessageDraft
from aiogram.types import InlineKeyboardMarkup, Message

from bot.clock import Clock
from bot.events import ChatKey, OutboundMessage
from channels.formatting import TelegramText, rendered
from channels.telegram.delivery import Api, Sent, TelegramDeliveryError, keep_response_model
from channels.telegram.inbound import chat_id_of, message_ref, parse_ref
from channels.telegram.media import fits_caption, send_file
from channels.telegram.rendering import chunks_of, entities_of, keyboard, text_message

log = logging.getLogger(__name__)

TYPING_REFRESH_S = 4.0
"""Telegram shows "typing…" for 5 s; refresh a little earlier."""
TYPING_MAX_S = 120.0
KEEP = 5000
"""Recent reply targets (and chat locks) remembered."""


class TelegramOutbound:
    """Sends for :class:`~channels.telegram.adapter.TelegramChannel` (its ``send``), with the per-chat send locks,
    the typing indicators kept up, and the message ids of recent group messages (what an answer quotes)."""

    def __init__(self, bot: Bot, api: Api, clock: Clock) -> None:
        self.bot = bot
        self.api = api
        self.clock = clock
        self.stopped = False
        """Set by the adapter's ``stop``: no typing then, and the session closes once the last send is done."""
        self._typing: dict[str, asyncio.Task[None]] = {}
        self._chat_locks: dict[str, asyncio.Lock] = {}
        self._replies: OrderedDict[str, int] = OrderedDict()
        self._in_flight = 0

    async def stop(self) -> None:
        """Stop every typing indicator; close the HTTP session unless a send still uses it."""
        self.stopped = True
        tasks, self._typing = list(self._typing.values()), {}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._in_flight == 0:
            await self._close_session()

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """The HTTP session in use for a call (after ``stop``, the last one to finish closes it)."""
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1
            if self.stopped and self._in_flight == 0:
                await self._close_session()

    async def _close_session(self) -> None:
        self.api.close_connections()
        await self.bot.session.close()

    def remember_reply_target(self, event_id: str, message: Message) -> None:
        """A group message that became event ``event_id``: its answer quotes it."""
        if message.chat.type == "private":
            return  # a private chat needs no quote to know what is answered
        self._replies[event_id] = message.message_id
        while len(self._replies) > KEEP:
            self._replies.popitem(last=False)

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing":
            if not self.stopped:
                self._start_typing(message.chat)
            return None
        self._stop_typing(message.chat)
        async with self.session(), self._lock(message.chat.chat_id):
            target = chat_id_of(message.chat.chat_id)
            if message.kind == "draft" and isinstance(target, int) and target > 0:
                return await self._draft(message, target)
            if message.edit_of is not None:
                return await self._edit(message, message.edit_of)
            return await self._post(message)

    def _lock(self, chat_id: str) -> asyncio.Lock:
        """Messages to one chat go one at a time, so chunks stay in order and a flood wait holds the rest."""
        lock = self._chat_locks.get(chat_id)
        if lock is None:
            if len(self._chat_locks) > KEEP:
                self._chat_locks = {k: v for k, v in self._chat_locks.items() if v.locked()}
            lock = self._chat_locks[chat_id] = asyncio.Lock()
        return lock

    async def _post(self, message: OutboundMessage) -> str | None:
        chunks: list[TelegramText] = await rendered(chunks_of, message.text)
        caption = chunks.pop() if message.file and chunks and fits_caption(chunks[-1]) else None
        if not chunks and not message.file:
            if not message.buttons:
                return None
            chunks = [TelegramText("…")]
        chat_id = chat_id_of(message.chat.chat_id)
        thread = int(message.chat.thread_id) if message.chat.thread_id else None
        reply = self._replies.get(message.reply_to) if message.reply_to else None
        markup = keyboard(message.buttons) if message.buttons else None
        sent: Sent | None = None
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1 and message.file is None
            sent = await self._send_chunk(
                chat_id,
                thread,
                chunk,
                markup=markup if last else None,
                reply=reply if i == 0 else None,
                silent=message.kind == "notice",
            )
            chat_id = sent.chat_id  # a group upgraded to a supergroup has a new id
        if message.file is not None:
            posted = await send_file(
                self.api, chat_id, thread, message.file, caption, markup, reply if not chunks else None
            )
            sent = Sent(posted.chat.id, posted.message_id)
        assert sent is not None
        return message_ref(sent.chat_id, sent.message_id)

    async def _send_chunk(
        self,
        chat_id: int | str,
        thread: int | None,
        chunk: TelegramText,
        *,
        markup: InlineKeyboardMarkup | None,
        reply: int | None,
        silent: bool,
    ) -> Sent:
        for _ in range(5):
            payload, method = text_message(chat_id, chunk, thread=thread, reply=reply, markup=markup, silent=silent)
            try:
                return await self.api.send_message(payload, method)
            except TelegramMigrateToChat as exc:
                chat_id = exc.migrate_to_chat_id
            except TelegramBadRequest as exc:
                problem = exc.message.lower()
                if "thread not found" in problem and thread is not None:
                    thread = None  # the topic was deleted: answer in the chat
                elif "replied not found" in problem and reply is not None:
                    reply = None
                else:
                    raise TelegramDeliveryError(f"telegram sendMessage to {chat_id}: {exc.message}") from None
            except TelegramAPIError as exc:
                raise TelegramDeliveryError(f"telegram sendMessage to {chat_id}: {exc.message}") from None
        raise TelegramDeliveryError(f"telegram sendMessage to {chat_id}: gave up after repeated errors")

    async def _draft(self, message: OutboundMessage, chat_id: int) -> str:
        """A private chat's answer as it is written: a native draft (``sendMessageDraft``), replaced by the
        message when it is sent.  Best effort: a refused draft is logged, and the answer still comes."""
        draft_id = int(message.edit_of.rsplit(":", 1)[1]) if message.edit_of else secrets.randbelow(2**31 - 1) + 1
        chunks = await rendered(chunks_of, message.text)
        thread = int(message.chat.thread_id) if message.chat.thread_id else None
        draft = chunks[0] if chunks else TelegramText("…")
        method = SendMessageDraft(
            chat_id=chat_id,
            draft_id=draft_id,
            text=draft.text,
            entities=entities_of(draft),
            parse_mode=None,
            message_thread_id=thread,
        )
        try:
            await self.api.call(method, chat=str(chat_id), paced=True)
        except TelegramAPIError as exc:
            log.info("telegram: draft for %s refused: %s", chat_id, self.api.redact(str(exc)))
        return f"draft:{chat_id}:{draft_id}"

    async def _edit(self, message: OutboundMessage, ref: str) -> str | None:
        """Edit a message's text and replace its buttons (none: removed); a vanished message is sent anew."""
        chat_id, message_id = parse_ref(ref)
        markup = keyboard(message.buttons) or InlineKeyboardMarkup(inline_keyboard=[])
        chunks = await rendered(chunks_of, message.text)
        # A prompt longer than one message went out in chunks and ``ref`` is the last one: it gets the tail.
        tail = chunks[-1] if chunks else None
        method: EditMessageText | EditMessageReplyMarkup
        if tail is not None:
            method = EditMessageText(
                chat_id=chat_id,
                message_id=message_id,
                text=tail.text,
                entities=entities_of(tail),
                parse_mode=None,
                reply_markup=markup,
            )
        else:
            method = EditMessageReplyMarkup(chat_id=chat_id, message_id=message_id, reply_markup=markup)
        try:
            await self.api.call(method, chat=str(chat_id), paced=True)
            return ref
        except TelegramBadRequest as exc:
            problem = exc.message.lower()
            if "message is not modified" in problem:
                return ref
            if "message to edit not found" in problem or "message can't be edited" in problem:
                log.info("telegram: message %s cannot be edited (%s); sending it anew", ref, exc.message)
                return await self._post(message.model_copy(update={"edit_of": None}))
            raise TelegramDeliveryError(f"telegram edit of {ref}: {exc.message}") from None
        except TelegramAPIError as exc:
            raise TelegramDeliveryError(f"telegram edit of {ref}: {exc.message}") from None

    # -- typing ---------------------------------------------------------------------------

    def _start_typing(self, chat: ChatKey) -> None:
        key = str(chat)
        old = self._typing.pop(key, None)
        if old is not None:
            old.cancel()
        self._typing[key] = asyncio.create_task(self._keep_typing(chat), name=f"telegram-typing:{key}")

    def _stop_typing(self, chat: ChatKey) -> None:
        task = self._typing.pop(str(chat), None)
        if task is not None:
            task.cancel()

    async def _keep_typing(self, chat: ChatKey) -> None:
        method = SendChatAction(
            chat_id=chat_id_of(chat.chat_id),
            action="typing",
            message_thread_id=int(chat.thread_id) if chat.thread_id else None,
        )
        deadline = self.clock.monotonic() + TYPING_MAX_S
        try:
            while self.clock.monotonic() < deadline:
                try:
                    keep_response_model(method)
                    await self.bot(method)
                except TelegramAPIError as exc:
                    log.debug("telegram: typing indicator failed: %s", self.api.redact(str(exc)))
                await self.clock.sleep(TYPING_REFRESH_S)
        finally:
            if self._typing.get(str(chat)) is asyncio.current_task():
                del self._typing[str(chat)]
