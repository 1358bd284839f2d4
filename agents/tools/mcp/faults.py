"""Outages of MCP servers: what callers get, and short reasons users can read.

An :class:`Outage` is one stretch of unavailability of one server, with an id,
so the gateway can tell each chat once per outage; its ``reason`` is short and
never carries configuration secrets or server output (those go to the log).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents.tools.mcp.config import McpConfigError

LOST = "the connection was lost"
"""The generic reason; a more specific one found later replaces it."""


@dataclass(frozen=True)
class Outage:
    """A stretch of time a server is unavailable; ``reason`` is short and safe to show to users."""

    server: str
    id: int
    reason: str
    since: float


class ServerUnavailable(Exception):
    """The server cannot serve this request now."""

    def __init__(self, outage: Outage) -> None:
        super().__init__(f"MCP server {outage.server!r} is unavailable: {outage.reason}")
        self.outage = outage


def starting_reason(reason: str, transport: str) -> str:
    """The reason a connect attempt failed, as users read it."""
    if reason in ("exited", "closed the connection", "failed", "could not be started"):
        return "could not start" if transport == "stdio" else "could not connect"
    return reason


def fail(future: asyncio.Future[Any], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)


def _leaves(exc: BaseException) -> Sequence[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def explain(exc: BaseException, transport: str) -> tuple[str, str]:
    """A short reason for users and the agent, and the full detail for the log."""
    leaves = _leaves(exc)
    leaf = next((e for e in leaves if not isinstance(e, asyncio.CancelledError)), leaves[0])
    detail = f"{type(leaf).__name__}: {leaf}"
    name = type(leaf).__name__
    if isinstance(leaf, McpConfigError):
        return "is misconfigured", str(leaf)
    status = getattr(getattr(leaf, "response", None), "status_code", None)
    if status in (401, 403):
        return f"rejected the credentials (HTTP {status})", detail
    if status is not None:
        return f"answered HTTP {status}", detail
    if "ConnectError" in name or isinstance(leaf, ConnectionError):
        return ("refused the connection" if transport == "http" else "could not be reached"), detail
    if "Timeout" in name:
        return "did not answer in time", detail
    if isinstance(leaf, OSError):
        return "could not be started", detail
    code = getattr(leaf, "code", None)
    if code == -32000:
        return ("exited" if transport == "stdio" else "closed the connection"), detail
    if code is not None:
        return "failed the handshake", detail
    return "failed", detail
