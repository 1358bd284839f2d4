"""The format of a simulated-user case (``simulate:``): a model plays the person from a goal, bounded in turns
and cost, instead of ``turns:`` written out.

```yaml
- id: write-by-a-person
  files: {notes.txt: old}
  simulate:
    goal: get notes.txt to say hello, approving the write
    persona: terse, non-technical
    model: openai/gpt-4.1-mini        # the simulator (none: the model under test; with --model scripted: script)
    max_turns: 8                       # at most 30
    max_cost: 0.05                     # the conversation's estimated cost, simulator included
    first: write hello to notes.txt    # the first message as written (none: the simulator writes it)
    every_turn: {no_tool: [delete_file]}
    expect: {tool: write_file, files: {notes.txt: hello}, status: done}
    success: notes.txt was changed to say hello, and the person approved it
    script: [{press: Approve}, {done: true, reason: it is written}]    # the scripted simulator's answers
```

The loop that plays it is :mod:`bot.evals.simulate`; this module is only the format (so :mod:`bot.evals.suite`
reads it without importing the seat and the checks).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from bot.evals.expect import Expect, JudgeCheck, Strict, listed

MAX_TURNS = 30
"""The most turns a simulated conversation may have (``max_turns``)."""
DEFAULT_TURNS = 8


class ScriptedUsage(Strict):
    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)
    cached_tokens: int = Field(0, ge=0)


class ScriptedAction(Strict):
    """One answer of the scripted simulator, as a model would give it (not checked to be one action: a script may
    play a simulator that answers wrongly), with the tokens it counts."""

    say: str | None = None
    press: str | None = None
    done: bool | None = None
    reached: bool | None = None
    reason: str | None = None
    usage: ScriptedUsage | None = None


class Simulate(Strict):
    """A simulated person: a model plays them from a goal, turn by turn, until it says the goal is reached, or
    ``max_turns`` turns were played, or the conversation cost ``max_cost``."""

    goal: str = Field(min_length=1, max_length=2000)
    """What the person wants (the simulator is told; ``success`` judges whether it happened)."""
    persona: str = Field("", max_length=2000)
    """Who they are and how they write."""
    model: str | None = None
    """The simulator (``provider/name``, or ``scripted``: ``script``); none: with ``--model scripted``, the
    ``script``, else the model under test. The offline model cannot play a person."""
    max_turns: int = Field(DEFAULT_TURNS, ge=1, le=MAX_TURNS)
    """The most turns played (``first`` included)."""
    max_cost: float | None = Field(None, gt=0)
    """Stop once the conversation's estimated cost (the agents', the router's, the simulator's and the per-turn
    judges') reached this; needs the models' ``budgets.prices``."""
    first: str | None = Field(None, min_length=1)
    """The first message, as written (none: the simulator writes it)."""
    every_turn: Expect = Expect()
    """Checks of every turn played."""
    expect: Expect = Expect()
    """Checks of the whole conversation: tools, pauses, handoffs and memory at any point; the files at the end;
    the last turn's answer, notices and status; a ``judge`` rubric reads the whole transcript."""
    success: Annotated[
        list[JudgeCheck],
        BeforeValidator(
            lambda v: [{"rubric": r} if isinstance(r, str) else r for r in listed(v)],
            json_schema_input_type=str | JudgeCheck | list[str | JudgeCheck],
        ),
    ] = []
    """The goal reached, judged on the whole transcript (a rubric; when it holds, running out of turns or cost
    is not a failure)."""
    script: list[str | ScriptedAction] | None = Field(None, max_length=200)
    """The scripted simulator's answers, in order: an action (``{say: …}``, ``{press: LABEL}``, ``{done: true,
    reason: …}``) or a string, the raw answer (to test what an answer that is not JSON does)."""

    @model_validator(mode="after")
    def _no_code(self) -> Simulate:
        if self.every_turn.check or self.expect.check:
            raise ValueError(
                "Python checks of a simulated conversation go in the case's own check: (given the last turn's "
                "transcript, the earlier ones in it)"
            )
        return self


def checked(case: Any) -> list[tuple[str, Expect]]:
    """Every set of checks of a case, each with where it is (``turn 2``, ``simulate.expect``): for the set-up
    checks (tool names, judges) that read them all."""
    out = [(f"turn {index}", turn.expect) for index, turn in enumerate(case.turns, 1)]
    sim: Simulate | None = getattr(case, "simulate", None)
    if sim is not None:
        out += [("simulate.every_turn", sim.every_turn), ("simulate.expect", sim.expect)]
        out += [("simulate.success", Expect(judge=sim.success))] if sim.success else []
    return out
