"""A small HTTP/1.1 client for the Bot API's busiest call: a JSON ``POST`` to one origin over kept-alive connections.

aiohttp's client builds a request object, a connector key, cookie and header sets, a payload, a response object
and its timers for every call, several times the CPU of the call itself (measured: see bench/README.md,
"Telegram's sends over kept-alive connections").  This one writes the request in one buffer and reads the answer
on a :class:`asyncio.Protocol`: the status, a ``Content-Length`` or chunked body (or one that ends with the
connection), and whether the connection may serve the next call.

What is the same as aiohttp's: a bounded pool (``limit`` connections, 100 as aiogram's connector), kept-alive
connections dropped after ``KEEPALIVE_S`` idle or once the server closes or refuses keep-alive, TLS with the CA
bundle aiogram uses, one timeout for the whole call, and no retry of its own: a connection lost before the
whole answer came is an :class:`HttpFailure` (the caller's network error, retried there as before).
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable
from typing import Any

from yarl import URL

KEEPALIVE_S = 15.0
"""An idle connection older than this is not used again (aiohttp's ``keepalive_timeout``)."""
MAX_HEAD = 65_536
"""Longest status line and headers accepted."""


class HttpFailure(ConnectionError):
    """The call did not get a whole answer (connection lost, or an answer that is not HTTP/1.x)."""


class _Connection(asyncio.Protocol):
    """One connection: a call at a time; the answer parsed as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._answer: asyncio.Future[tuple[int, bytes]] | None = None
        self._buffer = bytearray()
        self._status = 0
        self._length: int | None = None
        """Bytes of body still to come (``Content-Length``), or None: chunked or until the connection ends."""
        self._chunked = False
        self._in_body = False
        self._body = bytearray()
        self.reusable = True

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._answer is None or self._answer.done():
            self.reusable = False  # bytes nobody asked for: this connection is out of step
            self._close()
            return
        self._buffer += data
        try:
            self._parse()
        except (ValueError, IndexError) as exc:
            self._fail(HttpFailure(f"unreadable HTTP answer: {exc}"))

    def eof_received(self) -> bool | None:
        self.closed = True
        if self._answer is not None and not self._answer.done():
            if self._in_body and self._length is None and not self._chunked:
                self._finish()  # a body that ends with the connection
            else:
                self._fail(HttpFailure("the server closed the connection before its whole answer"))
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._answer is not None and not self._answer.done():
            if exc is None and self._in_body and self._length is None and not self._chunked:
                self._finish()
            else:
                reason = f": {exc}" if exc is not None else ""
                self._fail(HttpFailure(f"the connection was lost before the whole answer{reason}"))

    # -- a call -------------------------------------------------------------------------------

    async def call(self, request: bytes) -> tuple[int, bytes]:
        assert self.transport is not None
        self._answer = asyncio.get_running_loop().create_future()
        self._buffer.clear()
        self._body = bytearray()
        self._status, self._length, self._chunked, self._in_body = 0, None, False, False
        self.transport.write(request)
        try:
            return await self._answer
        finally:
            self._answer = None

    def _parse(self) -> None:
        while not self._in_body:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEAD:
                    raise ValueError("headers too long")
                return
            head = bytes(self._buffer[:end]).decode("latin-1")
            del self._buffer[: end + 4]
            lines = head.split("\r\n")
            version, _, rest = lines[0].partition(" ")
            if not version.startswith("HTTP/1."):
                raise ValueError(f"not HTTP/1.x: {lines[0][:40]!r}")
            status = int(rest[:3])
            if 100 <= status < 200:
                continue  # an interim answer: the real one follows
            self._status = status
            keep_alive = version != "HTTP/1.0"
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name, value = name.strip().lower(), value.strip()
                if name == "content-length":
                    self._length = int(value)
                elif name == "transfer-encoding" and "chunked" in value.lower():
                    self._chunked = True
                elif name == "connection":
                    keep_alive = "close" not in value.lower() and (keep_alive or "keep-alive" in value.lower())
            if self._chunked:
                self._length = None
            if not keep_alive or (self._length is None and not self._chunked):
                self.reusable = False
            if status in (204, 304):
                self._length = 0
            self._in_body = True
        if self._chunked:
            self._parse_chunks()
        elif self._length is not None:
            if len(self._buffer) >= self._length:
                self._body = self._buffer[: self._length]
                if len(self._buffer) > self._length:
                    self.reusable = False  # more than was announced
                self._finish()
        else:
            self._body += self._buffer
            self._buffer.clear()

    def _parse_chunks(self) -> None:
        while True:
            line_end = self._buffer.find(b"\r\n")
            if line_end < 0:
                return
            size = int(bytes(self._buffer[:line_end]).split(b";", 1)[0].strip(), 16)
            if size == 0:  # the last chunk; then trailers (header lines, ignored) and an empty line
                rest = self._buffer[line_end + 2 :]
                if rest.startswith(b"\r\n") or rest.find(b"\r\n\r\n") >= 0:
                    self._finish()
                return
            start, stop = line_end + 2, line_end + 2 + size
            if len(self._buffer) < stop + 2:
                return
            self._body += self._buffer[start:stop]
            del self._buffer[: stop + 2]

    def _finish(self) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result((self._status, bytes(self._body)))

    def _fail(self, exc: Exception) -> None:
        self.reusable = False
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(exc)
        self._close()

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class JsonPoster:
    """``POST``s of JSON bodies to the origin of ``base``, over at most ``limit`` kept-alive connections."""

    def __init__(
        self,
        base: URL,
        *,
        headers: dict[str, str],
        ssl_context: ssl.SSLContext | None,
        monotonic: Callable[[], float],
        limit: int = 100,
    ) -> None:
        """``monotonic``: a :class:`~bot.clock.Clock`'s, what the keep-alive's idle time is read on."""
        if base.scheme not in ("http", "https") or not base.host:
            raise ValueError(f"not an http(s) URL: {base.scheme}://…")
        self.host = base.host
        self.port = base.port or (443 if base.scheme == "https" else 80)
        self.ssl = (ssl_context or ssl.create_default_context()) if base.scheme == "https" else None
        default_port = self.port == (443 if base.scheme == "https" else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        host = host if default_port else f"{host}:{self.port}"
        self._head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": host, **headers}.items()).encode("latin-1")
        self._idle: deque[_Connection] = deque()
        self._room = asyncio.Semaphore(limit)
        self._generation = 0
        self._monotonic = monotonic

    def _request(self, path: str, body: bytes) -> bytes:
        return b"".join(
            (
                b"POST ",
                path.encode("ascii"),
                b" HTTP/1.1\r\n",
                self._head,
                b"Content-Type: application/json\r\nContent-Length: ",
                str(len(body)).encode(),
                b"\r\n\r\n",
                body,
            )
        )

    async def post(self, url: URL, body: bytes) -> tuple[int, bytes]:
        """The status and body of the answer to ``POST url`` (on this poster's origin); a call cut off raises
        :class:`HttpFailure` or an :class:`OSError` (refused, reset), and the caller's timeout cancels it."""
        request = self._request(url.raw_path_qs, body)
        async with self._room:
            conn = await self._connection()
            generation = self._generation
            try:
                answer = await conn.call(request)
            except BaseException:  # cut off (a timeout, a failure): what the connection holds is unknown
                conn._close()
                raise
            if conn.reusable and not conn.closed and generation == self._generation:
                conn.idle_since = self._monotonic()
                self._idle.append(conn)
            else:
                conn._close()
            return answer

    async def _connection(self) -> _Connection:
        now = self._monotonic()
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the least likely to have been closed by the server
            if not conn.closed and now - conn.idle_since < KEEPALIVE_S:
                return conn
            conn._close()
        loop = asyncio.get_running_loop()
        extra: dict[str, Any] = {"ssl": self.ssl, "server_hostname": self.host} if self.ssl is not None else {}
        _transport, conn = await loop.create_connection(_Connection, self.host, self.port, **extra)
        return conn

    @property
    def idle(self) -> int:
        """Idle connections still open (the server closed none of them yet)."""
        return sum(1 for conn in self._idle if not conn.closed)

    def close(self) -> None:
        """Close the idle connections; those in use close when their call is done.  Usable again afterwards."""
        self._generation += 1
        while self._idle:
            self._idle.pop()._close()
