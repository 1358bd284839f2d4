"""``bot doctor --fix``: the safe fixes (folders, migrations, a missing ``.env`` from the example) are made and
said, then the checks run; nothing that exists is overwritten, no secret is invented."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.main import app
from bot.store.sql.migrate import head_revision


def test_fix_creates_folders_migrates_and_writes_the_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--yes", "--model", "offline"]).exit_code == 0
    (tmp_path / ".env.example").write_text("# a key\nOPENAI_API_KEY=\n")
    before = runner.invoke(app, ["doctor"])
    assert "fixed:" not in before.output and not (tmp_path / "data").exists()  # doctor alone changes nothing

    result = runner.invoke(app, ["doctor", "--fix"])
    assert result.exit_code == 0, result.output
    assert f"fixed: wrote {tmp_path / '.env'} from .env.example (mode 600); fill in OPENAI_API_KEY" in result.output
    assert f"fixed: store.data_dir: created {tmp_path / 'data'}" in result.output
    assert f"fixed: database: sqlite:///data/bot.db migrated from empty to {head_revision()}" in result.output
    assert (tmp_path / ".env").stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(tmp_path / "data" / "bot.db") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchone() == (head_revision(),)

    (tmp_path / ".env").write_text("OPENAI_API_KEY=mine\n")
    again = runner.invoke(app, ["doctor", "--fix", "--json"])
    body = json.loads(again.output)
    assert body["fixed"] == [] and body["ok"]  # nothing left to fix, nothing overwritten
    assert (tmp_path / ".env").read_text() == "OPENAI_API_KEY=mine\n"


def test_fix_never_creates_a_workspace_that_holds_the_bots_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "bot.yaml").write_text("tools:\n  workspace: .\n")
    result = CliRunner().invoke(app, ["doctor", "--fix"])
    assert result.exit_code == 1 and "✗ workspace:" in result.output
    assert "tools.workspace: created" not in result.output


def test_a_model_without_its_key_is_a_failed_check_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    assert CliRunner().invoke(app, ["init", "--yes", "--model", "gemini"]).exit_code == 0
    result = CliRunner().invoke(app, ["doctor", "--fix"])
    assert result.exit_code == 1 and result.exception is None or isinstance(result.exception, SystemExit)
    assert "✗ model gemini/gemini-2.5-flash: Gemini needs a key: set GEMINI_API_KEY" in result.output


def test_flags_show_no_value_in_help() -> None:
    import subprocess
    import sys

    env = {**__import__("os").environ, "COLUMNS": "150"}
    shown = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", "doctor", "-h"], capture_output=True, text=True, env=env, timeout=60
    )
    assert shown.returncode == 0 and "--fix" in shown.stdout
    assert "<bool>" not in shown.stdout and "<float>" in shown.stdout  # a flag takes no value; --timeout does
