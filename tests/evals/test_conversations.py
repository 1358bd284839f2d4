"""Conversations the suite drives: buttons pressed by label or by choice, questions answered in text, handoffs
between file agents, memory across turns, files attached, side effects in the case's own workspace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.models.base import Model
from agents.models.scripted import ScriptedModel
from bot.evals.models import ModelChoice, case_script, choose
from bot.evals.results import RunResult
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.suite import Case, parse_suite
from bot.gateway.app import Gateway

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(300)


async def run(source: SettingsSource, text: str, base: Path | None = None, **options: Any) -> RunResult:
    options.setdefault("models", [choose("scripted")])
    return await run_suite(parse_suite(text), source, EvalOptions(**options), base or Path.cwd(), gateway=Gateway)


async def test_a_confirmation_pressed_by_label_runs_the_call_in_the_case_workspace(
    settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    outside = tmp_path / "notes.txt"
    result = await run(
        settings_source(),
        """
name: approvals
cases:
  - id: approve
    script: [{call: write_file, args: {path: notes.txt, content: "hello"}}, "Written."]
    turns:
      - user: "@react write hello to notes.txt"
        expect:
          interrupt: {kind: tool_confirm, prompt: 'write_file(path="notes.txt"'}
          no_tool: [write_file]
          files: {notes.txt: false}
          status: waiting
      - press: approve
        expect:
          tool: {name: write_file, args: {path: notes.txt}}
          files: {notes.txt: hello}
          answer: Written.
          status: done
      - press: Deny
  - id: deny-by-choice
    script: [{call: write_file, args: {path: notes.txt, content: "hello"}}, "Not written."]
    turns:
      - user: "@react write hello to notes.txt"
      - choice: d
        expect: {no_tool: true, files: {notes.txt: false}, answer: Not written.}
""",
    )
    approve, deny = result.trials
    assert deny.passed, deny.failures()
    assert [t.passed for t in approve.turns] == [True, True, False]
    assert approve.turns[2].error == "there is no prompt with buttons to press", "the answered prompt has none left"
    assert not outside.exists(), "the tools write in the case's scratch workspace"


async def test_a_question_answered_by_a_button_and_in_text(settings_source: Callable[..., SettingsSource]) -> None:
    ask = "{call: ask_user, args: {question: 'Which colour?', choices: [red, blue]}}"
    result = await run(
        settings_source(),
        f"""
name: questions
cases:
  - id: by-button
    script: [{ask}, "Blue it is."]
    turns:
      - user: "@react paint it"
        expect: {{interrupt: {{kind: ask_user, prompt: "Which colour?"}}, status: waiting}}
      - press: blue
        expect: {{answer: Blue it is., status: done}}
  - id: in-text
    script: [{ask}, "Green, then."]
    turns:
      - user: "@react paint it"
      - user: green please
        expect: {{agent: react, answer: "Green, then.", status: done}}
""",
    )
    assert all(t.passed for t in result.trials), [t.failures() for t in result.trials]


async def test_a_handoff_between_file_agents_and_memory_across_turns(
    settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    agents = tmp_path / "suite" / "agents"
    agents.mkdir(parents=True)
    (agents / "triage.md").write_text(
        "---\nkind: agent\nname: triage\nrunner: react\ndescription: Sorts requests.\n"
        "handoffs:\n  - to: fixer\n---\nYou sort requests.\n"
    )
    (agents / "fixer.md").write_text(
        "---\nkind: agent\nname: fixer\nrunner: chat\ndescription: Fixes.\n---\nYou fix.\n"
    )
    (tmp_path / "suite" / "shot.png").write_bytes(PNG)
    seen: list[ScriptedModel] = []

    def keep(case: Case) -> Model:
        model = case_script(case)
        assert isinstance(model, ScriptedModel)
        seen.append(model)
        return model

    result = await run(
        settings_source(),
        """
name: together
agents: [agents]
cases:
  - id: handoff
    script: [{call: transfer_to_fixer, args: {reason: it needs a fix}}, "Fixed."]
    turns:
      - user: "@triage the login is broken"
        expect:
          agent: triage
          handoff: {to: fixer, from: triage}
          notice: "🔀 triage → fixer"
          answer: Fixed.
  - id: memory
    script:
      - {call: remember, args: {fact: I like green tea}}
      - Noted.
      - {call: recall, args: {query: tea}}
      - You like green tea.
    turns:
      - user: "@chat remember that I like green tea"
        expect: {memory: {stored: green tea}, tool: remember}
      - user: "@chat what do I like?"
        expect: {memory: {recalled: green tea}, answer: green tea}
  - id: attached
    script: ["A small picture."]
    turns:
      - user: "@chat what is this?"
        attach: shot.png
        expect: {answer: A small picture.}
""",
        base=tmp_path / "suite",
        models=[ModelChoice("scripted", make=keep)],
    )
    assert all(t.passed for t in result.trials), [t.failures() for t in result.trials]
    handoff = result.trials[0].turns[0]
    assert handoff.handoffs == ["triage → fixer"]
    attached = next(m for m in seen if any(r.messages[-1].media for r in m.requests))
    [media] = attached.requests[-1].messages[-1].media
    assert (media.kind, media.mime_type, media.size) == ("image", "image/png", len(PNG))


async def test_a_case_whose_settings_are_wrong_fails_alone(settings_source: Callable[..., SettingsSource]) -> None:
    result = await run(
        settings_source(),
        """
name: settings
cases:
  - id: bad
    config: {routing: {strategy: sideways}}
    turns: [{user: hi}]
  - id: good
    script: [hello]
    turns: [{user: "@chat hi", expect: {answer: hello}}]
""",
    )
    bad, good = result.trials
    assert bad.error is not None and "routing.strategy" in bad.error and not bad.passed
    assert good.passed
