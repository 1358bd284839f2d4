"""One MCP server: an owner task that holds the connection and serves requests from a queue.

The SDK's transports (stdio, streamable HTTP) are context managers built on
anyio task groups: they must be entered and left by the same task.  So each
server gets one owner task, started on first use; callers put requests on its
queue and wait for a future.  The owner connects lazily, lists the tools once
(again on ``notifications/tools/list_changed``, or when a long-idle
connection is probed), runs calls concurrently inside the connection, and
reconnects with backoff after a failure.

Faults become an :class:`Outage` (one per stretch of unavailability, with an
id, so the gateway tells each chat once): the server could not start, did not
answer in time, exited, or stopped answering.  Callers get
:class:`ServerUnavailable` promptly; the owner finishes cleaning up (stopping
the process) in the background.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import anyio

from agents.clock import SYSTEM_CLOCK, Clock
from agents.tools.base import ToolError
from agents.tools.mcp.config import McpServerConfig
from agents.tools.mcp.errlog import StderrLog
from agents.tools.mcp.faults import LOST, Outage, ServerUnavailable, explain, fail, starting_reason
from agents.tools.mcp.transport import open_client

if TYPE_CHECKING:
    from mcp import Client

log = logging.getLogger(__name__)

PROBE_IDLE_S = 5.0
"""A connection idle longer than this is probed (the tools re-listed) before its tools are handed out."""
PROBE_TIMEOUT_S = 5.0
RECONNECT_WAIT_S = 5.0
"""How long a run waits for a reconnect attempt before going on without the server (it continues meanwhile)."""
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
STOP_TIMEOUT_S = 10.0
MAX_PAGES = 100

State = Literal["idle", "connecting", "up", "down", "stopped"]


@dataclass(frozen=True)
class ListedTool:
    """A tool as the server lists it."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class _Call:
    tool: str
    args: dict[str, Any]
    future: asyncio.Future[Any]


_LIST, _REFRESH, _LOST, _STOP = "list", "refresh", "lost", "stop"
_Item = _Call | str


