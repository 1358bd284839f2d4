"""Which tools an agent sees: allow/deny lists (deny wins), glob patterns, the default risk cap."""

from __future__ import annotations

import pytest

from agents.tools import Tool, matches, select_tools, tool
from agents.tools.base import Risk

pytestmark = pytest.mark.timeout(10)


def make(name: str, risk: Risk) -> Tool:
    @tool(name=name, risk=risk)
    async def f() -> str:
        """A test tool."""
        return name

    return f


TOOLS = [
    make("get_current_time", "safe"),
    make("http_get", "low"),
    make("read_file", "low"),
    make("write_file", "medium"),
    make("run_command", "high"),
    make("mcp.github.create_issue", "medium"),
    make("mcp.github.delete_repo", "high"),
]


def names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


def test_without_an_allow_list_every_tool_up_to_medium_risk() -> None:
    expected = ["get_current_time", "http_get", "read_file", "write_file", "mcp.github.create_issue"]
    assert names(select_tools(TOOLS, None)) == expected
    assert names(select_tools(TOOLS, [])) == expected


def test_an_allow_list_picks_tools_of_any_risk() -> None:
    assert names(select_tools(TOOLS, ["run_command", "read_file"])) == ["read_file", "run_command"]
    assert names(select_tools(TOOLS, ["no_such_tool"])) == []


def test_patterns() -> None:
    assert names(select_tools(TOOLS, ["mcp.github.*"])) == ["mcp.github.create_issue", "mcp.github.delete_repo"]
    assert names(select_tools(TOOLS, ["*_file"])) == ["read_file", "write_file"]
    assert names(select_tools(TOOLS, ["*"])) == names(TOOLS)


def test_deny_wins() -> None:
    assert names(select_tools(TOOLS, ["*"], deny=["run_command", "mcp.*"])) == [
        "get_current_time",
        "http_get",
        "read_file",
        "write_file",
    ]
    assert names(select_tools(TOOLS, ["read_file"], deny=["read_file"])) == []
    assert "http_get" not in names(select_tools(TOOLS, None, deny=["http_*"]))


def test_order_is_kept_and_input_untouched() -> None:
    chosen = select_tools(TOOLS, ["write_file", "get_current_time"])
    assert names(chosen) == ["get_current_time", "write_file"]
    assert len(TOOLS) == 7


def test_matches() -> None:
    assert matches("mcp.github.create_issue", ["mcp.github.*"])
    assert matches("read_file", ["read_file"])
    assert not matches("read_file", ["read"])
    assert not matches("Read_File", ["read_file"])  # case-sensitive
    assert not matches("anything", [])
