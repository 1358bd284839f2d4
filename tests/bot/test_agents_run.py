"""`bot agents run NAME -p TEXT`: a confirmation is asked at the terminal (and left for `bot chat` when nobody
answers); the command itself, with the offline model, in a fresh project; `graph visualize` is `graph show`."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agents.models.scripted import ScriptedModel
from bot.cli.agents import agents_app
from bot.cli.run import run_once
from tests.helpers.p2_chain import AUTH_TS, FIXED_TS, the_chain

DESIGN = Path(__file__).resolve().parents[1] / "data" / "p2-design"


def project(tmp_path: Path, *, confirm: bool = False) -> Path:
    agents = tmp_path / "config" / "agents"
    shutil.copytree(DESIGN, agents)
    if confirm:
        fixer = agents / "code-fixer.md"
        fixer.write_text(
            fixer.read_text().replace(
                "tools: {allow:", "confirmation: {require_confirmation: [write_file]}\ntools: {allow:"
            )
        )
    workspace = tmp_path / "data" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "auth.ts").write_text(AUTH_TS)
    return agents


async def test_a_confirmation_is_asked_at_the_terminal(make_settings: Any, tmp_path: Path) -> None:
    agents = project(tmp_path, confirm=True)
    settings = make_settings(
        channels={"console": {"enabled": True, "streaming": False}}, agents={"dirs": [str(agents)]}
    )
    out = io.StringIO()
    model = ScriptedModel(the_chain())
    assert (
        await run_once(settings, "debug-analyzer", "Fix this bug", stdin=io.StringIO("1\n"), stdout=out, model=model)
        == 0
    )
    text = out.getvalue()
    assert "write_file" in text and "[1] ✅ Approve" in text, text
    assert (
        text.index("🔄 Handoff: debug-analyzer → code-fixer")
        < text.index("[1] ✅ Approve")
        < text.index("✓ Added null check")
    )
    assert (tmp_path / "data" / "workspace" / "auth.ts").read_text() == FIXED_TS
    model.assert_complete()

    (tmp_path / "data" / "workspace" / "auth.ts").write_text(AUTH_TS)
    waiting = ScriptedModel(the_chain()[:3])
    out = io.StringIO()
    assert (
        await run_once(settings, "debug-analyzer", "Fix it again", stdin=io.StringIO(""), stdout=out, model=waiting)
        == 3
    )
    assert "No answer: the request waits; answer it in `bot chat`" in out.getvalue()
    assert (tmp_path / "data" / "workspace" / "auth.ts").read_text() == AUTH_TS, "nothing written without a yes"


async def test_an_unknown_agent_gets_a_did_you_mean(make_settings: Any, tmp_path: Path) -> None:
    settings = make_settings(agents={"dirs": [str(project(tmp_path))]})
    out = io.StringIO()
    assert await run_once(settings, "debug-analyser", "hi", stdout=out, model=ScriptedModel([])) == 2
    assert "no agent named 'debug-analyser'. Did you mean debug-analyzer?" in out.getvalue()


def test_the_command_in_a_fresh_project_with_the_offline_model(tmp_path: Path) -> None:
    project(tmp_path)
    (tmp_path / "config" / "bot.yaml").write_text("store: {data_dir: ./data}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_", "OPENAI_"))}
    env["HOME"] = str(tmp_path)
    command = [sys.executable, "-m", "bot", "agents", "run", "react", "-p", "what time is it in Tokyo?"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    assert '[react] get_current_time {"timezone": "Asia/Tokyo"}' in done.stdout
    assert "✓ [offline model]" in done.stdout


def test_graph_visualize_is_show(tmp_path: Path, monkeypatch: Any) -> None:
    project(tmp_path)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    shown = runner.invoke(agents_app, ["graph", "show", "debug-flow"])
    visualized = runner.invoke(agents_app, ["graph", "visualize", "debug-flow"])
    assert shown.exit_code == visualized.exit_code == 0 and shown.output == visualized.output
    assert "analyzer → agent debug-analyzer (its answer: state.analysis)" in shown.output
    assert "analyzer → fixer  when analysis.can_auto_fix" in shown.output
