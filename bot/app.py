"""The composition root: builds the gateway from settings and runs it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from agents.chat import ChatRunner
from agents.models.base import Model
from agents.models.offline import OfflineModel
from bot.bus import InMemoryBus
from bot.http import HttpServer
from bot.outbox import Outbox
from bot.settings import ConfigError, Settings
from bot.store import Store, store_from_settings
from bot.supervisor import Agent, Supervisor
from channels.base import Channel

log = logging.getLogger(__name__)


def build_model(settings: Settings) -> Model:
    """Gemini when a key is configured (or required), else the labelled offline model."""
    cfg = settings.model
    if cfg.provider == "offline" or (cfg.provider == "auto" and not cfg.api_key):
        return OfflineModel()
    if not cfg.api_key:
        raise ConfigError("model.api_key is empty but model.provider is gemini: set GEMINI_API_KEY")
    from agents.models.gemini import GeminiModel

    return GeminiModel(
        model=cfg.name,
        api_key=cfg.api_key,
        base_url=cfg.base_url,
        timeout_s=cfg.timeout_s,
        max_retries=cfg.max_retries,
    )


def build_channels(settings: Settings) -> list[Channel]:
    """An adapter for every enabled channel section."""
    channels: list[Channel] = []
    for name in settings.channels.enabled():
        if name == "console":
            from channels.console import ConsoleChannel

            cfg = settings.channels.console
            channels.append(ConsoleChannel(user_id=cfg.user_id, user_name=cfg.user_name))
        else:
            raise ConfigError(f"channels.{name}: this channel is not available in this version yet")
    return channels


class Gateway:
    """Everything wired together: store, bus, supervisor, channels, HTTP server."""

    def __init__(
        self,
        settings: Settings,
        *,
        model: Model | None = None,
        channels: Sequence[Channel] | None = None,
        store: Store | None = None,
    ) -> None:
        self.settings = settings
        self.model = model if model is not None else build_model(settings)
        self.store: Store = store or store_from_settings(settings.store)
        self.bus = InMemoryBus(max_concurrent=settings.bus.max_concurrent_chats, max_pending=settings.bus.max_pending)
        self.outbox = Outbox()
        self.channels = list(channels) if channels is not None else build_channels(settings)
        self.supervisor = Supervisor(
            settings=settings,
            store=self.store,
            outbox=self.outbox,
            model=self.model,
            agents={"chat": Agent("chat", ChatRunner(), title="Chat", description="General conversation")},
        )
        self.http: HttpServer | None = None
        self._started = False

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok" if self._started else "starting",
            "channels": [c.name for c in self.channels],
            "model": self.model.name,
            "active_chats": self.bus.active_chats,
        }

    async def start(self) -> None:
        await self.store.start()
        self.bus.subscribe(self.supervisor.handle)
        for channel in self.channels:
            self.outbox.register(channel)
        if self.settings.http.enabled:
            self.http = HttpServer(self.settings.http.host, self.settings.http.port, self.health)
            await self.http.start()
        for channel in self.channels:
            await channel.start(self.bus)
        self._started = True
        log.info("gateway started: channels=%s model=%s", [c.name for c in self.channels], self.model.name)

    async def stop(self, timeout: float = 30.0) -> None:
        """Stop receiving, let in-flight work finish (up to ``timeout``), then close everything."""
        self._started = False
        for channel in self.channels:
            await channel.stop()
        await self.bus.close(timeout)
        if self.http is not None:
            await self.http.stop()
        await self.model.aclose()
        await self.store.close()

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def serve(gateway: Gateway, stop: asyncio.Event) -> None:
    """Run until ``stop`` is set, then drain and close."""
    await gateway.start()
    try:
        await stop.wait()
    finally:
        await gateway.stop()
