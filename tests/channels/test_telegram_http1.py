"""The Bot API's kept-alive JSON poster (channels/telegram/http1.py) against a scripted HTTP server on 127.0.0.1:
what it writes, the answers it reads (a length, chunks split anywhere, a body that ends with the connection,
interim answers), when it keeps a connection and when it opens another, and a call cut off."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
from yarl import URL

from bot.clock import FakeClock
from channels.telegram.http1 import KEEPALIVE_S, HttpFailure, JsonPoster
from tests.waiting import eventually

Script = Callable[[bytes], list[bytes]]
"""The request (head and body) → what the server writes back, piece by piece (an empty piece: close)."""


@dataclass
class Server:
    script: Script
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    got_request: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                self.got_request.set()
                for piece in self.script(request):
                    if not piece:
                        writer.close()
                        return
                    writer.write(piece)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = Server(lambda _request: [ok(b'{"ok":true}')])
    tcp = await asyncio.start_server(srv.serve, "127.0.0.1", 0)
    srv.port = tcp.sockets[0].getsockname()[1]
    yield srv
    tcp.close()


def ok(body: bytes, *headers: str) -> bytes:
    extra = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


CLOCK = FakeClock()
"""The keep-alive's idle time is read on it (moved only by the test about it)."""


def poster_for(server: Server, clock: FakeClock = CLOCK) -> JsonPoster:
    base = URL(f"http://127.0.0.1:{server.port}")
    return JsonPoster(base, headers={"User-Agent": "test"}, ssl_context=None, monotonic=clock.monotonic)


def url(server: Server, method: str = "sendMessage") -> URL:
    return URL(f"http://127.0.0.1:{server.port}/botTOKEN/{method}")


async def test_a_request_is_one_json_post_and_connections_are_kept(server: Server) -> None:
    poster = poster_for(server)
    body = json.dumps({"chat_id": 5, "text": "héllo"}).encode()
    assert await poster.post(url(server), body) == (200, b'{"ok":true}')
    assert await poster.post(url(server), body) == (200, b'{"ok":true}')
    assert server.connections == 1
    head, _, sent = server.requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /botTOKEN/sendMessage HTTP/1.1"
    assert set(lines[1:]) == {
        f"Host: 127.0.0.1:{server.port}",
        "User-Agent: test",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    }
    assert sent == body
    poster.close()


async def test_concurrent_calls_each_have_a_connection_and_keep_them(server: Server) -> None:
    poster = poster_for(server)
    answers = await asyncio.gather(*(poster.post(url(server), b"{}") for _ in range(5)))
    assert answers == [(200, b'{"ok":true}')] * 5
    assert server.connections == poster.idle == 5
    await asyncio.gather(*(poster.post(url(server), b"{}") for _ in range(5)))
    assert server.connections == 5
    poster.close()


@pytest.mark.parametrize("split", [1, 3, 1000])
async def test_chunked_answers_split_anywhere(server: Server, split: int) -> None:
    first, second = b'{"ok"', b':false,"error_code":429}'
    answer = (
        b"HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"%x;ext=1\r\n%s\r\n" % (len(first), first)
        + b"%x\r\n%s\r\n" % (len(second), second)
        + b"0\r\nX-Trailer: yes\r\n\r\n"
    )
    server.script = lambda _r: [answer[i : i + split] for i in range(0, len(answer), split)]
    poster = poster_for(server)
    assert await poster.post(url(server), b"{}") == (429, b'{"ok":false,"error_code":429}')
    assert await poster.post(url(server), b"{}") == (429, b'{"ok":false,"error_code":429}')
    assert server.connections == 1
    poster.close()


async def test_interim_answers_are_skipped(server: Server) -> None:
    server.script = lambda _r: [b"HTTP/1.1 100 Continue\r\n\r\n", ok(b"done")]
    poster = poster_for(server)
    assert await poster.post(url(server), b"{}") == (200, b"done")
    poster.close()


