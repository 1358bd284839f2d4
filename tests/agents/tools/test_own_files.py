"""The bot's own files inside the tools' workspace: the file tools refuse them and leave them out of listings, and
a sandboxed command finds an empty folder or an empty file where they are (real bubblewrap)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.tools import ToolError, ToolsConfig, builtin_toolset
from agents.tools.base import Tool
from tests.conftest import need_bwrap

pytestmark = pytest.mark.timeout(60)

SECRET = "TELEGRAM_BOT_TOKEN=123456:AAH-own-files-secret"
OWN = "one of the bot's own files"


class Project:
    """A project folder as ``bot init`` writes it, used as the workspace: data/, config/, .env, notes."""

    def __init__(self, tmp_path: Path, **run_command: object) -> None:
        self.root = tmp_path / "project"
        (self.root / "data").mkdir(parents=True)
        (self.root / "config").mkdir()
        (self.root / "data" / "bot.db").write_text("the live database " + SECRET)
        (self.root / "config" / "bot.yaml").write_text("tools: {workspace: .}\n")
        (self.root / ".env").write_text(SECRET + "\n")
        (self.root / "notes.txt").write_text("mine\n")
        self.hidden = [self.root / "data", self.root / "config", self.root / ".env"]
        config = ToolsConfig.model_validate(
            {"workspace": str(self.root), "run_command": {"enabled": bool(run_command), **run_command}}
        )
        self.tools: dict[str, Tool] = {t.name: t for t in builtin_toolset(config, hidden=self.hidden).tools}

    async def call(self, name: str, **arguments: str) -> str:
        return await self.tools[name].invoke(arguments)

    def untouched(self) -> bool:
        return (self.root / ".env").read_text() == SECRET + "\n" and sorted(
            p.name for p in (self.root / "data").iterdir()
        ) == ["bot.db"]


async def test_the_file_tools_refuse_the_bots_own_files_inside_the_workspace(tmp_path: Path) -> None:
    project = Project(tmp_path)
    for path in (".env", "data/bot.db", "./notes/../.env", str(project.root / ".env"), "config/bot.yaml"):
        with pytest.raises(ToolError, match=OWN):
            await project.call("read_file", path=path)
    for path in (".env", "data/new.txt", "config/bot.yaml", "data/sub/x.txt"):
        with pytest.raises(ToolError, match=OWN):
            await project.call("write_file", path=path, content="sandbox: none")
    for path in ("data", "config", "data/sub/.."):
        with pytest.raises(ToolError, match=OWN):
            await project.call("list_dir", path=path)
    assert await project.call("list_dir") == "notes.txt (5 bytes)", "the bot's files are not even listed"
    assert await project.call("read_file", path="notes.txt") == "mine\n"
    # A link to them, inside the workspace, is refused as they are.
    (project.root / "env-link").symlink_to(project.root / ".env")
    with pytest.raises(ToolError, match=OWN):
        await project.call("read_file", path="env-link")
    assert project.untouched()


async def test_a_workspace_that_is_itself_one_of_the_bots_folders_gives_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "bot.db").write_text(SECRET)
    config = ToolsConfig.model_validate({"workspace": str(data)})
    tools = {t.name: t for t in builtin_toolset(config, hidden=[data]).tools}
    with pytest.raises(ToolError, match=OWN):
        await tools["read_file"].invoke({"path": "bot.db"})
    with pytest.raises(ToolError, match=OWN):
        await tools["list_dir"].invoke({"path": "."})


async def test_a_sandboxed_command_finds_the_bots_files_in_its_workspace_masked(tmp_path: Path) -> None:
    need_bwrap()
    project = Project(tmp_path, shell=True)
    script = (
        "cat .env; cat data/bot.db; cat config/bot.yaml; ls -A data config; echo 'sandbox: none' >> .env; "
        "cp data/bot.db stolen.db; echo x > data/planted; mv data d2; rm -f .env; cat notes.txt; echo end-of-probe"
    )
    out = await project.call("run_command", command=script)
    assert "end-of-probe" in out and "mine" in out, out
    assert SECRET not in out and "the live database" not in out and "workspace: ." not in out, out
    assert project.untouched() and (project.root / "data").is_dir()
    assert (project.root / "config" / "bot.yaml").read_text() == "tools: {workspace: .}\n"
    assert not (project.root / "stolen.db").exists() and not (project.root / "d2").exists()
    # What is not the bot's stays the command's to use.
    out = await project.call("run_command", command="echo made > made.txt && cat made.txt")
    assert out.splitlines()[1] == "made" and (project.root / "made.txt").read_text() == "made\n"


async def test_a_hard_link_to_the_bots_database_is_neither_read_nor_written(tmp_path: Path) -> None:
    project = Project(tmp_path)
    os.link(project.root / "data" / "bot.db", project.root / "report.db")
    with pytest.raises(ToolError, match="2 hard links"):
        await project.call("read_file", path="report.db")
    with pytest.raises(ToolError, match="hard links"):
        await project.call("write_file", path="report.db", content="x")
    assert "the live database" in (project.root / "data" / "bot.db").read_text()
