"""The Slack adapter (slack-bolt): its start-up, Socket Mode or HTTP wiring, and inbound events handled and
committed (see the package docstring); sending is :mod:`channels.slack.outbound`'s."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.clock import SYSTEM_CLOCK, Clock
from bot.errors import ConfigError
from bot.events import Action, InboundMessage, OutboundMessage
from bot.inbox import Inbox, InboxClosed, NotStored
from channels.base import BuildContext
from channels.retry_logs import quiet_retries, without_query
from channels.slack.delivery import SlackDeliveryError, WebApi, api_url
from channels.slack.gate import Refused, RequestGate
from channels.slack.inbound import (
    CHANNEL,
    BotIdentity,
    Post,
    action_from_payload,
    command_message,
    inbound_message,
    post_from_event,
)
from channels.slack.outbound import Recent, SlackOutbound
from channels.slack.settings import SlackSettings

if TYPE_CHECKING:
    from bot.http import HttpServer

log = logging.getLogger(__name__)

SOCKET_CONNECT_TIMEOUT_S = 30.0
STOP_GRACE_S = 2.0
SECTION_LIMIT = 3000
"""Characters a Block Kit section (a prompt with buttons) holds."""
LOOKUP_BUDGET_S = 1.0
"""At most this long for a name or thread look-up before an event is committed (defaults otherwise)."""
_AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"})


class SlackChannel:
    """The Slack adapter (see the module docstring); ``send`` works before ``start`` and across restarts."""

    name = CHANNEL
    text_limit = SECTION_LIMIT
    """The longest text one message holds (a longer confirmation is shown in full on request)."""

    def __init__(
        self, cfg: SlackSettings, *, on_rate_limit: Callable[[], None] | None = None, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        """``on_rate_limit``: called for each 429 the Web API answers; ``clock``: the time HTTP requests' timestamps
        are checked against, the pace of the log lines about refused requests, of messages and of retries."""
        _check(cfg)
        self.cfg = cfg
        self.clock = clock
        self.gate = RequestGate(cfg.signing_secret, clock) if cfg.mode == "http" else None
        """HTTP mode: what every request passes first (and its count of refused requests, by reason)."""
        self.me: BotIdentity | None = None
        base_url = api_url(cfg.api_base)
        # Retries are WebApi's (bounded, Retry-After aware), not the SDK's on top of them.
        self.web = AsyncWebClient(token=cfg.bot_token, base_url=base_url, retry_handlers=[])
        self.api = WebApi(self.web, on_rate_limit=on_rate_limit, clock=clock)
        self.app = AsyncApp(
            name="slack",
            logger=_bolt_logger(),
            # Tokenless: every request is authorised with the one auth.test result (no auth.test per request).
            client=AsyncWebClient(base_url=base_url),
            authorize=self._authorizer(),
            signing_secret=cfg.signing_secret,
            # HTTP requests are verified by the gate before bolt sees them (Socket Mode needs no signature).
            request_verification_enabled=False,
            # Listeners only hand work to tasks, so bolt answers right after them: that is the "ack at once".
            process_before_response=True,
        )
        self._register(cfg.slash_command if cfg.slash_command.startswith("/") else "/" + cfg.slash_command)
        self._auth: AuthorizeResult | None = None
        self._inbox: Inbox | None = None
        self._receiving = False
        self._socket: AsyncSocketModeHandler | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._out = SlackOutbound(self.api, clock, reaction=cfg.typing_reaction.strip(":"))
        self._threads = self._out.threads
        """Threads (channel, thread_ts) and whether the bot takes part in them (the outbound side's)."""
        self._names: Recent[str, str] = Recent()

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def needs_http(self) -> bool:
        return self.cfg.mode == "http"

    def mount(self, http: HttpServer) -> None:
        """HTTP mode: events, button presses and the slash command all arrive at ``events_path``."""
        http.app.router.add_post(self.cfg.events_path, self._http)

    async def start(self, inbox: Inbox) -> None:
        auth = await self._checked("auth.test", "bot_token", "SLACK_BOT_TOKEN")
        self.me = BotIdentity(user_id=auth["user_id"], bot_id=auth.get("bot_id"))
        self._auth = AuthorizeResult.from_auth_test_response(auth_test_response=auth, bot_token=self.cfg.bot_token)
        self._inbox, self._receiving = inbox, True
        if self.cfg.mode == "socket":
            try:
                await self._connect_socket()
            except BaseException:
                self._inbox, self._receiving = None, False
                raise
        log.info("slack: connected as %s (%s mode)", self.me.user_id, self.cfg.mode)

    async def _connect_socket(self) -> None:
        opened = await self._checked(
            "apps.connections.open", "app_token", "SLACK_APP_TOKEN", app_token=self.cfg.app_token
        )
        handler = AsyncSocketModeHandler(self.app, app_token=self.cfg.app_token, web_client=self.web)
        # The URL from our own call: a refused app token fails start() clearly instead of bolt retrying forever.
        handler.client.wss_uri = opened["url"]
        self._socket = handler
        try:
            await asyncio.wait_for(handler.connect_async(), SOCKET_CONNECT_TIMEOUT_S)
        except TimeoutError:
            await self._close_socket()
            raise SlackDeliveryError("Socket Mode", f"no connection within {SOCKET_CONNECT_TIMEOUT_S:.0f}s") from None

    async def _checked(self, method: str, key: str, var: str, **kwargs: Any) -> Any:
        """A start-up call; a refused token is the operator's to fix (a configuration error naming it)."""
        try:
            return await self.api.call(method, **kwargs)
        except SlackDeliveryError as exc:
            if exc.error in _AUTH_ERRORS:
                raise ConfigError(f"channels.slack.{key} was refused by Slack ({exc.error}): check {var}") from None
            raise

    async def stop(self) -> None:
        """Stop receiving (requests in flight are answered with an error: Slack retries them), then let go."""
        self._receiving = False
        self._inbox = None
        if self.gate is not None:
            self.gate.close()
        await self._close_socket()
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=STOP_GRACE_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def settled(self) -> None:
        """Wait until the side tasks started so far (refusals shown to a presser) are done."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def _close_socket(self) -> None:
        handler, self._socket = self._socket, None
        if handler is not None:
            await handler.close_async()
            await asyncio.sleep(0)  # let the client's cancelled tasks finish

    # -- inbound ------------------------------------------------------------------------------

    def _authorizer(self) -> Callable[[], Awaitable[AuthorizeResult]]:
        # A closure, not a method: bolt passes the arguments a callable names, and a method names ``self``.
        async def authorize() -> AuthorizeResult:
            if self._auth is None:
                raise RuntimeError("the Slack channel has not started")
            return self._auth

        return authorize

    def _register(self, slash_command: str) -> None:
        self.app.event("app_mention")(self._on_message_event)
        self.app.event("message")(self._on_message_event)
        self.app.action(re.compile(".*"))(self._on_action)
        self.app.command(slash_command)(self._on_command)
        # Every other event is acknowledged too (bolt would answer 404 and Slack would retry).
        self.app.event(re.compile(".*"))(self._on_other_event)
        self.app.error(self._on_error)

    @staticmethod
    async def _on_error(error: Exception) -> None:
        """A listener failed: bolt answers 500 (no ack), so Slack delivers the event again."""
        if isinstance(error, NotStored):
            log.warning("slack: an event was not stored (%s); Slack will deliver it again", error)
        else:
            log.error("slack: handling an event failed; Slack will deliver it again", exc_info=error)

    async def _http(self, request: web.Request) -> web.Response:
        if not self._receiving:  # starting or stopping: Slack retries later
            return web.Response(status=503, text="not receiving", headers={"Retry-After": "1"})
        assert self.gate is not None  # mounted in HTTP mode only
        try:
            admitted = await self.gate.admit(request)  # signature, then size and shape (logged sparingly)
        except Refused as refused:
            return refused.response()
        return await to_aiohttp_response(await self.app.async_dispatch(admitted))

    async def _on_message_event(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        event = body.get("event") or {}
        post = post_from_event(event, self.me) if self.me is not None else None
        if post is not None:
            await self._submit(await self._message_of(post, event))
        await ack()

    async def _on_other_event(self, ack: AsyncAck) -> None:
        await ack()

    async def _message_of(self, post: Post, event: dict[str, Any]) -> InboundMessage:
        assert self.me is not None
        in_bot_thread = False
        name = ""
        try:
            async with asyncio.timeout(LOOKUP_BUDGET_S):
                name = await self._user_name(post.user)
                in_bot_thread = (
                    post.thread_ts is not None
                    and not post.direct
                    and not post.mentioned
                    and await self._bot_in_thread(post.channel, post.thread_ts, event.get("parent_user_id"))
                )
        except TimeoutError:
            log.info("slack: look-ups for %s took too long; taking the message as it is", post.key)
        message = inbound_message(
            post, self.me, sender_name=name, in_bot_thread=in_bot_thread, reply_in_thread=self.cfg.reply_in_thread
        )
        if message.mentions_bot and message.chat.thread_id:
            self._threads.put((post.channel, message.chat.thread_id), True)
        self._out.last_post.put(str(message.chat), (post.channel, post.ts))
        return message

    async def _bot_in_thread(self, channel: str, thread_ts: str, parent_user: str | None) -> bool:
        """Whether the bot started or answered in this thread (remembered; asked of Slack once otherwise)."""
        assert self.me is not None
        if parent_user == self.me.user_id:
            return True
        known = self._threads.get((channel, thread_ts))
        if known is not None:
            return known
        try:
            replies = await self.api.call_once("conversations.replies", channel=channel, ts=thread_ts, limit=200)
            found = any(self.me.wrote(m) for m in replies.get("messages") or ())
        except SlackDeliveryError as exc:
            log.debug("slack: could not look at thread %s/%s: %s", channel, thread_ts, exc)
            found = False
        self._threads.put((channel, thread_ts), found)
        return found

    async def _user_name(self, user: str) -> str:
        name = self._names.get(user)
        if name is None:
            try:
                info = (await self.api.call_once("users.info", user=user)).get("user") or {}
                name = (info.get("profile") or {}).get("display_name") or info.get("real_name") or info.get("name")
            except SlackDeliveryError as exc:
                log.debug("slack: no name for %s: %s", user, exc)
            name = name or ""
            self._names.put(user, name)
        return name

    async def _on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        action = action_from_payload(body)
        if action is not None:
            inbox = self._inbox
            refusal = await inbox.check_press(action) if inbox is not None else None
            if refusal:
                self._spawn(self._ephemeral(action, refusal))
            else:
                await self._submit(action)
        await ack()

    async def _ephemeral(self, action: Action, text: str) -> None:
        """Show a refusal to the presser only: through the press's ``response_url``, else chat.postEphemeral."""
        url = action.platform.get("response_url")
        try:
            if url:
                reply = await AsyncWebhookClient(url).send(text=text, response_type="ephemeral", replace_original=False)
                if reply.status_code != 200:
                    log.warning("slack: response_url answered %s to a refusal", reply.status_code)
                return
            await self.api.call(
                "chat.postEphemeral",
                channel=action.chat.chat_id,
                user=action.sender.id,
                text=text,
                thread_ts=action.chat.thread_id,
            )
        except (SlackDeliveryError, aiohttp.ClientError, OSError) as exc:
            log.warning("slack: could not show a refusal to %s: %s", action.sender.id, exc)

    async def _on_command(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        message = command_message(body)
        if body.get("response_url"):
            self._out.response_urls.put(message.chat.chat_id, (body["response_url"], self.clock.monotonic()))
        await self._submit(message)
        # in_channel with no text: the channel sees the command, and the reply follows as a message.
        await ack({"response_type": "in_channel"})

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(self._guarded(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _guarded(work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except Exception:
            log.exception("slack: a side task failed")

    async def _submit(self, event: InboundMessage | Action) -> None:
        """Commit ``event``; raises (so bolt does not acknowledge and Slack retries) when it could not be."""
        inbox = self._inbox
        if inbox is None or not self._receiving:
            raise InboxClosed("the Slack channel is not receiving")
        await inbox.submit(event)

    # -- outbound -------------------------------------------------------------------------------

    def send(self, message: OutboundMessage) -> Coroutine[Any, Any, str | None]:
        """Post, edit or react (:class:`~channels.slack.outbound.SlackOutbound`; its coroutine itself, no
        wrapper)."""
        return self._out.send(message)


class _BoltNoise(logging.Filter):
    """What slack-bolt logs that is noise or too much: bolt copies its base logger's filters to every logger.

    - "As you gave `client` as well, `token` will be unused": bolt reads SLACK_BOT_TOKEN from the
      environment itself; the adapter hands it a client and an authorizer, and that is right.

    (Forged requests never reach bolt: :mod:`channels.slack.gate` refuses them with one line, without the body.)
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


def _bolt_logger() -> logging.Logger:
    """Bolt's logger, also the Socket Mode client's: its reconnect tries are told once per change."""
    logger = logging.getLogger(f"{__name__}.bolt")
    if not any(isinstance(f, _BoltNoise) for f in logger.filters):
        logger.addFilter(_BoltNoise())
    quiet_retries((logger.name,), log, "slack: the Socket Mode connection failed", every_s=5,
                  failing=("Failed to connect (error:", "Failed to check the current session"),
                  working=("A new session (",), redact=without_query)  # fmt: skip
    return logger


def _check(cfg: SlackSettings) -> None:
    """The same checks as loading the settings, for adapters built by hand."""
    if not cfg.bot_token:
        raise ConfigError("channels.slack.bot_token is empty: set SLACK_BOT_TOKEN in the environment")
    if cfg.mode == "socket" and not cfg.app_token:
        raise ConfigError("channels.slack.app_token is empty (socket mode): set SLACK_APP_TOKEN")
    if cfg.mode == "http" and not cfg.signing_secret:
        raise ConfigError("channels.slack.signing_secret is empty (http mode): set SLACK_SIGNING_SECRET")


__all__ = ["SlackChannel", "SlackDeliveryError"]


def build(settings: SlackSettings, context: BuildContext) -> SlackChannel:
    """The channel plugin's factory (:mod:`channels.registry`)."""
    clock: Clock = context.clock or SYSTEM_CLOCK
    return SlackChannel(settings, on_rate_limit=context.limiter("slack"), clock=clock)
