"""The shared aiohttp server (a port: channels mount their webhooks on it, the web console its pages): health
now; webhooks, metrics and the console are added by their owners."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)


class HttpServer:
    """One server for every HTTP endpoint of the gateway (Conventions: the ``http`` section)."""

    def __init__(self, host: str, port: int, health: Callable[[], dict[str, Any]]) -> None:
        self.host, self.port = host, port
        self.app = web.Application()
        self._health = health
        self.app.router.add_get("/healthz", self._healthz)
        self._runner: web.AppRunner | None = None

    async def _healthz(self, request: web.Request) -> web.Response:
        status = self._health()
        # Degraded (a platform unreachable, retried) still serves the rest: healthy to an orchestrator.
        return web.json_response(status, status=200 if status.get("status") in ("ok", "degraded") else 503)

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
