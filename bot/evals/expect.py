"""What a turn of an eval suite is and what it expects: the checks' format (``expect:``).

The models below are part of the suite format (:mod:`bot.evals.suite` reads the file into them; the JSON schema
of ``bot eval --schema`` is made from them).  Short forms (``tool: NAME``, ``answer: TEXT``, ``judge: RUBRIC``, one
check or a list) are part of the schema and made long here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

INTERRUPT_KINDS = ("tool_confirm", "plan_approval", "ask_user")
STATUSES = ("done", "failed", "stopped", "cancelled", "waiting")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True)


def listed(value: Any) -> Any:
    return value if isinstance(value, list) else [value]


def _named(key: str) -> Any:
    """One check or several, each a mapping or its short form (a string for ``key``)."""
    return lambda value: [{key: v} if isinstance(v, str) else v for v in listed(value)]


def _regex_problem(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"not a regular expression ({exc})"
    return None


def _schema_problem(schema: Any) -> str | None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"not a JSON schema ({exc.message})"
    return None


def in_workspace(files: dict[str, Any]) -> dict[str, Any]:
    for name in files:
        if not name or Path(name).is_absolute() or ".." in Path(name).parts:
            raise ValueError(f"{name!r}: a path inside the workspace")
    return files


class ToolCheck(Strict):
    """The turn called this tool, with arguments that match."""

    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None
    """What its arguments must be (see ``match``); none: any arguments."""
    match: Literal["exact", "subset", "regex", "schema"] = "subset"
    """exact: equal; subset: these keys with these values (nested objects alike); regex: each value a regular
    expression the argument's text must contain; schema: ``args`` is a JSON schema the arguments fit."""
    times: int | None = Field(None, ge=1)
    """Exactly this many calls of it (none: at least one)."""

    @model_validator(mode="after")
    def _usable(self) -> ToolCheck:
        if self.match == "regex":
            for key, pattern in (self.args or {}).items():
                problem = _regex_problem(pattern) if isinstance(pattern, str) else "a regular expression is text"
                if problem:
                    raise ValueError(f"args.{key}: {problem}")
        if self.match == "schema":
            problem = _schema_problem(self.args or {})
            if problem:
                raise ValueError(f"args: {problem}")
        return self


class AnswerCheck(Strict):
    """What the bot wrote in the turn (its messages, prompts included; notices and edits left out)."""

    contains: Annotated[list[str], BeforeValidator(listed, json_schema_input_type=str | list[str])] = []
    not_contains: Annotated[list[str], BeforeValidator(listed, json_schema_input_type=str | list[str])] = []
    matches: str | None = None
    """A regular expression found in it."""
    equals: str | None = None
    json_schema: dict[str, Any] | None = Field(None, alias="schema")
    """The answer is JSON (a fenced block is fine) that fits this schema."""
    ignore_case: bool = False
    similar: Annotated[list[str], BeforeValidator(listed, json_schema_input_type=str | list[str])] = []
    """Texts the answer means (each must hold): the cosine similarity of the answer and the text, by the offline
    sentence encoder routing uses, is at least ``threshold``."""
    threshold: float | None = Field(None, ge=-1, le=1)
    """The least similarity ``similar`` passes at (none: 0.65)."""

    @model_validator(mode="after")
    def _usable(self) -> AnswerCheck:
        if self.threshold is not None and not self.similar:
            raise ValueError("threshold goes with similar")
        problem = _regex_problem(self.matches) if self.matches is not None else None
        problem = problem or (_schema_problem(self.json_schema) if self.json_schema is not None else None)
        if problem:
            raise ValueError(problem)
        return self


class InterruptCheck(Strict):
    """The turn paused for a person: a confirmation, a plan to approve or a question."""

    kind: Literal["tool_confirm", "plan_approval", "ask_user"]
    prompt: str | None = None
    """Text the prompt contains."""


class HandoffCheck(Strict):
    """An agent handed the conversation to another (accepted, not refused)."""

    to: str
    source: str | None = Field(None, alias="from")


class MemoryCheck(Strict):
    """Long-term memory: after the turn a memory holds ``stored``; in the turn a recalled memory (or the
    ``recall`` tool's answer) holds ``recalled``."""

    stored: str | None = None
    recalled: str | None = None


class JudgeCheck(Strict):
    """A rubric a model scores the turn's answer against (0 to 1); the prompt and the score are kept."""

    rubric: str = Field(min_length=1)
    threshold: float | None = Field(None, ge=0, le=1)
    """The least score that passes (none: the suite's ``judge.threshold``)."""
    model: str | None = None
    """The judge (none: ``--judge``, the suite's ``judge.model``, else the model under test)."""


