"""Every ``bot`` command the README and the manual (docs/) show in a code block runs offline, as they say it does.

The convention (docs/development.md, "Commands in the docs are tested"):

- fenced ``sh``, ``bash`` and ``console`` blocks are read (in ``console`` blocks only the lines that start with ``$ ``);
  every ``bot …`` command in them is run, also after ``&&``, and ``printf '…' | bot …`` gives the command that input;
  other commands (``pip``, ``docker``, ``pytest``) are not run;
- a command exits 0, or N when its comment says ``(exit N)``;
- a block that cannot run offline (the network, a platform's token, questions at a terminal, a server that serves
  until stopped) has ``<!-- not-run: why -->`` on the line before its opening fence; ``bot run`` and ``bot health``
  are only ever shown in such blocks;
- a block whose first command is ``bot init`` starts in an empty folder; any other in a project written by
  ``bot init --yes --model offline`` with the shipped example agents (``config/agents``) and eval suites (``evals/``).

All of them run in ONE subprocess (this file, run as a script), each through typer's ``CliRunner`` on ``bot``'s app,
with an empty HOME and no secrets in the environment: a subprocess per command would cost about a second each.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^\s*```\s*([\w-]*)\s*$")
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(\S.*?)\s*-->\s*$")
EXIT = re.compile(r"#.*\(exit (\d+)\)")
SHELLS = {"sh", "bash", "console"}
NEVER = {"run", "health"}
"""Commands that serve until stopped (``bot run``) or need a server running (``bot health``)."""
SECRET_ENV = re.compile(
    r"^(BOT_|GEMINI_|OPENAI_|TELEGRAM_|SLACK_|DISCORD_|XDG_)|_API_KEY$|_TOKEN$|SECRET|^(REDIS|DATABASE)_URL$"
)
"""What the commands must not see: settings, keys, tokens, database and Redis URLs, another config home."""


@dataclass(frozen=True)
class Command:
    where: str
    argv: list[str]
    stdin: str | None
    exit: int


@dataclass(frozen=True)
class Block:
    where: str
    commands: list[Command]
    skipped: str | None

    @property
    def fresh(self) -> bool:
        return bool(self.commands) and self.commands[0].argv[:1] == ["init"]


def _commands(line: str, where: str) -> list[Command]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    tokens = list(lexer)
    expected = EXIT.search(line)
    found: list[Command] = []
    words: list[str] = []
    pipe_from: list[str] = []
    stdin: str | None = None
    for token in [*tokens, "&&"]:
        if token == "|":
            pipe_from, words = words, []
        elif token in {"&&", ";", "||"}:
            if pipe_from and pipe_from[0] == "printf" and len(pipe_from) == 2:
                stdin = codecs.escape_decode(pipe_from[1].encode())[0].decode()
            if words[:1] == ["bot"]:
                found.append(Command(where, words[1:], stdin, int(expected.group(1)) if expected else 0))
            words, stdin, pipe_from = [], None, []
        else:
            words.append(token)
    return found


def blocks(page: Path) -> list[Block]:
    """The shell blocks of a page, with their ``bot`` commands."""
    name = page.relative_to(ROOT).as_posix()
    out: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None or not fence.group(1):
            i += 1
            continue
        before = next((line for line in reversed(lines[:i]) if line.strip()), "")
        skipped = NOT_RUN.match(before)
        start, language, body = i + 1, fence.group(1), []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1
        if language not in SHELLS:
            continue
        commands, pending = [], ""
        for number, raw in enumerate(body, start + 1):
            text = raw.strip()
            if language == "console":
                if not text.startswith("$ "):
                    continue
                text = text[2:]
            if text.endswith("\\"):
                pending += text[:-1] + " "
                continue
            commands += _commands(pending + text, f"{name}:{number}")
            pending = ""
        out.append(Block(f"{name}:{start}", commands, skipped.group(1) if skipped else None))
    return out


def runnable() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.skipped is None and b.commands]


def test_the_docs_show_commands_to_run_and_mark_the_others() -> None:
    every = [b for page in PAGES for b in blocks(page)]
    commands = [c for b in runnable() for c in b.commands]
    assert len(commands) >= 15, [c.argv for c in commands]
    serving = [f"{c.where}: bot {shlex.join(c.argv)}" for c in commands if c.argv[:1] and c.argv[0] in NEVER]
    assert serving == [], f"mark these blocks <!-- not-run: why --> (they serve until stopped): {serving}"
    assert any(b.skipped for b in every) and all(b.skipped is None or b.skipped.strip() for b in every)


def test_every_command_the_docs_show_runs_offline(tmp_path: Path) -> None:
    plan = [asdict(b) | {"fresh": b.fresh} for b in runnable()]
    (tmp_path / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not SECRET_ENV.search(k)}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), NO_COLOR="1")
    driver = [sys.executable, "-m", "tests.test_docs_commands", str(tmp_path)]
    done = subprocess.run(driver, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert len(results) == sum(len(b["commands"]) for b in plan)
    wrong = [
        f"{r['where']}: bot {shlex.join(r['argv'])} exited {r['code']}, the docs say {r['exit']}\n{r['output'][-1500:]}"
        for r in results
        if r["code"] != r["exit"]
    ]
    assert wrong == [], "\n\n".join(wrong)


def _drive(root: Path) -> None:
    """In the subprocess: every block's commands through CliRunner, results to ``root/results.json``."""
    from typer.testing import CliRunner

    from bot.cli.main import app

    runner = CliRunner()
    template = root / "template"
    template.mkdir()
    os.chdir(template)
    made = runner.invoke(app, ["init", "--yes", "--model", "offline"])
    assert made.exit_code == 0, made.output
    shutil.copytree(ROOT / "config" / "agents", template / "config" / "agents", dirs_exist_ok=True)
    shutil.copytree(ROOT / "evals", template / "evals")
    results = []
    for number, block in enumerate(json.loads((root / "plan.json").read_text(encoding="utf-8"))):
        folder = root / f"block{number}"
        if block["fresh"]:
            folder.mkdir()
        else:
            shutil.copytree(template, folder)
        os.chdir(folder)
        for command in block["commands"]:
            started = time.perf_counter()
            result = runner.invoke(app, command["argv"], input=command["stdin"] or "")
            output = result.output
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                output += f"\n{result.exception!r}"
            took = round(time.perf_counter() - started, 2)
            results.append(command | {"code": result.exit_code, "output": output, "s": took})
    (root / "results.json").write_text(json.dumps(results), encoding="utf-8")


if __name__ == "__main__":
    _drive(Path(sys.argv[1]))
    sys.stdout.flush()
    os._exit(0)  # a thread a command left behind (the encoder's loader) must not keep the process alive
