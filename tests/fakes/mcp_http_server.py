"""An MCP server from the ``mcp`` package itself, over streamable HTTP on 127.0.0.1.

Run as a script: it binds the loopback port given as its argument (default: a
free one), prints ``{"port": N}`` on one line, and serves until killed.  Tools cover what the gateway must handle:
plain and structured results, mixed content (image, embedded resource, link),
errors, a slow tool (timeouts), a tool whose name is long and contains ``/``,
a header echo (``${VAR}`` in headers), and ``add_tool`` that registers a new
tool and announces it (``notifications/tools/list_changed`` on both protocol eras).
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

LONG_TOOL = "files/" + "nested/" * 13 + "read_a_file_with_a_long_name"
"""A 125-character tool name with ``/``: the model needs a sanitised, reversible name for it."""

server = MCPServer("web", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool(name=LONG_TOOL)
def read_long(path: str) -> str:
    """Read a file (a tool with a long name)."""
    return f"contents of {path}"


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "woke up"


@server.tool(structured_output=False)
def picture() -> list[Any]:
    """Mixed content: text, an image, an embedded resource and a resource link."""
    return [
        types.TextContent(type="text", text="a chart"),
        types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///notes.txt", text="note text", mime_type="text/plain"),
        ),
        types.ResourceLink(type="resource_link", uri="file:///big.csv", name="big.csv"),
    ]


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("the disk is on fire")


@server.tool()
def whoami(ctx: Context) -> str:
    """The Authorization header this request carried."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    return str(headers.get("authorization", "")) if headers is not None else ""


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Register a new tool called ``name`` and announce the change."""

    def added(n: int) -> int:
        return n * 2

    server.add_tool(added, name=name, description=f"The added tool {name}.")
    await ctx.notify_tools_changed()  # 2026-07-28 clients: on their subscriptions/listen stream
    try:
        await ctx.request_context.session.send_tool_list_changed()  # handshake-era clients
    except Exception:  # the modern era has no such channel; the bus above covered it
        pass
    return f"added {name}"


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    sock.listen(64)
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    sys.exit(main())
