"""Calling the Bot API without losing messages: flood control, pacing, bounded retries.

Telegram's limits (https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this):
about one message a second per chat (short bursts are tolerated), 20 a minute in a
group, 30 a second overall.  :class:`Pacer` keeps under them with token buckets; a
429 anyway means waiting ``retry_after`` and sending again, up to a bound.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any, NamedTuple, TypeVar

import certifi
from aiogram import Bot
from aiogram import __version__ as aiogram_version
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramConflictError,
    TelegramEntityTooLarge,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)
from aiogram.methods.base import Response, TelegramMethod
from aiohttp import ClientError, ClientTimeout
from aiohttp.http import SERVER_SOFTWARE
from yarl import URL

from bot.clock import SYSTEM_CLOCK, Clock
from bot.limits import TokenBuckets
from bot.retry import Backoff, DelayAfter, retry
from channels.telegram.http1 import JsonPoster

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_FLOOD_WAIT_S = 600.0
"""Longest total wait for flood control on one call; past it the call fails (and the gateway reports it)."""
MAX_FLOOD_RETRIES = 10
NETWORK_ATTEMPTS = 4
NETWORK_BACKOFF_S = (0.5, 1.0, 2.0)
POLL_REFUSED_BACKOFF = Backoff(first_s=2.0, cap_s=60.0)
"""Polling refused (409: another poller; 401: a revoked token): 2, 4, 8 … 60 s between tries."""
POLL_NETWORK_BACKOFF = Backoff(first_s=1.0, cap_s=30.0)
"""Polling failed on the way (network, 5xx, an unreadable answer): 1, 2, 4 … 30 s between tries."""


class TelegramDeliveryError(RuntimeError):
    """A Bot API call failed for good.  The text never contains the token."""


class Pacer:
    """Per-chat and overall token buckets (:class:`~bot.limits.TokenBuckets`), plus the holds a 429 imposes."""

    PRIVATE = (5, 1.0)
    """(burst, messages per second) for a private chat."""
    GROUP = (5, 20 / 60)
    OVERALL = (30, 30.0)
    KEEP = 10_000
    """Chats whose bucket is remembered (least recently used go first)."""

    def __init__(
        self,
        private: tuple[float, float] = PRIVATE,
        group: tuple[float, float] = GROUP,
        overall: tuple[float, float] = OVERALL,
        clock: Callable[[], float] = SYSTEM_CLOCK.monotonic,
        sleep: Callable[[float], Awaitable[None]] = SYSTEM_CLOCK.sleep,
    ) -> None:
        """``clock`` (monotonic seconds) and ``sleep``: a :class:`~bot.clock.Clock`'s (:meth:`on`)."""
        self.private, self.group, self.overall = (
            TokenBuckets(rate, burst, max_keys=self.KEEP, clock=clock) for burst, rate in (private, group, overall)
        )
        self.sleep = sleep

    @classmethod
    def on(cls, clock: Clock) -> Pacer:
        """Telegram's limits, paced on ``clock``."""
        return cls(clock=clock.monotonic, sleep=clock.sleep)

    def _chats(self, chat: str) -> TokenBuckets:
        # Group and channel ids are negative, users' ids positive.
        return self.group if chat.startswith("-") else self.private

    def delay(self, chat: str | None) -> float:
        """Take a token (overall, and ``chat``'s) and return how long to wait before using it."""
        delay = self.overall.reserve("")
        return delay if chat is None else max(delay, self._chats(chat).reserve(chat))

    async def wait(self, chat: str | None) -> None:
        delay = self.delay(chat)
        if delay > 0:
            await self.sleep(delay)

    def hold(self, chat: str, seconds: float) -> None:
        """Nothing more goes to ``chat`` for ``seconds`` (after a 429)."""
        self._chats(chat).hold(chat, seconds)


_RESPONSE_MODELS: dict[Any, Any] = {}


def keep_response_model(method: TelegramMethod[Any]) -> None:
    """aiogram reads every answer with ``Response[T]``, a pydantic generic model that pydantic caches only
    weakly: after each garbage collection the next call built it again, and a busy gateway's Telegram calls spent
    much of their time making these classes (measured: see bench/README.md, "Telegram's answer models").  Held
    here, each is made once per process."""
    returning = method.__returning__
    if returning not in _RESPONSE_MODELS:
        _RESPONSE_MODELS[returning] = Response[returning]  # type: ignore[valid-type]


