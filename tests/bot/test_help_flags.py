"""``bot --help`` shows flags as flags: ``--version`` takes no value."""

from __future__ import annotations

from typer.testing import CliRunner

from bot.cli.main import app


def test_version_is_a_flag_with_no_value_in_help() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    line = next(row for row in result.output.splitlines() if "--version" in row)
    assert "<bool>" not in line and "Print the version and exit." in line, line
