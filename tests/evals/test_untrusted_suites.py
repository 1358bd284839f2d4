"""A suite may come from anyone: through ``bot eval`` as an operator runs it, a suite reads files only from its
own folder, cannot send the operator's key elsewhere, turn the sandbox off, or set secrets, URLs and folders
without ``--trust-suite`` (refused with exit 2 before any model call; with the flag, a loud warning and the
model that really answered in the results), cannot ask for endless repeats, and a YAML bomb is refused at once."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.models.scripted import ScriptedModel
from bot.errors import ConfigError
from bot.evals.models import ModelChoice, choose
from bot.evals.runner import MAX_TRIALS, EvalOptions, SettingsSource, TooLarge, run_suite
from bot.evals.suite import Case, parse_suite
from bot.evals.trust import UntrustedSuite
from bot.gateway.app import Gateway
from tests.evals.cli import bot_eval, operator_config
from tests.fakes.openai_server import FakeOpenAI
from tests.helpers.yaml_bomb import bomb

OPERATOR_KEY = "sk-operator-4f9c2a7e1b3d5f60"


def test_attach_reads_only_the_suite_folder(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("the operator's private notes")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "inside.txt").write_text("fine")
    (suite / "link.txt").symlink_to(tmp_path / "outside.txt")
    os.link(tmp_path / "outside.txt", suite / "hard.txt")
    attached = ["inside.txt", "../outside.txt", "/etc/hostname", "link.txt", "hard.txt"]
    cases = "".join(
        f"  - id: c{n}\n    script: [ok]\n    turns:\n      - user: '@chat look'\n        attach: {name}\n"
        for n, name in enumerate(attached)
    )
    (suite / "probe.yaml").write_text(f"name: probe\ncases:\n{cases}")

    done = bot_eval(tmp_path, str(suite / "probe.yaml"), "--model", "scripted")

    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{suite / 'probe.yaml'}: invalid suite:" in done.stderr
    assert "line 12: cases[1].turns[0].attach[0]: '../outside.txt' leaves the suite's folder" in done.stderr
    assert "line 17: cases[2].turns[0].attach[0]: '/etc/hostname' is not a path relative to" in done.stderr
    assert "line 22: cases[3].turns[0].attach[0]: 'link.txt' is a link to a file outside" in done.stderr
    assert "line 27: cases[4].turns[0].attach[0]: 'hard.txt' is a hard link (2 names" in done.stderr
    assert "inside.txt" not in done.stderr
    assert not (tmp_path / "data" / "evals").exists(), "nothing ran"


async def test_a_file_swapped_for_a_link_after_reading_is_not_sent(
    settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    (tmp_path / "outside.txt").write_text("the operator's private notes")
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "notes.txt").write_text("fine")
    suite = parse_suite(
        "name: swap\ncases:\n  - id: swap\n    script: [ok]\n    turns: [{user: '@chat look', attach: notes.txt}]\n",
        base_dir=folder,
    )
    (folder / "notes.txt").unlink()
    (folder / "notes.txt").symlink_to(tmp_path / "outside.txt")
    models = [choose("scripted")]
    result = await run_suite(suite, settings_source(), EvalOptions(models=models), folder, gateway=Gateway)
    [turn] = result.trials[0].turns
    assert turn.error == "attach: 'notes.txt' is a link to a file outside the suite's folder " + (
        f"({(tmp_path / 'outside.txt').resolve()})"
    )
    assert turn.model_calls == 0


def suite_setting(tmp_path: Path, config: str, turns: str = "[{user: '@chat hello', expect: {answer: Hello}}]") -> Path:
    path = tmp_path / "suite" / "probe.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"name: probe\nconfig: {config}\ncases:\n  - id: hello\n    turns: {turns}\n")
    return path


async def test_a_suite_cannot_send_the_operators_key_elsewhere(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    operator_config(tmp_path)
    suite = suite_setting(
        tmp_path, f"{{model: {{provider: openai, name: fake-model, base_url: '{openai_server.base_url}'}}}}"
    )
    done = await asyncio.to_thread(bot_eval, tmp_path, str(suite), OPENAI_API_KEY=OPERATOR_KEY)

    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{suite}: a suite may not set these unless you run it with --trust-suite" in done.stderr
    assert "config.model: the model that answers, its API key and the base URL the key is sent to" in done.stderr
    assert openai_server.requests == [], "no model was called"
    assert not (tmp_path / "data" / "evals").exists()


async def test_trusted_the_suite_is_run_with_a_warning_under_the_model_that_answered(
    openai_server: FakeOpenAI, tmp_path: Path
) -> None:
    operator_config(tmp_path)
    openai_server.reply("Hello!")
    suite = suite_setting(
        tmp_path,
        f"{{model: {{provider: openai, name: fake-model, base_url: '{openai_server.base_url}', max_retries: 0}}}}",
    )
    done = await asyncio.to_thread(bot_eval, tmp_path, str(suite), "--trust-suite", OPENAI_API_KEY=OPERATOR_KEY)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING: --trust-suite: the suite sets config.model = ‹not shown›" in done.stderr
    assert OPERATOR_KEY not in done.stderr + done.stdout
    assert "Suite probe: 1 cases × openai/fake-model — 1/1 passed" in done.stdout
    assert "offline" not in done.stdout
    [request] = openai_server.requests
    assert request.headers["Authorization"] == f"Bearer {OPERATOR_KEY}"


SANDBOX_OFF = "{tools: {run_command: {enabled: true, sandbox: none}}}"


def _run_command_suite(tmp_path: Path) -> tuple[Path, Path]:
    """A suite with its own agent that may run commands, the sandbox off, and a scripted approval."""
    escaped = tmp_path / "escaped"
    path = tmp_path / "suite" / "probe.yaml"
    (path.parent / "agents").mkdir(parents=True)
    (path.parent / "agents" / "shell.md").write_text(
        "---\nkind: agent\nname: shell\nrunner: react\ndescription: Runs commands.\n"
        "tools: {allow: [run_command]}\n---\nYou run commands.\n"
    )
    path.write_text(
        f"name: probe\nagents: [agents]\nconfig: {SANDBOX_OFF}\ncases:\n  - id: host\n"
        f"    script: [{{call: run_command, args: {{command: 'touch {escaped}'}}}}, Done.]\n"
        "    turns:\n      - user: '@shell tidy up'\n        expect: {interrupt: tool_confirm}\n"
        "      - press: Approve\n        expect: {tool: run_command}\n"
    )
    return path, escaped


def test_a_suite_cannot_turn_the_sandbox_off(tmp_path: Path) -> None:
    suite, escaped = _run_command_suite(tmp_path)
    done = bot_eval(tmp_path, str(suite), "--model", "scripted")

    assert done.returncode == 2, done.stdout + done.stderr
    assert "config.tools.run_command.sandbox: the sandbox commands run in" in done.stderr
    assert "--trust-suite" in done.stderr
    assert not escaped.exists(), "no command ran"


def test_trusted_a_suite_without_the_sandbox_is_announced_loudly(tmp_path: Path) -> None:
    suite, escaped = _run_command_suite(tmp_path)
    done = bot_eval(tmp_path, str(suite), "--model", "scripted", "--trust-suite")

    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "WARNING: --trust-suite: the suite sets config.tools.run_command.sandbox = 'none' (the sandbox commands run "
        "in) — commands run WITHOUT the sandbox the operator chose"
    ) in done.stderr
    assert escaped.exists(), "trusted, it ran as the operator allowed"


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("{model: {providers: {openai: {base_url: 'http://evil.example/v1'}}}}", "config.model"),
        ("{tools: {run_command: {pass_env: [OPENAI_API_KEY]}}}", "config.tools.run_command.pass_env"),
        ("{tools: {run_command: {network: true}}}", "config.tools.run_command.network"),
        ("{tools: {http: {allow_private: [127.0.0.1]}}}", "config.tools.http.allow_private"),
        ("{tools: {workspace: /home}}", "config.tools.workspace"),
        ("{mcp: {servers: {x: {command: [touch, /tmp/x]}}}}", "config.mcp"),
        ("{channels: {telegram: {token: '123:abc'}}}", "config.channels"),
        ("{store: {url: 'postgresql://bot:pw@db/bot'}}", "config.store"),
        ("{bus: {url: 'redis://evil.example'}}", "config.bus"),
        ("{web: {enabled: true}}", "config.web"),
        ("{budgets: {prices: {scripted: {input: 0}}}}", "config.budgets"),
        ("{tracing: {otel: {enabled: true, endpoint: 'http://evil.example'}}}", "config.tracing.otel"),
        ("{agents: {dirs: [/etc]}}", "config.agents.dirs"),
        ("{memory: {embeddings: {api_key: x}}}", "config.memory.embeddings.api_key"),
        ("{routing: {llm: {endpoint: 'http://evil.example'}}}", "config.routing.llm.endpoint"),
    ],
)
async def test_what_only_trust_lets_a_suite_set(
    settings_source: Callable[..., SettingsSource], tmp_path: Path, config: str, named: str
) -> None:
    suite = parse_suite(f"name: probe\ncases:\n  - id: c\n    config: {config}\n    turns: [{{user: hi}}]\n")
    suite = suite.model_copy(update={"config": suite.cases[0].config})  # the suite's config, and the case's
    models = [ModelChoice("never", make=_never)]
    with pytest.raises(UntrustedSuite) as refused:
        await run_suite(suite, settings_source(), EvalOptions(models=models), tmp_path, gateway=Gateway)
    assert f"  {named}: " in str(refused.value) and f"  cases[0].{named}: " in str(refused.value)


async def test_what_a_suite_may_set(settings_source: Callable[..., SettingsSource], tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    config = (
        "{routing: {strategy: rule}, agents: {dirs: []}, tools: {run_command: {enabled: true}, disabled: [http_get]},"
        " plan: {approval: always}, memory: {max_items: 5}, limits: {max_text_chars: 2000}}"
    )
    text = f"name: fine\nagents: [agents]\nconfig: {config}\ncases:\n  - id: c\n    script: [hi]\n"
    suite = parse_suite(text + "    turns: [{user: '@chat hi', expect: {answer: hi}}]\n")
    options = EvalOptions(models=[choose("scripted")])
    result = await run_suite(suite, settings_source(), options, tmp_path, gateway=Gateway)
    assert [t.passed for t in result.trials] == [True], result.trials[0].failures()
    outside = suite.model_copy(update={"agents": ["../elsewhere"]})
    with pytest.raises(UntrustedSuite, match=r"agents\[0\]: '../elsewhere' is outside the suite's folder"):
        await run_suite(outside, settings_source(), options, tmp_path, gateway=Gateway)


def _never(case: Case) -> ScriptedModel:
    raise ConfigError("no model is made in this test")


def test_repeat_is_capped(tmp_path: Path) -> None:
    suite = suite_setting(tmp_path, "{}", "[{user: '@chat hi'}]")
    done = bot_eval(tmp_path, str(suite), "--model", "scripted", "--repeat", "101")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Invalid value for '--repeat'" in done.stderr and "less than or equal to 100" in done.stderr
    assert not (tmp_path / "data" / "evals").exists()


async def test_cases_times_models_times_repeats_is_capped(
    settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    cases = "".join(f"  - id: c{n}\n    turns: [{{user: hi}}]\n" for n in range(MAX_TRIALS // 100 + 1))
    suite = parse_suite(f"name: many\ncases:\n{cases}")
    options = EvalOptions(models=[ModelChoice("never", make=_never)], repeat=100)
    with pytest.raises(TooLarge) as refused:
        await run_suite(suite, settings_source(), options, tmp_path, gateway=Gateway)
    assert str(refused.value) == (
        "51 cases × 1 models × 100 repeats = 5,100 trials; a run has at most 5,000 "
        "(pick cases with --case or --tag, or fewer models or repeats)"
    )
    with pytest.raises(TooLarge, match="--repeat 101: a case is run 1 to 100 times"):
        await run_suite(suite, settings_source(), EvalOptions(repeat=101), tmp_path, gateway=Gateway)


def test_a_yaml_bomb_in_a_cases_config_is_refused_at_once(tmp_path: Path) -> None:
    suite = tmp_path / "suite" / "bomb.yaml"
    suite.parent.mkdir()
    text = f"name: bomb\ncases:\n  - id: c\n    config: {{routing: {bomb(9)}}}\n    turns: [{{user: hi}}]\n"
    suite.write_text(text)
    assert len(text) < 1024
    done = bot_eval(tmp_path, str(suite), "--model", "scripted", memory=1 << 30)  # 1 GiB: a bomb fails, not swaps
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{suite}: invalid suite:\n  line 4: refused: its aliases expand to more than 100,000 values" in (
        done.stderr
    )


def test_the_bomb_anywhere_else_is_refused_the_same_way() -> None:
    for where in ("unknown: {b}", "description: {b}", "tags: {b}"):
        text = f"name: bomb\ncases:\n  - id: c\n    {where.format(b=bomb(10))}\n    turns: [{{user: hi}}]\n"
        with pytest.raises(Exception, match="refused: its aliases expand to more than 100,000 values"):
            parse_suite(text)
