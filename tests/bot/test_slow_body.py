"""A client that trickles a request body (a slow-loris) is answered 408 and cut off once the body is not all in after
``BODY_TIMEOUT_S``; a handler that has its whole body is never cut, however long it works.  Raw sockets on
127.0.0.1 against the shared server and against a real gateway's Telegram webhook; time is a ``FakeClock``.
Before, the server waited for such a body as long as the connection stayed open."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from agents.models.scripted import ScriptedModel
from bot.clock import FakeClock
from bot.config.settings import Settings
from bot.gateway.app import Gateway
from bot.http import BODY_TIMEOUT_S, HttpServer
from channels.telegram import TelegramChannel
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.waiting import CEILING_S, eventually

SECRET = "webhook-secret-0123"


async def trickle(port: int, path: str, headers: str, first: bytes) -> tuple[asyncio.StreamReader, Any]:
    """Headers and the start of a body; the rest never comes (the connection stays open)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"POST {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + first)
    await writer.drain()
    return reader, writer


async def answer(reader: asyncio.StreamReader) -> bytes:
    """Everything the server says until it closes the connection (bounded)."""
    async with asyncio.timeout(CEILING_S):
        return await reader.read()


@pytest.fixture
async def server() -> AsyncIterator[tuple[HttpServer, FakeClock, dict[str, Any]]]:
    clock = FakeClock()
    http = HttpServer("127.0.0.1", 0, lambda: {"status": "ok"}, clock=clock)
    seen: dict[str, Any] = {"bodies": [], "release": asyncio.Event()}

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        seen["bodies"].append(body)
        if body == b"slow work":
            await seen["release"].wait()
        return web.Response(text=f"got {len(body)}")

    http.app.router.add_post("/hook", echo)
    await http.start()
    yield http, clock, seen
    await http.stop()


async def test_a_trickled_body_is_answered_408_and_its_connection_closed(
    server: tuple[HttpServer, FakeClock, dict[str, Any]],
) -> None:
    http, clock, seen = server
    reader, writer = await trickle(http.port, "/hook", "Content-Length: 100\r\n", b"a few bytes")
    await eventually(lambda: http.awaiting_bodies == 1, what="the handler waiting for the rest")
    await clock.advance(BODY_TIMEOUT_S - 1)
    writer.write(b" and some more")  # a byte now and then changes nothing: the whole body has its time
    await writer.drain()
    await clock.advance(1)
    said = await answer(reader)
    writer.close()
    assert said.startswith(b"HTTP/1.1 408 ") and b"did not arrive within 15 s" in said, said
    assert b"Connection: close" in said
    assert seen["bodies"] == [] and http.slow_bodies == 1, "the handler never got a body"
    # The server serves the next client as before.
    async with aiohttp.ClientSession() as session, session.post(f"http://127.0.0.1:{http.port}/hook", data=b"hi") as r:
        assert r.status == 200 and await r.text() == "got 2"


async def test_a_handler_with_its_whole_body_is_never_cut(
    server: tuple[HttpServer, FakeClock, dict[str, Any]],
) -> None:
    http, clock, seen = server
    async with aiohttp.ClientSession() as session:
        posting = asyncio.ensure_future(session.post(f"http://127.0.0.1:{http.port}/hook", data=b"slow work"))
        async with asyncio.timeout(CEILING_S):
            while not seen["bodies"]:  # noqa: ASYNC110 - set by the handler
                await asyncio.sleep(0.005)
        await clock.advance(BODY_TIMEOUT_S * 2)
        seen["release"].set()
        async with await posting as response:
            assert response.status == 200 and await response.text() == "got 9"
    assert http.slow_bodies == 0


async def test_a_gateways_telegram_webhook_cuts_off_a_trickled_update(make_settings: Callable[..., Settings]) -> None:
    fake = FakeTelegram()
    await fake.start()
    section = {
        "enabled": True,
        "token": TOKEN,
        "api_base": fake.base_url,
        "allow_from": ["*"],
        "mode": "webhook",
        "webhook": {"url": "https://bot.example/tg", "secret_token": SECRET},
    }
    settings = make_settings(
        channels={"telegram": section, "console": {"enabled": False}},
        routing={"strategy": "rule"},
        http={"enabled": True, "port": 0},
    )
    clock = FakeClock()
    model = ScriptedModel([])
    gateway = Gateway(settings, model=model, channels=[TelegramChannel(settings.channels.telegram)], clock=clock)
    await gateway.start()
    try:
        assert gateway.http is not None
        head = (
            f"Content-Type: application/json\r\nContent-Length: 5000\r\nX-Telegram-Bot-Api-Secret-Token: {SECRET}\r\n"
        )
        reader, writer = await trickle(gateway.http.port, "/telegram/webhook", head, b'{"update_id": 1, ')
        http = gateway.http
        await eventually(lambda: http.awaiting_bodies == 1, what="the webhook waiting for the rest")
        await clock.advance(BODY_TIMEOUT_S)
        said = await answer(reader)
        writer.close()
        assert said.startswith(b"HTTP/1.1 408 "), said
        assert not model.requests and gateway.http.slow_bodies == 1
    finally:
        await gateway.stop(timeout=5)
        await fake.stop()
