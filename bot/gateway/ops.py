"""The operator's endpoints on the shared HTTP server: ``/metrics`` (Prometheus) and ``/readyz``.

``/healthz`` says whether the process serves (an orchestrator restarts it when not); ``/readyz`` whether it
should get traffic now: started (so the migrations ran; the server listens only after them) and its bus
reachable (Redis answers a PING within a second when scaled out), and, for a worker, its partition leases renewed
within the lease time (a worker that cannot renew is handing its partitions over and says so).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.bus import Bus
from bot.config.ops import MetricsSection
from bot.http import HttpServer
from bot.ops.metrics import LeaseState, Metrics, Sample
from bot.store.ports import BacklogCounts

log = logging.getLogger(__name__)


class OpsEndpoints:
    def __init__(
        self,
        config: MetricsSection,
        metrics: Metrics,
        store: BacklogCounts,
        bus: Bus,
        *,
        started: Callable[[], bool],
        redis: Any = None,
        leases: Callable[[], LeaseState | None] = lambda: None,
        lease_problem: Callable[[], str | None] = lambda: None,
    ) -> None:
        """``leases``/``lease_problem``: a worker's partition leases (for the metrics) and why it is not ready."""
        self.config = config
        self.metrics = metrics
        self.store = store
        self.bus = bus
        self.started = started
        self.redis = redis
        self.leases = leases
        self.lease_problem = lease_problem

    def mount(self, http: HttpServer) -> None:
        http.app.router.add_get("/readyz", self._readyz)
        if self.config.enabled:
            http.app.router.add_get(self.config.path, self._metrics)

    async def sample(self) -> Sample:
        """What the gauges show, read now (a part that cannot be read keeps its last value, logged)."""
        sample = Sample(leases=self.leases())
        try:
            sample.queue = await asyncio.wait_for(self.bus.depths(), 2.0)
        except Exception as exc:
            log.warning("metrics: could not read the queue depth: %s", exc)
        try:
            pending, outbox, inbox = await asyncio.wait_for(self.store.backlog(), 2.0)
            sample.interrupts_pending, sample.outbox_backlog, sample.inbox_pending = (
                int(pending),
                int(outbox),
                int(inbox),
            )
        except Exception as exc:
            log.warning("metrics: could not read the store's counts: %s", exc)
        return sample

    async def _metrics(self, request: web.Request) -> web.Response:
        token = self.config.token
        if token:
            given = request.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return web.Response(status=401, text="a bearer token is required (metrics.token)\n")
        self.metrics.apply(await self.sample())
        response = web.Response(body=generate_latest(self.metrics.registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    async def _readyz(self, request: web.Request) -> web.Response:
        problems = await self.problems()
        status = 200 if not problems else 503
        return web.json_response({"ready": not problems, "problems": problems}, status=status)

    async def problems(self) -> list[str]:
        out = []
        if not self.started():
            out.append("starting (migrations, recovery) or stopping")
        if self.redis is not None:
            try:
                await asyncio.wait_for(self.redis.ping(), 1.0)
            except Exception as exc:
                out.append(f"the bus (Redis) is unreachable: {exc.__class__.__name__}: {exc}")
        lapsing = self.lease_problem()
        if lapsing is not None:
            out.append(lapsing)
        return out
