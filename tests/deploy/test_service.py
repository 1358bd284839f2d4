"""``bot service install`` writes a systemd user unit that starts this very bot on the project; the system unit
``deploy/bot.service`` and the steps in its comment agree with each other (no systemd runs here: the units are
read, checked with ``systemd-analyze verify`` where it is installed, and their command is run once)."""

from __future__ import annotations

import configparser
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.main import app

ROOT = Path(__file__).resolve().parents[2]


def unit_of(text: str) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(text)
    return unit


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "team bot"  # a space: the unit quotes it
    (folder / "config").mkdir(parents=True)
    (folder / "config" / "bot.yaml").write_text("bot: {name: unit-test}\nchannels: {console: {enabled: false}}\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("BOT_HOME", raising=False)
    monkeypatch.chdir(tmp_path)  # -C changes the directory; this puts it back
    return folder


def _verify(path: Path) -> None:
    """``systemd-analyze verify`` finds nothing to say about ``path`` (skipped where it is not installed)."""
    if shutil.which("systemd-analyze") is None:
        return
    done = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    complaints = [line for line in (done.stdout + done.stderr).splitlines() if path.name in line]
    assert not complaints, complaints


def test_install_writes_a_user_unit_that_runs_this_bot_on_the_project(project: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["-C", str(project / "config"), "service", "install"])  # from a subfolder
    assert result.exit_code == 0, result.output
    path = tmp_path / "xdg" / "systemd" / "user" / "bot.service"
    assert f"wrote {path}" in result.output
    assert "systemctl --user daemon-reload && systemctl --user enable --now bot" in result.output
    assert "loginctl enable-linger" in result.output
    unit = unit_of(path.read_text())
    service = unit["Service"]
    command = shlex.split(service["ExecStart"])
    assert Path(command[0]).is_file() and os.access(command[0], os.X_OK)
    assert Path(command[0]).parent == Path(sys.executable).absolute().parent, "this interpreter's environment"
    assert command[-3:] == ["-C", str(project), "run"]
    assert service["WorkingDirectory"] == str(project)
    assert "EnvironmentFile" not in service, "the bot reads the project's .env itself"
    assert service["NoNewPrivileges"] == "true" and unit["Install"]["WantedBy"] == "default.target"
    # The command is the bot, on that project (its file's bot.name, not a default).
    shown = subprocess.run(
        [*command[:-1], "config", "show"], capture_output=True, text=True, timeout=60, check=False, cwd="/"
    )
    assert shown.returncode == 0, shown.stderr
    assert "unit-test" in shown.stdout

    status = CliRunner().invoke(app, ["service", "status"])
    assert f"unit: {path}" in status.output and f'-C "{project}" run' in status.output
    assert "systemd:" in status.output
    removed = CliRunner().invoke(app, ["service", "uninstall"])
    assert removed.exit_code == 0 and not path.exists()
    assert "systemctl --user stop bot; systemctl --user daemon-reload" in removed.output


def test_a_system_unit_is_printed_for_sudo_tee_and_verifies(project: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["-C", str(project), "service", "install", "--system", "--print", "--name", "t"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    service = unit_of(text)["Service"]
    assert service["User"] and service["ProtectSystem"] == "strict"
    assert service["ReadWritePaths"] == f'"{project / "data"}"', "it may write its data folder"
    assert not (tmp_path / "xdg" / "systemd").exists(), "--print writes nothing"
    unit = tmp_path / "t.service"
    unit.write_text(text)
    _verify(unit)


def test_without_a_project_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("BOT_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["service", "install"])
    assert result.exit_code == 2 and "bot init" in result.output
    assert not (tmp_path / "xdg").exists()


# -- deploy/bot.service: the steps in its comment make what the unit uses ------------------------------------------


def steps() -> list[list[str]]:
    """The commands of the comment's step lines (``#   sudo …``), each ``&&`` part on its own."""
    lines = [line[1:].strip() for line in (ROOT / "deploy" / "bot.service").read_text().splitlines()]
    commands = [line.split("#")[0] for line in lines if line.startswith("sudo ")]
    return [shlex.split(part) for command in commands for part in command.split("&&")]


def test_the_system_units_steps_make_what_it_runs() -> None:
    unit = unit_of((ROOT / "deploy" / "bot.service").read_text())
    service = unit["Service"]
    commands = steps()
    [useradd] = [c for c in commands if c[1] == "useradd"]
    home, user = useradd[useradd.index("--home-dir") + 1], useradd[-1]
    assert "--create-home" in useradd and service["User"] == user and service["WorkingDirectory"] == home
    [venv] = [c for c in commands if c[1:4] == ["python3", "-m", "venv"]]
    executable, *args = shlex.split(service["ExecStart"])
    assert executable == f"{venv[4]}/bin/bot" and args == ["-C", home, "run"]
    [pip] = [c for c in commands if c[-2:-1] == ["install"] and c[1].endswith("/bin/pip")]
    assert pip[1] == f"{venv[4]}/bin/pip" and pip[-1] == ".[scale]", "installs the clone, not a package by name"
    # Every bot command runs as the unit's user, on the folder it owns (its home), from its venv.
    bots = [c for c in commands if any(word.endswith("/bin/bot") for word in c)]
    assert [c[c.index("-C") + 1] for c in bots] == [home] * len(bots)
    assert all(c[:4] == ["sudo", "-u", user, "-H"] and c[4] == executable for c in bots)
    assert [c[7] for c in bots][:2] == ["init", "doctor"]
    assert ["sudo", "cp", "deploy/bot.service", "/etc/systemd/system/"] in commands
    assert ["sudo", "systemctl", "enable", "--now", "bot"] in commands
    assert "EnvironmentFile" not in service and home in service["ReadWritePaths"].split()
    assert not re.search(r"supervisor-bot\[", (ROOT / "deploy" / "bot.service").read_text())


def test_the_system_unit_verifies_with_its_paths_made(tmp_path: Path) -> None:
    """``systemd-analyze verify`` on deploy/bot.service with its paths pointing at ones that exist here."""
    text = (ROOT / "deploy" / "bot.service").read_text()
    bot = Path(sys.executable).absolute().parent / "bot"
    import pwd

    me = pwd.getpwuid(os.geteuid()).pw_name
    text = text.replace("/opt/bot/bin/bot", str(bot)).replace("/var/lib/bot", str(tmp_path))
    text = text.replace("User=bot", f"User={me}").replace("Group=bot", f"Group={me}")
    unit = tmp_path / "bot.service"
    unit.write_text(text)
    _verify(unit)