async def test_connection_close_and_http_1_0_open_a_new_connection(server: Server) -> None:
    answers = iter([[ok(b"a", "Connection: close")], [b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nb"], [ok(b"c")]])
    server.script = lambda _r: next(answers)
    poster = poster_for(server)
    assert [(await poster.post(url(server), b"{}"))[1] for _ in range(3)] == [b"a", b"b", b"c"]
    assert server.connections == 3
    poster.close()


async def test_a_body_that_ends_with_the_connection(server: Server) -> None:
    server.script = lambda _r: [b"HTTP/1.1 502 Bad Gateway\r\n\r\nupstream ", b"down", b""]
    poster = poster_for(server)
    assert await poster.post(url(server), b"{}") == (502, b"upstream down")
    assert poster.idle == 0
    poster.close()


async def test_a_connection_the_server_closed_while_idle_is_not_used_again(server: Server) -> None:
    server.script = lambda _r: [ok(b"first"), b""]  # answered, then closed without saying so
    poster = poster_for(server)
    assert await poster.post(url(server), b"{}") == (200, b"first")
    await eventually(lambda: poster.idle == 0, what="the server's close seen")
    server.script = lambda _r: [ok(b"second")]
    assert await poster.post(url(server), b"{}") == (200, b"second")
    assert server.connections == 2
    poster.close()


@pytest.mark.parametrize(
    "answer",
    [
        [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf", b""],  # cut in the body
        [b"HTTP/1.1 200 OK\r\nContent-Le", b""],  # cut in the head
        [b""],  # nothing at all
        [b"SMTP ready\r\n\r\n"],  # not HTTP
    ],
)
async def test_an_answer_cut_off_or_unreadable_is_a_failure_and_the_connection_goes(
    server: Server, answer: list[bytes]
) -> None:
    server.script = lambda _r: answer
    poster = poster_for(server)
    with pytest.raises(HttpFailure):
        await poster.post(url(server), b"{}")
    assert poster.idle == 0
    server.script = lambda _r: [ok(b"again")]
    assert await poster.post(url(server), b"{}") == (200, b"again")
    poster.close()


async def test_a_refused_connection_is_an_os_error() -> None:
    tcp = await asyncio.start_server(lambda _r, _w: None, "127.0.0.1", 0)
    port = tcp.sockets[0].getsockname()[1]
    tcp.close()
    await tcp.wait_closed()
    poster = JsonPoster(URL(f"http://127.0.0.1:{port}"), headers={}, ssl_context=None, monotonic=CLOCK.monotonic)
    with pytest.raises(OSError):
        await poster.post(URL(f"http://127.0.0.1:{port}/x"), b"{}")


async def test_a_cancelled_call_closes_its_connection(server: Server) -> None:
    server.script = lambda _r: []  # never answers
    poster = poster_for(server)
    call = asyncio.create_task(poster.post(url(server), b"{}"))
    await server.got_request.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert poster.idle == 0
    server.script = lambda _r: [ok(b"next")]
    assert await poster.post(url(server), b"{}") == (200, b"next")
    assert server.connections == 2
    poster.close()


async def test_a_connection_idle_for_the_keep_alive_is_not_used_again(server: Server) -> None:
    clock = FakeClock()
    poster = poster_for(server, clock)
    await poster.post(url(server), b"{}")
    await clock.advance(KEEPALIVE_S - 1)
    await poster.post(url(server), b"{}")
    assert server.connections == 1
    await clock.advance(KEEPALIVE_S)
    await poster.post(url(server), b"{}")
    assert server.connections == 2
    poster.close()


async def test_closed_poster_is_usable_again(server: Server) -> None:
    poster = poster_for(server)
    await poster.post(url(server), b"{}")
    poster.close()
    assert poster.idle == 0
    assert await poster.post(url(server), b"{}") == (200, b'{"ok":true}')
    assert server.connections == 2
    poster.close()


def test_only_http_urls() -> None:
    with pytest.raises(ValueError):
        JsonPoster(URL("ftp://example.org"), headers={}, ssl_context=None, monotonic=CLOCK.monotonic)
    https = JsonPoster(URL("https://api.example.org"), headers={}, ssl_context=None, monotonic=CLOCK.monotonic)
    assert https.port == 443 and https.ssl is not None
