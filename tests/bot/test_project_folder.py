"""One project folder: ``bot`` finds ``config/bot.yaml`` from the working directory up (as git finds ``.git``),
or takes ``BOT_HOME``/``-C DIR``; where there is none it says so; a missing ``-c`` file and a YAML mistake are
named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli.main import app
from bot.config.paths import find_project

ROOT = Path(__file__).resolve().parents[2]


def make_project(folder: Path, name: str = "from-the-project") -> Path:
    (folder / "config" / "agents").mkdir(parents=True)
    (folder / "config" / "bot.yaml").write_text(f"bot: {{name: {name}}}\nstore: {{data_dir: data}}\n", "utf-8")
    (folder / "agents" / "deep").mkdir(parents=True)
    return folder


def shown(result: object) -> dict[str, object]:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 0, output  # type: ignore[attr-defined]
    return dict(yaml.safe_load(output))


def run_bot(*args: str, cwd: Path, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "OPENAI_", "BOT_"))}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=60
    )


def test_a_subfolder_uses_the_projects_file_and_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "proj")
    monkeypatch.chdir(project / "agents" / "deep")
    settings = shown(CliRunner().invoke(app, ["config", "show"]))
    assert settings["bot"]["name"] == "from-the-project"  # type: ignore[index]
    assert settings["store"]["data_dir"] == str(project / "data")  # type: ignore[index]
    assert settings["agents"]["dirs"] == [str(project / "config" / "agents")]  # type: ignore[index]


def test_bot_in_a_subfolder_writes_to_the_projects_data_not_a_new_one(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj")
    done = run_bot(cwd=project / "agents", home=tmp_path / "home", stdin="hello\n")
    assert done.returncode == 0, done.stderr
    assert (project / "data" / "bot.db").is_file()
    assert not (project / "agents" / "data").exists()
    assert "No config/bot.yaml found" not in done.stderr


def test_where_there_is_no_project_bot_says_so_and_where_the_data_goes(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    done = run_bot("chat", cwd=tmp_path / "elsewhere", home=tmp_path / "home", stdin="hello\n")
    assert done.returncode == 0, done.stderr
    notice = [line for line in done.stderr.splitlines() if line.startswith("No config/bot.yaml found")]
    assert notice == [
        f"No config/bot.yaml found from {tmp_path / 'elsewhere'} up: built-in defaults, creating the data folder "
        f"{tmp_path / 'elsewhere' / 'data'} (`bot init` writes a project here; `bot -C DIR` uses one elsewhere)."
    ]
    assert "[offline model]" in done.stdout  # and it goes on with the defaults


def test_doctor_names_the_project_or_warns_there_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "proj")
    monkeypatch.chdir(project / "agents")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    result = CliRunner().invoke(app, ["doctor"])
    assert f"✓ project: {project} (config/bot.yaml; from {project / 'agents'} up)" in result.output, result.output
    assert f"< {project / 'config' / 'bot.yaml'} <" in result.output

    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    result = CliRunner().invoke(app, ["doctor"])
    assert (
        f"! project: none found from {tmp_path / 'empty'} up (no config/bot.yaml); "
        f"using built-in defaults and {tmp_path / 'empty' / 'data'}\n    fix: run bot in the project's folder"
    ) in result.output, result.output


def test_bot_home_and_dash_capital_c_name_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "proj")
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    runner = CliRunner()
    by_home = shown(runner.invoke(app, ["config", "show"], env={"BOT_HOME": str(project)}))
    assert by_home["store"]["data_dir"] == str(project / "data")  # type: ignore[index]
    by_dir = shown(runner.invoke(app, ["-C", str(project / "agents"), "config", "show"]))
    assert by_dir["bot"]["name"] == "from-the-project"  # type: ignore[index]
    assert by_dir["store"]["data_dir"] == str(project / "data")  # type: ignore[index]

    monkeypatch.chdir(tmp_path / "other")
    missing = runner.invoke(app, ["config", "show"], env={"BOT_HOME": str(tmp_path / "other")})
    assert missing.exit_code == 2
    assert f"BOT_HOME={tmp_path / 'other'}: {tmp_path / 'other' / 'config' / 'bot.yaml'} does not exist" in (
        missing.output
    )
    nowhere = runner.invoke(app, ["-C", str(tmp_path / "nope"), "config", "show"])
    assert nowhere.exit_code == 2 and f"-C {tmp_path / 'nope'}: No such file or directory" in nowhere.output


def test_the_walk_stops_below_homes_parent(tmp_path: Path) -> None:
    home = tmp_path / "home" / "me"
    (home / "work").mkdir(parents=True)
    make_project(tmp_path / "home")  # in $HOME's parent: never looked in
    assert find_project(home / "work", home=home) is None
    make_project(tmp_path / "proj")
    assert find_project(tmp_path / "proj" / "agents" / "deep", home=home) == tmp_path / "proj" / "config/bot.yaml"
    assert find_project(tmp_path / "proj", home=home) == Path("config/bot.yaml")  # here: named as it always was
    make_project(home)
    assert find_project(home / "work", home=home) == home / "config/bot.yaml"


def test_a_missing_config_file_says_it_does_not_exist_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    for argv in (["-c", "../tg/bot.yaml", "doctor"], ["doctor", "-c", "../tg/bot.yaml"], ["-c", "../tg/bot.yaml"]):
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 2, (argv, result.output)
        assert (
            f"../tg/bot.yaml: config file not found ({tmp_path / 'tg' / 'bot.yaml'} does not exist); "
            "`bot init` writes one"
        ) in result.output
        assert "edit ../tg/bot.yaml" not in result.output


def test_a_yaml_mistake_names_the_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "proj")
    (project / "config" / "bot.yaml").write_text("bot:\n  name: x\n store: [\n", "utf-8")
    monkeypatch.chdir(project / "agents")
    result = CliRunner().invoke(app, ["config", "show"])
    assert result.exit_code == 2
    file = project / "config" / "bot.yaml"
    assert f"config error: {file}, line 3: invalid YAML" in result.output
    assert f'in "{file}", line 3, column 2' in result.output and "<unicode string>" not in result.output
