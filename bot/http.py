"""The shared aiohttp server (a port: channels mount their webhooks on it, the web console its pages): health
now; webhooks, metrics and the console are added by their owners.

**A body arrives in time or not at all.**  aiohttp waits for a request's body as long as its client keeps the
connection open, so a client that trickles a body (a byte now and then: a slow-loris) would hold a handler and a
connection for ever.  Every request with a body gets :data:`BODY_TIMEOUT_S` from the moment its handler starts
(its headers are in) to the last byte of its body; past that, whatever the handler was waiting for is cancelled,
the client is answered ``408 Request Timeout`` and the connection is closed.  A handler that has its whole body is
never cut, however long it works.  The timer runs on the gateway's clock (a test's ``FakeClock`` moves it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bot.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

BODY_TIMEOUT_S = 15.0
"""How long a request's whole body may take to arrive (Telegram, Slack and the console send theirs at once; 1 MiB,
the largest body taken, arrives in 15 s at 70 KB/s)."""
LOG_EVERY_S = 60.0
"""At most one log line a minute about bodies that came too slowly (a flood of them is counted, not listed)."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class HttpServer:
    """One server for every HTTP endpoint of the gateway (Conventions: the ``http`` section)."""

    def __init__(
        self,
        host: str,
        port: int,
        health: Callable[[], dict[str, Any]],
        *,
        clock: Clock = SYSTEM_CLOCK,
        body_timeout_s: float = BODY_TIMEOUT_S,
    ) -> None:
        self.host, self.port = host, port
        self.clock = clock
        self.body_timeout_s = body_timeout_s
        self.slow_bodies = 0
        """Requests answered 408 so far (their body did not arrive in time)."""
        self.awaiting_bodies = 0
        """Requests in their handlers now whose body is not all in yet (their timer is running)."""
        self._logged_at = float("-inf")
        self._unlogged = 0
        self.app = web.Application(middlewares=[self._body_in_time])
        self._health = health
        self.app.router.add_get("/healthz", self._healthz)
        self._runner: web.AppRunner | None = None

    async def _healthz(self, request: web.Request) -> web.Response:
        status = self._health()
        # Degraded (a platform unreachable, retried) still serves the rest: healthy to an orchestrator.
        return web.json_response(status, status=200 if status.get("status") in ("ok", "degraded") else 503)

    @web.middleware
    async def _body_in_time(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The handler, cancelled with a 408 when the request's body is not all in after ``body_timeout_s``."""
        if not request.body_exists or request.content.is_eof():
            return await handler(request)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(None) as deadline:

                def late() -> None:
                    if not request.content.is_eof():
                        deadline.reschedule(loop.time())  # expires now: what the handler awaits is cancelled

                timer = self.clock.call_later(self.body_timeout_s, late)
                self.awaiting_bodies += 1
                try:
                    return await handler(request)
                finally:
                    self.awaiting_bodies -= 1
                    timer.cancel()
        except TimeoutError:
            if not deadline.expired():
                raise  # the handler's own
        return await self._too_slow(request)

    async def _too_slow(self, request: web.Request) -> web.StreamResponse:
        self.slow_bodies += 1
        now = self.clock.monotonic()
        if now - self._logged_at >= LOG_EVERY_S:
            more = f" ({self._unlogged} more since the last line)" if self._unlogged else ""
            log.warning(
                "http: %s sent a request body to %s too slowly (not all in after %g s): answered 408%s",
                request.remote,
                request.path,
                self.body_timeout_s,
                more,
            )
            self._logged_at, self._unlogged = now, 0
        else:
            self._unlogged += 1
        response = web.Response(status=408, text=f"the request body did not arrive within {self.body_timeout_s:g} s")
        response.force_close()
        # Sent now and the connection closed at once (aiohttp would otherwise linger, reading the trickle).
        await response.prepare(request)
        await response.write_eof()
        if request.protocol is not None:
            request.protocol.force_close()
        return response

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        log.info("http server on %s:%s", self.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
