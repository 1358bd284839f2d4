"""The Telegram adapter on aiogram 3: updates in (polling or webhook), messages, edits and typing out."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import PRODUCTION, TelegramAPIServer
from aiogram.exceptions import (
    TelegramAPIError,
    TelegramBadRequest,
    TelegramMigrateToChat,
    TelegramRetryAfter,
    TelegramUnauthorizedError,
)
from aiogram.methods import (
    AnswerCallbackQuery,
    DeleteWebhook,
    EditMessageReplyMarkup,
    EditMessageText,
    GetMe,
    GetUpdates,
    SendChatAction,
    SendMessageDraft,
    SetWebhook,
)
from aiogram.types import (
    InlineKeyboardMarkup,
    Message,
    Update,
)
from aiogram.utils.token import TokenValidationError
from aiohttp import web
from pydantic import ValidationError

from bot.clock import SYSTEM_CLOCK, Clock
from bot.errors import ConfigError
from bot.events import Action, ChatKey, InboundEvent, OutboundMessage
from bot.inbox import Inbox, InboxClosed, NotStored
from bot.retry import Outage, retry
from channels.base import BuildContext
from channels.formatting import TelegramText, rendered
from channels.telegram.delivery import Api, Sent, TelegramDeliveryError, keep_response_model, poll_delays
from channels.telegram.inbound import (
    UPDATE_TYPES,
    BotIdentity,
    action_event,
    chat_id_of,
    message_event,
    message_ref,
    parse_ref,
)
from channels.telegram.media import fits_caption, send_file
from channels.telegram.menu import sync_commands
from channels.telegram.rendering import TEXT_LIMIT, chunks_of, entities_of, keyboard, text_message
from channels.telegram.settings import TelegramSettings

log = logging.getLogger(__name__)

TYPING_REFRESH_S = 4.0
"""Telegram shows "typing…" for 5 s; refresh a little earlier."""
TYPING_MAX_S = 120.0
NOT_STORED_PAUSE_S = 1.0
"""After the inbox could not store a batch: the pause before it is fetched again."""
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
ACCEPTED_TOAST = "✓"
_KEEP = 5000
"""Recent update ids (and their message ids, for replies) remembered."""


class TelegramChannel:
    """Telegram through the Bot API (aiogram 3): private chats, groups, forum topics, inline-button approvals.

    Inbound: long polling (the webhook is deleted first; unconfirmed updates are kept by Telegram while the
    bot is down) or a webhook on the shared HTTP server.  Every update becomes one event whose id is the
    ``update_id``, the gateway's de-duplication key.  "Accepted" means committed: the polling offset moves
    past a batch only after the inbox stored it, and a webhook request is answered 200 only then (503 while
    starting or stopping, so Telegram sends it again).  Outbound: the model's Markdown as text + entities (no
    ``parse_mode``), split at 4,096 UTF-16 units outside inline entities, buttons as an inline keyboard,
    prompts edited in place.
    """

    name = "telegram"
    text_limit = TEXT_LIMIT
    """The longest text one message holds (a longer confirmation is shown in full on request)."""

    def __init__(
        self, cfg: TelegramSettings, *, on_rate_limit: Callable[[], None] | None = None, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        """``on_rate_limit``: called for each 429 (flood control) Telegram answers; ``clock``: what pacing,
        retries, polling back-off and the typing refresh wait on."""
        self.cfg = cfg
        self.clock = clock
        server = TelegramAPIServer.from_base(cfg.api_base) if cfg.api_base else PRODUCTION
        try:
            self.bot = Bot(cfg.token, session=AiohttpSession(api=server))
        except TokenValidationError:
            raise ConfigError("channels.telegram.token is not a bot token (expected 123456:ABC…)") from None
        self.api = Api(self.bot, on_rate_limit, clock)
        self.me: BotIdentity | None = None
        self._inbox: Inbox | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._typing: dict[str, asyncio.Task[None]] = {}
        self._chat_locks: dict[str, asyncio.Lock] = {}
        self._replies: OrderedDict[str, int] = OrderedDict()
        self._in_flight = 0
        self._stopped = False

    @property
    def needs_http(self) -> bool:
        return self.cfg.mode == "webhook"

    @property
    def exclusive_key(self) -> str | None:  # getUpdates serves one poller per bot (a second gets 409 Conflict)
        return f"telegram:{self.cfg.token.split(':', 1)[0]}" if self.cfg.mode == "polling" else None

    def mount(self, http: Any) -> None:
        """Add the webhook route to the shared HTTP server (before it starts)."""
        http.app.router.add_post(self.cfg.webhook.path, self._webhook)

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self, inbox: Inbox) -> None:
        self._stopped = False
        try:
            me = await self.api.call(GetMe())
        except TelegramUnauthorizedError:
            raise ConfigError("channels.telegram.token was rejected by Telegram (401 Unauthorized)") from None
        self.me = BotIdentity.from_user(me)
        if self.cfg.commands_menu:
            await sync_commands(self.api)
        self._inbox = inbox
        if self.cfg.mode == "webhook":
            await self._register_webhook()
        else:
            # A leftover webhook makes getUpdates fail; pending updates stay (they are answered now).
            await self.api.call(DeleteWebhook(drop_pending_updates=False))
            self._tasks.append(asyncio.create_task(self._poll(), name="telegram-polling"))
        log.info("telegram: started as @%s (%s)", self.me.username, self.cfg.mode)

    async def stop(self) -> None:
        """Stop receiving and close the HTTP session (a later ``send`` reopens and closes it again)."""
        self._stopped = True
        self._inbox = None
        tasks = [*self._tasks, *self._typing.values()]
        self._tasks, self._typing = [], {}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._in_flight == 0:
            await self.bot.session.close()

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[None]:
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1
            if self._stopped and self._in_flight == 0:
                await self.bot.session.close()

    async def _register_webhook(self) -> None:
        if not self.cfg.webhook.url:
            log.info("telegram: webhook mode without webhook.url: assuming it is registered elsewhere")
            return
        await self.api.call(
            SetWebhook(
                url=self.cfg.webhook.url,
                secret_token=self.cfg.webhook.secret_token,
                allowed_updates=list(UPDATE_TYPES),
                drop_pending_updates=False,
            )
        )

    # -- inbound --------------------------------------------------------------------------

    async def _poll(self) -> None:
        offset: int | None = None
        timeout = self.cfg.poll_timeout_s
        where = self.cfg.api_base or "api.telegram.org"
        outage = Outage(
            log, f"telegram: cannot poll {where}", 60.0, self.api.redact
        )  # told once per change, not at every try

        def failed(exc: Exception, _attempt: int, _delay: float) -> None:
            if isinstance(exc, TelegramRetryAfter):
                self.api.limited()
            else:
                outage.failed(exc)

        async def get_updates() -> list[Update]:
            method = GetUpdates(offset=offset, timeout=timeout, allowed_updates=list(UPDATE_TYPES))
            keep_response_model(method)
            return await self.bot(method, request_timeout=timeout + 15)

        while True:
            updates = await retry(get_updates, poll_delays(), clock=self.clock, on_retry=failed)
            outage.recovered()
            if not updates:
                continue
            try:
                await self._take(updates)
            except InboxClosed:
                return  # not confirmed: Telegram hands the batch to the next start
            except NotStored as exc:
                log.error("telegram: could not store %d updates; they come again: %s", len(updates), exc)
                await self.clock.sleep(NOT_STORED_PAUSE_S)
                continue
            # Confirmed by the next getUpdates: only now, after the inbox committed the batch.
            offset = max(u.update_id for u in updates) + 1

    async def _webhook(self, request: web.Request) -> web.Response:
        """Check the secret, commit the update, then answer 200 (the answer itself comes later)."""
        given = request.headers.get(SECRET_HEADER, "")
        expected = self.cfg.webhook.secret_token
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            log.warning("telegram: webhook request with a wrong secret token from %s", request.remote)
            return web.Response(status=401, text="wrong secret token")
        if self._inbox is None:
            return web.Response(status=503, text="not ready")  # Telegram retries later
        try:
            update = Update.model_validate_json(await request.read(), context={"bot": self.bot})
        except (ValueError, ValidationError, RecursionError):
            return web.Response(status=400, text="not an update")
        try:
            await self._take([update])
        except InboxClosed:
            return web.Response(status=503, text="shutting down")
        except NotStored as exc:
            log.error("telegram: could not store update %s; Telegram will retry: %s", update.update_id, exc)
            return web.Response(status=503, text="not stored")
        return web.Response(status=200)

    async def _take(self, updates: list[Update]) -> None:
        """Hand a batch of updates to the inbox; returns once every one is committed (or refused)."""
        inbox = self._inbox
        if inbox is None:
            raise InboxClosed("the Telegram channel is stopping")
        assert self.me is not None
        events: list[InboundEvent] = []
        for update in updates:
            try:
                if update.message is not None:
                    event = message_event(update.update_id, update.message, self.me)
                    if event is not None:
                        self._remember_reply_target(event.id, update.message)
                        events.append(event)
                elif update.callback_query is not None:
                    action = await self._on_press(update)
                    if action is not None:
                        events.append(action)
            except Exception:
                # The receive loop's boundary: one bad update is logged and skipped, the stream goes on.
                log.exception("telegram: cannot handle update %s", update.update_id)
        if events:
            await inbox.submit_many(events)

    async def _on_press(self, update: Update) -> Action | None:
        """A press to hand on, after answering it at once (a toast); None when it is refused."""
        query = update.callback_query
        assert query is not None
        action = action_event(update.update_id, query)
        if action is None:
            await self._answer(query.id, None)
            return None
        refusal = None
        if self._inbox is not None:
            try:
                refusal = await self._inbox.check_press(action)
            except Exception:
                # The pre-check only picks the toast; the gateway checks again, authoritatively, in the chat's turn.
                log.exception("telegram: checking a button press failed")
        # Answer first: Telegram shows a spinner on the button until the query is answered.
        await self._answer(query.id, refusal or ACCEPTED_TOAST)
        return action if refusal is None else None

    async def _answer(self, query_id: str, text: str | None) -> None:
        async with self._session():
            try:
                await self.api.call(AnswerCallbackQuery(callback_query_id=query_id, text=text))
            except (TelegramAPIError, TelegramDeliveryError) as exc:
                # "query is too old" after a long downtime: the press still counts.
                log.info("telegram: could not answer a button press: %s", self.api.redact(str(exc)))

    def _remember_reply_target(self, event_id: str, message: Message) -> None:
        if message.chat.type == "private":
            return  # a private chat needs no quote to know what is answered
        self._replies[event_id] = message.message_id
        while len(self._replies) > _KEEP:
            self._replies.popitem(last=False)

    # -- outbound -------------------------------------------------------------------------

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing":
            if not self._stopped:
                self._start_typing(message.chat)
            return None
        self._stop_typing(message.chat)
        async with self._session(), self._lock(message.chat.chat_id):
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
            if len(self._chat_locks) > _KEEP:
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


def build(settings: TelegramSettings, context: BuildContext) -> TelegramChannel:
    """The channel plugin's factory (:mod:`channels.registry`)."""
    clock = context.clock
    return TelegramChannel(settings, on_rate_limit=context.limiter("telegram"), clock=clock)
