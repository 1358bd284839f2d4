"""A gateway with the web console on, a loopback Telegram chat (real aiogram against the fake Bot API), and an
HTTP client that signs in like a browser (cookies, the CSRF token from the page)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import aiohttp

from agents.models.scripted import ScriptedModel
from agents.tools.base import Tool, tool
from bot.config.settings import Settings
from bot.gateway.app import Gateway
from bot.store.rows import InterruptRow
from bot.web.auth import hash_password
from channels.telegram import TelegramChannel
from tests.helpers.telegram import ALICE, Env

ADMIN_PASSWORD = "correct horse battery"
VIEWER_PASSWORD = "viewer password 1"
WEB_TOKEN = "web-admin-token-0123456789"


@cache
def hashes() -> tuple[str, str]:
    """One hash each per test run (scrypt costs ~50 ms)."""
    return hash_password(ADMIN_PASSWORD), hash_password(VIEWER_PASSWORD)


class WebEnv(Env):
    def __init__(self, make_settings: Callable[..., Settings]) -> None:
        super().__init__(make_settings)
        self.edits: list[str] = []

    def configure_web(self, agents_dir: str | None = None, **web: Any) -> Settings:
        admin, viewer = hashes()
        section = {
            "enabled": True,
            "token": WEB_TOKEN,
            "users": [
                {"name": "alice", "role": "admin", "password_hash": admin},
                {"name": "victor", "role": "viewer", "password_hash": viewer},
            ],
            **web,
        }
        self.settings = self.make_settings(
            channels={"telegram": self.section(), "console": {"enabled": False}},
            routing={"strategy": "rule"},
            http={"enabled": True, "port": 0},
            web=section,
            **({"agents": {"dirs": [agents_dir]}} if agents_dir else {}),
        )
        return self.settings

    async def start(self, model: ScriptedModel, *, tools: list[Tool] | None = None) -> Gateway:
        settings = self.settings or self.configure_web()
        gateway = Gateway(
            settings, model=model, channels=[TelegramChannel(settings.channels.telegram)], tools=tools or self.tools()
        )
        await gateway.start()
        self.running.append(gateway)
        return gateway

    def tools(self) -> list[Tool]:
        @tool(risk="medium", confirm=True)
        async def delete_cache(path: str, keep_days: int = 0) -> str:
            """Delete a build cache directory."""
            self.runs.append(path if not keep_days else f"{path} (keep {keep_days} days)")
            return f"deleted {path}"

        return [delete_cache]

    def edited_texts(self, chat_id: int = ALICE) -> list[str]:
        return [str(c.params["text"]) for c in self.fake.of("editMessageText") if int(c.params["chat_id"]) == chat_id]


def base_url(gateway: Gateway) -> str:
    assert gateway.http is not None
    return f"http://127.0.0.1:{gateway.http.port}"


CSRF = re.compile(r'name="csrf" value="([^"]+)"')
NONCE = re.compile(r'name="nonce" value="([^"]+)"')


class Browserless:
    """An HTTP client with a cookie jar that accepts 127.0.0.1 (as a browser does)."""

    def __init__(self, gateway: Gateway) -> None:
        self.base = base_url(gateway)
        self.session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        self.csrf = ""

    async def close(self) -> None:
        await self.session.close()

    async def get(self, path: str, **kw: Any) -> tuple[int, str, aiohttp.ClientResponse]:
        async with self.session.get(self.base + path, allow_redirects=False, **kw) as response:
            text = await response.text()
            if found := CSRF.search(text):
                self.csrf = found.group(1)
            return response.status, text, response

    async def post(
        self, path: str, data: dict[str, str], *, csrf: bool = True, **kw: Any
    ) -> tuple[int, str, aiohttp.ClientResponse]:
        form = {"csrf": self.csrf, **data} if csrf else data
        async with self.session.post(self.base + path, data=form, allow_redirects=False, **kw) as response:
            text = await response.text()
            if found := CSRF.search(text):
                self.csrf = found.group(1)
            return response.status, text, response

    async def login(self, name: str = "alice", password: str = ADMIN_PASSWORD) -> int:
        await self.get("/web/login")
        status, _text, response = await self.post("/web/login", {"name": name, "password": password})
        if status == 303:
            await self.get(response.headers["Location"])  # the inbox, for its CSRF token
        return status


async def next_pending(gateway: Gateway) -> InterruptRow:
    """The chat's pending request, once it is there."""
    for _ in range(200):
        rows = await gateway.runs.all_pending()
        if rows:
            return rows[0]
        await asyncio.sleep(0.025)
    raise AssertionError("no request became pending")


async def pending_id(env: WebEnv) -> str:
    gateway = env.running[-1]
    rows = await gateway.runs.all_pending()
    assert len(rows) == 1
    return rows[0].id
