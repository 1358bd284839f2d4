"""A gateway in a subprocess whose agent uses a stdio MCP server, for the SIGKILL orphan test.

Environment: ``DATA_DIR`` (store and agent files), ``PID_FILE`` (the MCP
server writes its pid and its child's there).  The server is the stdio fake
started with ``--ignore-eof --spawn-child``: it would outlive a killed gateway
if nothing took it down.  The script connects it (as a run of the agent would),
prints ``{"ready": true}`` and waits to be killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from agents.models.scripted import ScriptedModel
from bot.config.settings import load_settings
from bot.gateway.app import Gateway

STDIO_FAKE = Path(__file__).with_name("mcp_stdio_server.py")


async def main() -> None:
    data_dir = Path(os.environ["DATA_DIR"])
    agents_dir = data_dir / "agents"
    agents_dir.mkdir(parents=True, exist_ok=True)
    (agents_dir / "tooler.md").write_text(
        "---\nname: tooler\nrunner: react\nmcp: {servers: [stubborn]}\n---\nUse the tools.\n", encoding="utf-8"
    )
    server = {
        "command": sys.executable,
        "args": [str(STDIO_FAKE), "--ignore-eof", "--spawn-child", "--pid-file", os.environ["PID_FILE"]],
    }
    settings = load_settings(
        None,
        env={},
        user_config=data_dir / "none.yaml",
        overrides={
            "store": {"data_dir": str(data_dir)},
            "agents": {"dirs": [str(agents_dir)]},
            "log": {"level": "WARNING"},
            "channels": {"console": {"enabled": False}},
            "mcp": {"servers": {"stubborn": server}},
        },
    )
    gateway = Gateway(settings, model=ScriptedModel(), channels=[])
    await gateway.start()
    agent = gateway.catalog.get("tooler")
    assert agent is not None
    names = [t.name for t in await gateway.tool_pool.tools(agent)]
    print(json.dumps({"ready": True, "tools": [n for n in names if n.startswith("mcp.")]}), flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
