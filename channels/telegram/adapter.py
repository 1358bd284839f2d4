"""The Telegram adapter on aiogram 3: its lifecycle and updates in (long polling or a webhook, each committed to the
inbox before Telegram is told); messages, edits, drafts and typing out are :mod:`channels.telegram.outbound`'s."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import PRODUCTION, TelegramAPIServer
from aiogram.exceptions import TelegramAPIError, TelegramRetryAfter, TelegramUnauthorizedError
from aiogram.methods import AnswerCallbackQuery, DeleteWebhook, GetMe, GetUpdates, SetWebhook
from aiogram.types import Update
from aiogram.utils.token import TokenValidationError
from aiohttp import web
from pydantic import ValidationError

from bot.clock import SYSTEM_CLOCK, Clock
from bot.errors import ConfigError
from bot.events import Action, InboundEvent, OutboundMessage
from bot.inbox import Inbox, InboxClosed, NotStored
from bot.retry import Outage, retry
from channels.base import BuildContext
from channels.telegram.delivery import Api, TelegramDeliveryError, keep_response_model, poll_delays
from channels.telegram.inbound import UPDATE_TYPES, BotIdentity, action_event, message_event, plain_private_event
from channels.telegram.menu import sync_commands
from channels.telegram.outbound import TelegramOutbound
from channels.telegram.rendering import TEXT_LIMIT
from channels.telegram.settings import TelegramSettings

log = logging.getLogger(__name__)

NOT_STORED_PAUSE_S = 1.0
"""After the inbox could not store a batch: the pause before it is fetched again."""
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
ACCEPTED_TOAST = "✓"


class TelegramChannel:
    """Telegram through the Bot API (aiogram 3): private chats, groups, forum topics, inline-button approvals.

    Inbound: long polling (the webhook is deleted first; unconfirmed updates are kept by Telegram while the
    bot is down) or a webhook on the shared HTTP server.  Every update becomes one event whose id is the
    ``update_id``, the gateway's de-duplication key.  "Accepted" means committed: the polling offset moves
    past a batch only after the inbox stored it, and a webhook request is answered 200 only then (503 while
    starting or stopping, so Telegram sends it again).  Outbound
    (:class:`~channels.telegram.outbound.TelegramOutbound`): the model's Markdown as text + entities (no
    ``parse_mode``), split at 4,096 UTF-16 units outside inline entities, buttons as an inline keyboard, prompts
    edited in place.
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
        self._out = TelegramOutbound(self.bot, self.api, clock)

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
        self._out.stopped = False
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
        self._out.stopped = True
        self._inbox = None
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._out.stop()

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
        inbox = self._inbox
        if inbox is None or self.me is None:
            return web.Response(status=503, text="not ready")  # Telegram retries later
        body = await request.read()
        plain = plain_private_event(body, self.me)
        try:
            if plain is not None:  # the commonest update, without aiogram's models
                update_id = plain.id
                await inbox.submit_many((plain,))
            else:
                try:
                    update = Update.model_validate_json(body, context={"bot": self.bot})
                except (ValueError, ValidationError, RecursionError):
                    return web.Response(status=400, text="not an update")
                update_id = str(update.update_id)
                await self._take([update])
        except InboxClosed:
            return web.Response(status=503, text="shutting down")
        except NotStored as exc:
            log.error("telegram: could not store update %s; Telegram will retry: %s", update_id, exc)
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
                        self._out.remember_reply_target(event.id, update.message)
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
        async with self._out.session():
            try:
                await self.api.call(AnswerCallbackQuery(callback_query_id=query_id, text=text))
            except (TelegramAPIError, TelegramDeliveryError) as exc:
                # "query is too old" after a long downtime: the press still counts.
                log.info("telegram: could not answer a button press: %s", self.api.redact(str(exc)))

    # -- outbound -------------------------------------------------------------------------

    def send(self, message: OutboundMessage) -> Coroutine[Any, Any, str | None]:
        """Post, edit, draft or show typing (:class:`~channels.telegram.outbound.TelegramOutbound`; its coroutine
        itself, no wrapper)."""
        return self._out.send(message)


def build(settings: TelegramSettings, context: BuildContext) -> TelegramChannel:
    """The channel plugin's factory (:mod:`channels.registry`)."""
    clock = context.clock
    return TelegramChannel(settings, on_rate_limit=context.limiter("telegram"), clock=clock)
