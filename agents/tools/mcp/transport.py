"""Opening the SDK client for one server: stdio (through the launcher) or streamable HTTP.

Stdio servers get only the SDK's minimal environment (PATH, HOME, …) plus their
configured ``env``; HTTP servers get their configured ``headers``.  ``${VAR}``
in either is read from the environment here, at connect time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agents.tools.mcp.config import McpServerConfig, server_env, server_headers

if TYPE_CHECKING:
    from mcp import Client

LAUNCHER = Path(__file__).with_name("launcher.py")
CLIENT_NAME = "supervisor-bot"


@asynccontextmanager
async def open_client(
    name: str,
    config: McpServerConfig,
    *,
    stderr: TextIO | None,
    on_message: Callable[[Any], Awaitable[None]],
) -> AsyncIterator[Client]:
    """A connected, initialised client; entered and left by the same task (the SDK requires it)."""
    from mcp import Client, Implementation, StdioServerParameters
    from mcp.client.stdio import stdio_client

    options: dict[str, Any] = {
        "cache": None,  # tools are listed by the connection itself, refreshed on change notifications
        "message_handler": on_message,
        "client_info": Implementation(name=CLIENT_NAME, version="0.1"),
        "mode": "legacy" if config.protocol == "legacy" else "auto",
    }
    if config.command:
        # The launcher takes the server down if the gateway dies without closing it.
        params = StdioServerParameters(
            command=sys.executable,
            args=["-I", "-S", str(LAUNCHER), str(os.getpid()), "--", config.command, *config.args],
            env=server_env(config, name),
            cwd=config.cwd,
        )
        async with Client(stdio_client(params, errlog=stderr or sys.stderr), **options) as client:
            yield client
        return
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    assert config.url is not None
    # As the SDK's own client factory does, without its private module: a long read timeout, because a
    # server may hold a response stream open; redirects are followed by the transport, within the origin.
    timeout = httpx2.Timeout(config.timeout_s, read=max(300.0, config.timeout_s))
    http = httpx2.AsyncClient(headers=server_headers(config, name), timeout=timeout)
    async with http, Client(streamable_http_client(config.url, http_client=http), **options) as client:
        yield client
