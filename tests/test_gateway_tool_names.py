"""Gateway tools are registered once: every tool a gateway offers is among the names agent files may use
(:func:`bot.runs.tool_names.known_tool_names`), and none is listed there by hand."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bot.runs.tool_names as tool_names
from agents.models.scripted import ScriptedModel
from bot.runs.tool_names import gateway_tool_modules, known_tool_names


async def test_every_tool_a_gateway_offers_is_known_without_being_listed_by_hand(
    make_harness: Callable[..., Any],
) -> None:
    harness = await make_harness(ScriptedModel([]))
    gateway = harness.gateway
    offered = {t.name for t in [*gateway.tools, *gateway.memory.tools(), gateway.memory.session_tool(["topic"])]}
    assert offered - known_tool_names() == set()
    assert {"ask_user", "schedule_message", "schedule_job", "send_file", "remember", "update_session"} <= offered
    registered = {name for module in gateway_tool_modules() for name in module.TOOL_NAMES}
    assert registered <= offered, "every registered name is a tool the gateway makes"
    tree = ast.parse(Path(tool_names.__file__).read_text(encoding="utf-8"))
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert literals & known_tool_names() == set(), "tool names come from where the tools are made"