class ServerConnection:
    """The client side of one configured MCP server."""

    def __init__(self, name: str, config: McpServerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        """``clock``: what reconnect back-offs, the idle time before a health check and outage stamps are read
        on (tests move a fake one)."""
        self.name = name
        self.config = config
        self.clock = clock
        self.state: State = "idle"
        self.outage: Outage | None = None
        self.detail = ""
        """The last failure in full (for logs and ``bot mcp list``; may name files, never config secrets)."""
        self.tools: tuple[ListedTool, ...] = ()
        self.protocol: str | None = None
        self.version = 0
        """Bumped whenever the listed tools change."""
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._waiters: list[asyncio.Future[tuple[ListedTool, ...]]] = []
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._outage_ids = itertools.count(1)
        self._failures = 0
        self._retry_at = 0.0
        self._last_ok = 0.0
        self._stale = False
        self._listing = False
        self._serving = False
        self._closing = False
        self._stderr: StderrLog | None = None

    # -- what callers use ------------------------------------------------------------------

    async def list_tools(self) -> tuple[ListedTool, ...]:
        """The server's tools, connecting (or reconnecting) first if needed.

        Raises :class:`ServerUnavailable` during an outage (at once while backing off).
        """
        if self._closing:
            raise ServerUnavailable(self._stopped())
        if self.state == "down" and self.clock.monotonic() < self._retry_at and self.outage is not None:
            raise ServerUnavailable(self.outage)
        self._ensure_owner()
        future: asyncio.Future[tuple[ListedTool, ...]] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        self._queue.put_nowait(_LIST)
        backstop = self.config.timeout_s + PROBE_TIMEOUT_S + 10
        try:
            return await asyncio.wait_for(asyncio.shield(future), backstop)
        except TimeoutError:
            raise ServerUnavailable(self._declare("did not answer", "no answer from the owner task")) from None

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        """Call ``tool``; returns the SDK's ``CallToolResult``.

        Raises :class:`ServerUnavailable` when the server is down or fails during
        the call, :class:`ToolError` for a timeout or a refused call.
        """
        if self._closing:
            raise ServerUnavailable(self._stopped())
        if self.state not in ("up", "connecting"):
            raise ServerUnavailable(self.outage or self._declare("is not connected", "call while not connected"))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Call(tool, args, future))
        backstop = self.config.timeout_s + PROBE_TIMEOUT_S + 10
        try:
            return await asyncio.wait_for(asyncio.shield(future), backstop)
        except TimeoutError:
            future.cancel()
            raise ToolError(f"{tool} did not answer within {backstop:g}s") from None
        except asyncio.CancelledError:
            future.cancel()  # the owner cancels the call on the server's side too
            raise

    def retry_in(self) -> float | None:
        if self.state != "down":
            return None
        return max(0.0, self._retry_at - self.clock.monotonic())

    async def aclose(self) -> None:
        """Stop the server (or close the HTTP session) and fail whatever still waits."""
        self._closing = True
        self._fail_waiters(ServerUnavailable(self._stopped()))
        task = self._task
        if task is None or task.done():
            self.state = "stopped"
            return
        self._queue.put_nowait(_STOP)
        if self._scope is not None:
            self._scope.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT_S)
        except TimeoutError:
            log.warning("MCP server %s: did not stop within %ss", self.name, STOP_TIMEOUT_S)
            task.cancel()
        self.state = "stopped"

    # -- outages -----------------------------------------------------------------------------

    def _declare(self, reason: str, detail: str) -> Outage:
        """Start an outage, or continue the current one (same id: users are told once per outage).

        A continuing outage takes the newer reason unless that one is only the generic "lost".
        """
        self.detail = detail
        if self.outage is None:
            self.outage = Outage(self.name, next(self._outage_ids), reason, self.clock.time())
            log.warning("MCP server %s unavailable: %s (%s)", self.name, reason, detail)
        elif reason not in (self.outage.reason, LOST):
            self.outage = replace(self.outage, reason=reason)
            log.info("MCP server %s still unavailable: %s (%s)", self.name, reason, detail)
        self.state = "down"
        return self.outage

    def _lose(self, reason: str, detail: str) -> Outage:
        """The working connection broke: declare, allow an immediate reconnect, end the serving loop."""
        outage = self._declare(reason, detail)
        self._failures, self._retry_at = 0, self.clock.monotonic()
        if self._serving:
            self._queue.put_nowait(_LOST)
        return outage

    def _attempt_failed(self, reason: str, detail: str) -> Outage:
        outage = self._declare(reason, detail)
        self._failures += 1
        delay = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self._failures - 1))
        self._retry_at = self.clock.monotonic() + delay
        log.info("MCP server %s: next connect attempt in %gs", self.name, delay)
        return outage

    def _recover(self) -> None:
        if self.outage is not None:
            log.warning("MCP server %s is available again", self.name)
        self.outage, self._failures, self.state, self.detail = None, 0, "up", ""

    def _stopped(self) -> Outage:
        return self.outage or Outage(self.name, 0, "the gateway is shutting down", self.clock.time())

    # -- the owner task ---------------------------------------------------------------------

    def _ensure_owner(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp:{self.name}")

    async def _run(self) -> None:
        try:
            with anyio.CancelScope() as self._scope:
                await self._loop()
        except Exception as exc:  # a bug here must not leave callers waiting forever; the next request restarts
            log.exception("MCP server %s: the connection task failed", self.name)
            self._declare("failed", f"{type(exc).__name__}: {exc}")
        self._fail_waiters(ServerUnavailable(self._stopped()))
        while not self._queue.empty():
            left = self._queue.get_nowait()
            if isinstance(left, _Call):
                fail(left.future, ServerUnavailable(self._stopped()))

    async def _loop(self) -> None:
        while not self._closing:
            item = await self._queue.get()
            if item == _STOP:
                break
            if isinstance(item, _Call):
                fail(item.future, ServerUnavailable(self._current()))
                continue
            while item == _LIST and self._waiters and not self._closing:
                if self.state == "down" and self.clock.monotonic() < self._retry_at:
                    self._fail_waiters(ServerUnavailable(self._current()))
                    break
                await self._connect_and_serve()

    def _current(self) -> Outage:
        return self.outage or self._declare("is not connected", "not connected")

    async def _connect_and_serve(self) -> None:
        hard = self.config.timeout_s
        # A first connect may take its time; during an outage, runs wait only briefly for a reconnect.
        soft = min(hard, RECONNECT_WAIT_S) if self.outage is not None else hard
        loop = asyncio.get_running_loop()
        timer = loop.call_later(soft, self._soft_deadline, hard)
        self.state = "connecting"
        self._stderr = StderrLog() if self.config.command else None
        connected = False
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + hard) as scope:
                stderr = self._stderr.file if self._stderr is not None else None
                async with open_client(self.name, self.config, stderr=stderr, on_message=self._on_message) as client:
                    await self._refresh(client)
                    scope.deadline = math.inf
                    timer.cancel()
                    connected = True
                    self.protocol = client.protocol_version
                    self._recover()
                    log.info(
                        "MCP server %s connected (%s, protocol %s): %d tools",
                        self.name,
                        self.config.transport,
                        self.protocol,
                        len(self.tools),
                    )
                    await self._serve(client)
            if scope.cancelled_caught and not connected:
                self._attempt_failed(f"did not answer within {hard:g}s", self._with_stderr("connect timed out"))
        except Exception as exc:  # any fault of the server or transport becomes an outage, logged with details
            reason, detail = explain(exc, self.config.transport)
            if connected:
                self._lose(reason, self._with_stderr(detail))
            else:
                self._attempt_failed(starting_reason(reason, self.config.transport), self._with_stderr(detail))
        finally:
            timer.cancel()
            self._serving = False
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None
        if not connected:
            self._fail_waiters(ServerUnavailable(self._current()))
        elif self.state == "up" and not self._closing:
            self._lose("closed the connection", "the session ended")

    def _soft_deadline(self, hard: float) -> None:
        """Answer the runs waiting for a slow connect attempt; the attempt itself goes on until ``hard``."""
        if self.state != "connecting" or not self._waiters:
            return
        outage = self.outage or self._declare(f"did not answer within {hard:g}s", "connect timed out")
        self._fail_waiters(ServerUnavailable(outage))

    def _with_stderr(self, detail: str) -> str:
        tail = self._stderr.tail() if self._stderr is not None else ""
        return f"{detail}; stderr: {tail}" if tail else detail

    async def _serve(self, client: Client) -> None:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        self._serving = True
        self._answer_waiters()
        caps = client.server_capabilities.tools
        async with anyio.create_task_group() as tg:
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS and caps is not None and caps.list_changed:
                tg.start_soon(self._listen, client)
            while True:
                item = await self._queue.get()
                if item == _STOP or (item == _LOST and self.state != "up"):  # a stale _LOST is from before
                    break
                if isinstance(item, _Call):
                    tg.start_soon(self._call, client, item)
                elif (item == _REFRESH or (item == _LIST and self._waiters)) and not self._listing:
                    self._listing = True
                    tg.start_soon(self._list_for_waiters, client, item == _REFRESH)
            self._serving = False
            tg.cancel_scope.cancel()

    # -- inside a connection -------------------------------------------------------------------

    async def _list_for_waiters(self, client: Client, refresh: bool) -> None:
        try:
            idle = self.clock.monotonic() - self._last_ok > PROBE_IDLE_S
            if (refresh or self._stale or idle) and not await self._probe(client):
                return
            self._answer_waiters()
        finally:
            self._listing = False
        if self._waiters:  # asked for while this listing ran
            self._queue.put_nowait(_LIST)

    async def _probe(self, client: Client) -> bool:
        """Re-list the tools within a short time; a failure means the connection is lost."""
        try:
            with anyio.fail_after(min(PROBE_TIMEOUT_S, self.config.timeout_s)):
                await self._refresh(client)
            return True
        except TimeoutError:
            self._lose("stopped answering", "a health check (tools/list) timed out")
        except Exception as exc:  # the connection is unusable: reconnect on the next request
            reason, detail = explain(exc, self.config.transport)
            self._lose(reason, detail)
        return False

    async def _refresh(self, client: Client) -> None:
        cursor: str | None = None
        listed: list[ListedTool] = []
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            listed.extend(
                ListedTool(t.name, t.description or t.title or "", dict(t.input_schema or {})) for t in page.tools
            )
            cursor = page.next_cursor
            if cursor is None:
                break
        self._stale = False
        self._last_ok = self.clock.monotonic()
        if self._stderr is not None:
            self._stderr.trim()
        if tuple(listed) != self.tools:
            if self.version:
                log.info("MCP server %s: tools changed (%d tools)", self.name, len(listed))
            self.tools = tuple(listed)
            self.version += 1

    async def _call(self, client: Client, call: _Call) -> None:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        future = call.future
        if future.done():
            return
        try:
            with anyio.CancelScope() as scope:
                future.add_done_callback(lambda f: scope.cancel() if f.cancelled() else None)
                result = await client.call_tool(call.tool, call.args, read_timeout_seconds=self.config.timeout_s)
                self._last_ok = self.clock.monotonic()
                if not future.done():
                    future.set_result(result)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                if await self._probe(client):
                    error: Exception = ToolError(
                        f"{call.tool} did not answer within {self.config.timeout_s:g}s (timed out); "
                        "the server may still finish it"
                    )
                else:
                    error = ServerUnavailable(self._current())
            elif exc.code == CONNECTION_CLOSED:
                error = ServerUnavailable(self._lose("exited or closed the connection", f"during {call.tool}"))
            else:
                error = ToolError(f"the MCP server refused the call: {exc.error.message}")
            fail(future, error)
        except (RuntimeError, ValueError) as exc:  # the server answered, but not validly (schema, shape)
            fail(future, ToolError(f"the MCP server's answer was not valid: {exc}"))
        except Exception as exc:  # a transport fault: the connection is unusable, reconnect next time
            reason, detail = explain(exc, self.config.transport)
            fail(future, ServerUnavailable(self._lose(reason, detail)))
        finally:
            if not future.done():
                outage = self._stopped() if self._closing else self._lose(LOST, "the call was cut off")
                fail(future, ServerUnavailable(outage))

    async def _listen(self, client: Client) -> None:
        """Receive ``tools/list_changed`` on a 2026-era connection (``subscriptions/listen``)."""
        from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
        from mcp.shared.exceptions import MCPError

        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._stale = True
                    self._queue.put_nowait(_REFRESH)
        except (MCPError, ListenNotSupportedError, SubscriptionLost, TimeoutError) as exc:
            log.debug("MCP server %s: no tool change notifications: %s", self.name, exc)

    async def _on_message(self, message: Any) -> None:
        """Notifications on a handshake-era connection; transport errors surface here too."""
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._stale = True
            self._queue.put_nowait(_REFRESH)
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport error: %s", self.name, message)

    # -- waiters -------------------------------------------------------------------------------

    def _answer_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(self.tools)

    def _fail_waiters(self, error: Exception) -> None:
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_exception(error)
