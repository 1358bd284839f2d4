"""Tools that need confirmation (and some that do not), counting their runs, and a harness with them."""

from __future__ import annotations

from typing import Any

from agents.models.scripted import ScriptedModel, call
from agents.tools.base import Tool, tool
from tests.conftest import Harness


class Counter:
    def __init__(self) -> None:
        self.runs: list[str] = []


def risky_tools(counter: Counter) -> list[Tool]:
    @tool(risk="medium", confirm=True)
    async def delete_cache(path: str) -> str:
        """Delete a build cache directory."""
        counter.runs.append(f"delete {path}")
        return f"deleted {path}"

    @tool(risk="medium")
    async def write_note(text: str) -> str:
        """Write a note."""
        counter.runs.append(f"note {text}")
        return "written"

    @tool(risk="high", confirm=True)
    async def run_command(command: str) -> str:
        """Run a shell command."""
        counter.runs.append(f"run {command}")
        return "ok"

    @tool(risk="safe")
    async def get_time() -> str:
        """The time."""
        counter.runs.append("time")
        return "12:00"

    return [delete_cache, write_note, run_command, get_time]


async def confirm_harness(make_harness: Any, model: ScriptedModel, counter: Counter, **kw: Any) -> Harness:
    return await make_harness(model, tools=risky_tools(counter), **kw)


DELETE = call("delete_cache", {"path": "/tmp/build"}, id="c1")
