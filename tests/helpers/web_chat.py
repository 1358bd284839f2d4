"""The web chat's test environment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.models.scripted import ScriptedModel
from agents.tools.base import Tool, tool
from bot.config.settings import Settings
from bot.gateway.app import Gateway
from tests.web.harness import ADMIN_PASSWORD, WEB_TOKEN, Browserless, hashes


class ChatEnv:
    """Gateways with the web console and the web channel on (nothing else), on one settings object."""

    def __init__(self, make_settings: Callable[..., Settings]) -> None:
        self.make_settings = make_settings
        self.settings: Settings | None = None
        self.running: list[Gateway] = []
        self.clients: list[Browserless] = []
        self.ran: list[str] = []

    def configure(self, **chat: Any) -> Settings:
        admin, viewer = hashes()
        self.settings = self.make_settings(
            channels={"console": {"enabled": False}, "web": {"enabled": True, **chat}},
            routing={"strategy": "rule"},
            http={"enabled": True, "port": 0},
            web={
                "enabled": True,
                "token": WEB_TOKEN,
                "users": [
                    {"name": "alice", "role": "admin", "password_hash": admin},
                    {"name": "victor", "role": "viewer", "password_hash": viewer},
                ],
            },
        )
        return self.settings

    def tools(self) -> list[Tool]:
        @tool(risk="medium", confirm=True)
        async def delete_cache(path: str) -> str:
            """Delete a build cache directory."""
            self.ran.append(path)
            return f"deleted {path}"

        return [delete_cache]

    async def start(self, model: ScriptedModel) -> Gateway:
        gateway = Gateway(self.settings or self.configure(), model=model, tools=self.tools())
        await gateway.start()
        self.running.append(gateway)
        return gateway

    async def stop(self, gateway: Gateway) -> None:
        self.running.remove(gateway)
        await gateway.stop(timeout=5)

    async def client(self, gateway: Gateway, name: str = "alice", password: str = ADMIN_PASSWORD) -> Browserless:
        web = Browserless(gateway)
        self.clients.append(web)
        if name:
            assert await web.login(name, password) == 303
            status, _text, _r = await web.get("/web/talk")  # its CSRF token
            assert status == 200
        return web

    def workspace(self) -> Path:
        assert self.settings is not None
        folder = Path(self.settings.tools.workspace)
        folder.mkdir(parents=True, exist_ok=True)
        return folder