class PairwiseCheck(Strict):
    """The run's models' answers to the turn compared two at a time by a judge against a rubric: which is better,
    or a tie (:mod:`bot.evals.pairwise`).  A comparison, not a check: it neither passes nor fails a trial."""

    rubric: str = Field(min_length=1)
    model: str | None = None
    """The judge (none: ``--judge``, else the suite's ``judge.model``)."""
    swap: bool = True
    """Ask again with the answers' order swapped; two verdicts that differ are a tie (false: ask once, the order
    drawn at random)."""


CODE_CHECK = r"^[A-Za-z0-9_][A-Za-z0-9_./-]*:[A-Za-z_][A-Za-z0-9_]*$"
"""A Python check: ``module:function`` (a module of the suite's folder, dotted or a ``.py`` path in it)."""
CodeCheck = Annotated[str, Field(pattern=CODE_CHECK)]
CodeChecks = Annotated[list[CodeCheck], BeforeValidator(listed, json_schema_input_type=CodeCheck | list[CodeCheck])]

Tools = Annotated[
    list[ToolCheck], BeforeValidator(_named("name"), json_schema_input_type=str | ToolCheck | list[str | ToolCheck])
]
Judges = Annotated[
    list[JudgeCheck],
    BeforeValidator(_named("rubric"), json_schema_input_type=str | JudgeCheck | list[str | JudgeCheck]),
]
Handoffs = Annotated[
    list[HandoffCheck] | Literal[False] | None,
    BeforeValidator(
        lambda v: v if v is False or v is None else _named("to")(v),
        json_schema_input_type=Literal[False] | str | HandoffCheck | list[str | HandoffCheck] | None,
    ),
]


class Expect(Strict):
    """The checks of one turn; each holds or the turn fails."""

    agent: str | None = None
    """The agent the message was routed to (a press or an answer: the agent that went on)."""
    tool: Tools = []
    exact_tools: bool = False
    """No tool called beyond those ``tool`` lists (with ``times``: exactly as often)."""
    no_tool: bool | list[str] = False
    """true: no tool called at all; names: none of these called."""
    interrupt: Annotated[
        InterruptCheck | Literal[False] | None,
        BeforeValidator(
            lambda v: {"kind": v} if isinstance(v, str) else v,
            json_schema_input_type=Literal["tool_confirm", "plan_approval", "ask_user", False] | InterruptCheck | None,
        ),
    ] = None
    """A kind (``tool_confirm``, ``plan_approval``, ``ask_user``) or false: no pause."""
    answer: Annotated[
        AnswerCheck | None,
        BeforeValidator(
            lambda v: {"contains": v} if isinstance(v, str | list) else v,
            json_schema_input_type=str | list[str] | AnswerCheck | None,
        ),
    ] = None
    notice: Annotated[list[str], BeforeValidator(listed, json_schema_input_type=str | list[str])] = []
    """Text the turn's notices contain (routing, handoff, progress lines)."""
    handoff: Handoffs = None
    """A target (or several, or ``{to, from}``), or false: no handoff."""
    memory: MemoryCheck | None = None
    files: dict[str, str | bool] = {}
    """The workspace after the turn: path → text the file contains, true (it exists) or false (it does not)."""
    judge: Judges = []
    status: Literal["done", "failed", "stopped", "cancelled", "waiting"] | None = None
    """How the turn's run ended (``waiting``: paused for a person)."""
    latency_ms: float | None = Field(None, ge=0)
    """The turn took at most this long (milliseconds, from the message or press to the gateway settled)."""
    check: CodeChecks = []
    """Python checks (``module:function`` of the suite's folder, given the turn's transcript; needs
    ``--trust-suite``): each returns true, ``(false, reason)``, a reason (failed) or raises AssertionError."""

    pairwise: Annotated[
        PairwiseCheck | None,
        BeforeValidator(
            lambda v: {"rubric": v} if isinstance(v, str) else v, json_schema_input_type=str | PairwiseCheck | None
        ),
    ] = None
    """A rubric the models' answers are compared by, two models at a time (a run of two or more): a win, tie or
    loss per pair, apart from pass and fail."""

    _inside = field_validator("files")(lambda files: in_workspace(files))


class Turn(Strict):
    """One thing the person does: a message, or a press of the pending prompt's button."""

    user: str | None = None
    """A message (the answer to a pending question too)."""
    press: str | None = None
    """A button of the newest prompt, by its label (its start; an emoji before it is ignored)."""
    choice: str | None = None
    """A button by the choice its payload carries (what traces record: ``a``, ``d``, ``approve``)."""
    attach: Annotated[list[str], BeforeValidator(listed, json_schema_input_type=str | list[str])] = []
    """Files sent with the message (paths relative to the suite file)."""
    expect: Expect = Expect()

    @model_validator(mode="after")
    def _one_action(self) -> Turn:
        given = [k for k in ("user", "press", "choice") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"a turn is one of user, press or choice (it has {', '.join(given) or 'none'})")
        if self.attach and self.user is None:
            raise ValueError("attach goes with a user message")
        return self
