"""A tool's output in the trace is bounded and redacted: what a tool hands back may hold a configured secret (a
file with the bot's token in it) or megabytes; the stored event keeps the first 1,000 characters with secrets
replaced, ``/trace`` shows a short cut of it, the full views a longer one."""

from __future__ import annotations

from typing import Any

from agents.models.scripted import ScriptedModel, call
from agents.tools.base import tool
from bot.tracing.replay import replay

TOKEN = "123456:telegram-bot-token-abcdefghijklmnop"


async def test_a_tool_output_is_kept_bounded_and_without_secrets(make_harness: Any) -> None:
    @tool(risk="safe")
    async def read_config(name: str) -> str:
        """Read a configuration file."""
        return f"token: {TOKEN}\n" + "x" * 5000

    model = ScriptedModel([call("read_config", {"name": "bot.yaml"}, id="c1"), "It is configured."])
    h = await make_harness(model, tools=[read_config], channels={"telegram": {"token": TOKEN}})
    await h.say("@react show me the config")
    [events] = await h.gateway.tracing.runs(str(h.chat()))
    [used] = [e for e in events if e.type == "tool_call"]
    assert used.data["result"].startswith("token: ‹redacted: secret›\nxxx") and len(used.data["result"]) <= 1000
    assert used.data["result_size"] == len(TOKEN) + 5008
    compact = (await h.say("/trace"))[0]
    line = next(line for line in compact.splitlines() if "read_config" in line)
    assert 'input {"name": "bot.yaml"}; output token: ‹redacted: secret› xxx' in line and len(line) < 260
    full = replay(events)
    assert f"Size: {len(TOKEN) + 5008:,} characters in all" in full and TOKEN not in full and TOKEN not in compact
