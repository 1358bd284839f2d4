"""A small MCP server over stdio, without the SDK (it starts in milliseconds).

It speaks the handshake-era protocol (``initialize``; the SDK client's
``server/discover`` probe gets "method not found" and falls back), which also
exercises the client's legacy path.  Command-line switches make it misbehave
the ways real servers do:

``--exit-at-start CODE``  exit before reading anything (a server that cannot start)
``--hang-at-start``       read requests but never answer (a server stuck at start)
``--ignore-eof``          keep running when stdin closes and ignore SIGTERM (a stuck server)
``--spawn-child``         start a grandchild (``sleep``) that the gateway must also take down
``--pid-file PATH``       append this process's pid (and the grandchild's) to PATH
``--count-file PATH``     the ``count`` tool appends one line per call to PATH

Tools: ``echo(text)``, ``count(note)``, ``crash()`` (exits mid-call), ``hang()``
(blocks the whole server), ``add_tool()`` (adds ``extra`` and notifies
``notifications/tools/list_changed``), ``extra(n)`` once added.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "count",
        "description": "Record one call.",
        "inputSchema": {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]},
    },
    {"name": "crash", "description": "Exit in the middle of the call.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Block forever.", "inputSchema": {"type": "object"}},
    {"name": "add_tool", "description": "Add the extra tool.", "inputSchema": {"type": "object"}},
]
EXTRA = {
    "name": "extra",
    "description": "Double a number.",
    "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "isError": error}


def call_tool(name: str, args: dict[str, Any], opts: argparse.Namespace, tools: list[dict[str, Any]]) -> Any:
    if name == "echo":
        return text(str(args.get("text", "")))
    if name == "count":
        if opts.count_file:
            with open(opts.count_file, "a", encoding="utf-8") as f:
                f.write(f"{args.get('note', '')}\n")
        return text("counted")
    if name == "crash":
        os._exit(3)
    if name == "hang":
        while True:
            time.sleep(3600)
    if name == "add_tool":
        if EXTRA not in tools:
            tools.append(EXTRA)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return text("added")
    if name == "extra" and EXTRA in tools:
        return {
            "content": [{"type": "text", "text": str(2 * int(args["n"]))}],
            "structuredContent": {"n": 2 * args["n"]},
        }
    return text(f"unknown tool {name}", error=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit-at-start", type=int, default=None)
    parser.add_argument("--hang-at-start", action="store_true")
    parser.add_argument("--ignore-eof", action="store_true")
    parser.add_argument("--spawn-child", action="store_true")
    parser.add_argument("--pid-file", default="")
    parser.add_argument("--count-file", default=os.environ.get("COUNT_FILE", ""))
    opts = parser.parse_args()
    if opts.exit_at_start is not None:
        print("fake MCP server: refusing to start", file=sys.stderr)
        sys.exit(opts.exit_at_start)
    pids = [os.getpid()]
    if opts.spawn_child:
        pids.append(subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL).pid)
    if opts.pid_file:
        with open(opts.pid_file, "a", encoding="utf-8") as f:
            f.write("".join(f"{pid}\n" for pid in pids))
    if opts.ignore_eof:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    tools = list(TOOLS)
    for line in sys.stdin:
        if opts.hang_at_start or not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message:
            continue
        method, params, rid = message.get("method"), message.get("params") or {}, message["id"]
        if method == "initialize":
            result: Any = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake-stdio", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            result = call_tool(params.get("name", ""), params.get("arguments") or {}, opts, tools)
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    while opts.ignore_eof:
        time.sleep(3600)


if __name__ == "__main__":
    main()
