"""``bot run`` says where the web console is and how to sign in, once the HTTP server listens (never the token)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel
from bot.config.settings import Settings
from bot.config.web import WebSection
from bot.gateway.app import Gateway
from bot.gateway.console_parts import console_line
from tests.web.harness import WEB_TOKEN, hashes


async def started(settings: Settings, lines: list[str]) -> Gateway:
    gateway = Gateway(settings, model=ScriptedModel([]), channels=[], progress=lines.append)
    await gateway.start()
    return gateway


async def test_the_console_s_address_is_printed_and_logged_at_start(
    make_settings: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    admin, viewer = hashes()
    users = [{"name": "alice", "role": "admin", "password_hash": admin}, {"name": "victor", "password_hash": viewer}]
    settings = make_settings(
        channels={"console": {"enabled": False}},
        http={"port": 0},
        web={"enabled": True, "token": WEB_TOKEN, "users": users},
    )
    lines: list[str] = []
    with caplog.at_level(logging.INFO, logger="bot"):
        gateway = await started(settings, lines)
    try:
        assert gateway.http is not None
        expected = (
            f"web console: http://127.0.0.1:{gateway.http.port}/web "
            "(sign in as alice or victor (web.users), or with the admin token (BOT_WEB__TOKEN))"
        )
        assert [line for line in lines if line.startswith("web console")] == [expected]
        assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("web console")] == [expected]
        assert WEB_TOKEN not in "\n".join(lines) + caplog.text
    finally:
        await gateway.stop(timeout=5)
    quiet: list[str] = []
    gateway = await started(
        make_settings(channels={"console": {"enabled": False}}, http={"enabled": True, "port": 0}), quiet
    )
    try:
        assert not any("web console" in line for line in quiet), "no console, no line"
    finally:
        await gateway.stop(timeout=5)


def test_an_address_a_browser_can_open() -> None:
    web = WebSection(enabled=True, token=WEB_TOKEN, path="/ops")
    assert console_line(web, "0.0.0.0", 8080) == (
        "web console: http://localhost:8080/ops (sign in with the admin token (BOT_WEB__TOKEN); "
        "listening on every address (0.0.0.0))"
    )
    assert console_line(web, "::1", 8080).startswith("web console: http://[::1]:8080/ops ")