class Sent(NamedTuple):
    """What a sent message is known by: its chat (a migrated group's new id) and its id there."""

    chat_id: int
    message_id: int


_JSON = {"Content-Type": "application/json"}


@cache
def _ssl_context() -> ssl.SSLContext:
    """The CA bundle aiogram's own connections trust (certifi's), loaded once."""
    return ssl.create_default_context(cafile=certifi.where())


class Api:
    """One place that calls the Bot API: pacing, 429 waits and network retries, errors without the token."""

    def __init__(self, bot: Bot, on_rate_limit: Callable[[], None] | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.bot = bot
        self.clock = clock
        """What pacing, flood waits and network retries wait on."""
        self.pacer = Pacer.on(clock)
        self._on_rate_limit = on_rate_limit
        self._urls: dict[str, URL] = {}
        """Each method's URL, parsed once (it holds the token, and the token never changes)."""
        self._timeout = ClientTimeout()
        self._posting: tuple[asyncio.AbstractEventLoop, JsonPoster] | None = None
        """``sendMessage``'s kept-alive connections, for the loop they belong to."""

    def limited(self) -> None:
        """Telegram answered 429."""
        if self._on_rate_limit is not None:
            self._on_rate_limit()

    def redact(self, text: str) -> str:
        return text.replace(self.bot.token, "***")

    async def call(self, method: TelegramMethod[T], *, chat: str | None = None, paced: bool = False) -> T:
        """Send ``method``; ``paced`` calls (messages, edits) count against ``chat``'s flood limits.

        Telegram's own errors (bad request, forbidden, …) propagate as aiogram exceptions
        for the caller to interpret; flood waits and network failures are retried here.
        """

        async def once() -> T:
            keep_response_model(method)
            return await self.bot(method)

        return await self._retrying(type(method).__name__, once, chat=chat, paced=paced)

    async def send_message(self, payload: dict[str, Any], method: Callable[[], TelegramMethod[Any]]) -> Sent:
        """``sendMessage`` with ``payload`` (its JSON parameters), paced and retried as :meth:`call` does, on a
        lighter path: a JSON body instead of aiogram's multipart form, and of the answer only the message's chat
        and id are read (no pydantic ``Message``).  Anything but a success goes through aiogram's own reading of
        the answer (``method()`` builds the equivalent aiogram method for it), so errors are the same exceptions.
        """
        chat = str(payload["chat_id"])

        async def once() -> Sent:
            result = await self._post_json("sendMessage", payload, method)
            try:
                return Sent(int(result["chat"]["id"]), int(result["message_id"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise ClientDecodeError("Failed to deserialize object", exc, result) from None

        return await self._retrying("SendMessage", once, chat=chat, paced=True)

    async def _post_json(
        self, api_method: str, payload: dict[str, Any], method: Callable[[], TelegramMethod[Any]]
    ) -> Any:
        """The ``result`` of a successful call; otherwise aiogram's exception for the answer."""
        session = self.bot.session
        assert isinstance(session, AiohttpSession)
        url = self._urls.get(api_method)
        if url is None:
            url = self._urls[api_method] = URL(session.api.api_url(token=self.bot.token, method=api_method))
        body = json.dumps(payload)
        try:
            poster = self._poster(session, url)
            if poster is not None:
                async with asyncio.timeout(session.timeout):
                    status, raw = await poster.post(url, body.encode())
            else:  # through a proxy: aiohttp's client, which knows them
                status, raw = await self._post_aiohttp(session, url, body)
        except TimeoutError as exc:
            raise TelegramNetworkError(method=method(), message="Request timeout error") from exc
        except (ClientError, OSError) as exc:
            raise TelegramNetworkError(method=method(), message=f"{type(exc).__name__}: {exc}") from exc
        if status == 200:
            try:
                answer = json.loads(raw)
            except ValueError:
                answer = None
            if isinstance(answer, dict) and answer.get("ok") is True and isinstance(answer.get("result"), dict):
                return answer["result"]
        aiogram_method = method()
        keep_response_model(aiogram_method)
        content = raw.decode(errors="replace")
        return session.check_response(self.bot, aiogram_method, status, content).result  # raises unless a success

    def _poster(self, session: AiohttpSession, url: URL) -> JsonPoster | None:
        """The kept-alive connections to the API's origin (this loop's), or None through a proxy."""
        if session.proxy is not None:
            return None
        loop = asyncio.get_running_loop()
        if self._posting is None or self._posting[0] is not loop:
            headers = {"User-Agent": f"{SERVER_SOFTWARE} aiogram/{aiogram_version}"}
            poster = JsonPoster(
                url.origin(), headers=headers, ssl_context=_ssl_context(), monotonic=self.clock.monotonic
            )
            self._posting = (loop, poster)
        return self._posting[1]

    def close_connections(self) -> None:
        """Close the kept-alive connections (with the bot's session): a later call opens new ones."""
        if self._posting is not None:
            self._posting[1].close()

    async def _post_aiohttp(self, session: AiohttpSession, url: URL, body: str) -> tuple[int, bytes]:
        client = await session.create_session()
        if self._timeout.total != session.timeout:
            self._timeout = ClientTimeout(total=session.timeout)
        async with client.post(url, data=body, headers=_JSON, timeout=self._timeout) as resp:
            return resp.status, await resp.read()

    async def _retrying(self, name: str, send: Callable[[], Awaitable[T]], *, chat: str | None, paced: bool) -> T:
        flood_waited, floods, failures = 0.0, 0, 0

        async def once() -> T:
            if paced:
                await self.pacer.wait(chat)
            return await send()

        def delay_after(exc: Exception, _attempt: int) -> float | None:
            nonlocal flood_waited, floods, failures
            if isinstance(exc, TelegramRetryAfter):
                self.limited()
                wait = float(exc.retry_after)
                floods += 1
                if floods > MAX_FLOOD_RETRIES or flood_waited + wait > MAX_FLOOD_WAIT_S:
                    raise TelegramDeliveryError(
                        f"telegram {name}: still rate-limited after waiting {flood_waited:.0f} s (chat {chat})"
                    ) from None
                log.warning("telegram %s: flood control in chat %s, retrying in %.0f s", name, chat, wait)
                if chat is not None:
                    self.pacer.hold(chat, wait)
                flood_waited += wait
                return wait
            if isinstance(exc, TelegramEntityTooLarge):
                raise TelegramDeliveryError(f"telegram {name}: {self.redact(str(exc))}") from None
            if isinstance(exc, TelegramNetworkError | TelegramServerError | ClientDecodeError):
                failures += 1
                reason = self.redact(str(exc))
                if failures >= NETWORK_ATTEMPTS:
                    raise TelegramDeliveryError(f"telegram {name}: failed {failures} times: {reason}") from None
                backoff = NETWORK_BACKOFF_S[min(failures, len(NETWORK_BACKOFF_S)) - 1]
                log.info("telegram %s: %s; retrying in %.1f s", name, reason, backoff)  # the caller tells a failure
                return backoff
            return None  # Telegram's own errors (bad request, forbidden, …): the caller's

        return await retry(once, delay_after, clock=self.clock)


def poll_delays() -> DelayAfter:
    """How long polling waits after each failed ``getUpdates`` (for one run of failures): Telegram's
    ``retry_after`` as it says (not a failed try: the back-off does not grow), refusals and failures on the way
    each on their back-off, counted together; anything else (a bug) is not retried."""
    failures = 0

    def delay_after(exc: Exception, _attempt: int) -> float | None:
        nonlocal failures
        if isinstance(exc, TelegramRetryAfter):
            return float(exc.retry_after)
        if isinstance(exc, TelegramConflictError | TelegramUnauthorizedError):
            failures += 1
            return POLL_REFUSED_BACKOFF.delay(failures)
        if isinstance(exc, TelegramNetworkError | TelegramServerError | ClientDecodeError):
            failures += 1
            return POLL_NETWORK_BACKOFF.delay(failures)
        return None

    return delay_after
