"""The eval suite format: a YAML file of cases, each a conversation of turns with checks per turn.

```yaml
name: support
config: {routing: {strategy: hybrid}}          # settings for every case (then the case's own ``config``)
cases:
  - id: time-in-tokyo
    turns:
      - user: what time is it in Tokyo?
        expect:
          agent: react
          tool: {name: get_current_time, args: {timezone: Asia/Tokyo}}
          answer: Asia/Tokyo
      - press: Approve                          # a button of the pending prompt, by label
```

The models below are the format: the JSON schema (``bot eval --schema``) is made from them, a file is checked
against that schema first (every problem at once, with its line and a did-you-mean for a misspelt key), then read
into them.  Short forms (``tool: NAME``, ``answer: TEXT``, ``judge: RUBRIC``, one check or a list) are part of
the schema and made long here.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Annotated, Any

import yaml
from jsonschema import Draft202012Validator
from pydantic import BeforeValidator, Field, PrivateAttr, ValidationError, field_validator, model_validator

from agents import yaml_safe
from agents.messages import Message
from bot.evals.confine import OutsideError, confined
from bot.evals.datasets import PLACEHOLDER, Expander, Rows
from bot.evals.expect import (
    CODE_CHECK,
    INTERRUPT_KINDS,
    STATUSES,
    AnswerCheck,
    CodeChecks,
    Expect,
    HandoffCheck,
    InterruptCheck,
    JudgeCheck,
    MemoryCheck,
    Strict,
    ToolCheck,
    Turn,
    in_workspace,
    listed,
)
from bot.evals.simulate_format import Simulate

__all__ = [
    "INTERRUPT_KINDS",
    "STATUSES",
    "AnswerCheck",
    "Case",
    "Expect",
    "HandoffCheck",
    "InterruptCheck",
    "JudgeCheck",
    "MemoryCheck",
    "ScriptStep",
    "Suite",
    "SuiteError",
    "ToolCheck",
    "Turn",
    "load_suite",
    "parse_suite",
    "suite_json_schema",
]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class SuiteError(Exception):
    """A suite file that cannot be used; ``problems`` are ``line N: where: what`` lines."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + ("\n  ".join(["invalid suite:", *problems]) if problems else "invalid"))


class Usage(Strict):
    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)
    cached_tokens: int = Field(0, ge=0)


class CallStep(Strict):
    name: str
    args: dict[str, Any] = {}


class ScriptStep(Strict):
    """One answer of the scripted model: text, one tool call, several, a JSON object (a plan), or an error."""

    text: str | None = None
    call: str | None = None
    args: dict[str, Any] = {}
    calls: list[CallStep] | None = None
    json_value: Any = Field(None, alias="json")
    error: str | None = None
    usage: Usage | None = None

    @model_validator(mode="after")
    def _one_answer(self) -> ScriptStep:
        given = [k for k in ("text", "call", "calls", "json_value", "error") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a step is one of text, call, calls, json or error")
        return self


Script = Annotated[
    list[ScriptStep] | None,
    BeforeValidator(
        lambda v: None if v is None else [{"text": s} if isinstance(s, str) else s for s in v],
        json_schema_input_type=list[str | ScriptStep] | None,
    ),
]


class Case(Strict):
    """A conversation in a fresh store and workspace, as one person in one chat."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=80)
    description: str = ""
    tags: list[str] = []
    user: str = "eval-user"
    """The sender's id (allowed; an admin when ``admin``)."""
    admin: bool = False
    files: dict[str, str] = {}
    """The workspace's files before the first turn: path → text."""
    config: dict[str, Any] = {}
    """Settings for this case, over the suite's ``config``."""
    script: Script = None
    """The scripted model's answers, in order (``--model scripted``)."""
    history: list[dict[str, Any]] = []
    """The chat's history before the first turn, as the store keeps messages (``role``, ``text``, ``tool_calls``):
    ``--from-traces`` gives a conversation that began after another what the model saw then."""
    turns: list[Turn] = Field([], min_length=1)
    """The conversation as written: what the person says and presses, each turn with its checks."""
    simulate: Simulate | None = None
    """Instead of ``turns``: a model plays the person from a goal (:mod:`bot.evals.simulate_format`)."""
    max_cost: float | None = Field(None, ge=0)
    """The case's estimated cost (USD: its turns' model calls and its judges') is at most this
    (``budgets.prices``)."""
    max_latency_ms: float | None = Field(None, ge=0)
    """Its turns' times summed are at most this (milliseconds)."""
    check: CodeChecks = []
    """Python checks run after the last turn (``module:function``, given the last turn's transcript, the earlier
    ones in it; needs ``--trust-suite``)."""

    vars: Rows = None
    """Rows that fill the case's ``{{name}}`` placeholders, a case each (:mod:`bot.evals.datasets`): a ``.csv``
    or ``.jsonl`` file in the suite's folder, or a list of mappings."""
    vars_id: str | None = None
    """The column that names each row's case (``<id>-<value>``); none: ``<id>-<row number>``."""
    _template: str | None = PrivateAttr(None)
    """The id of the case this one was filled from (its rows are picked by it too)."""

    _inside = field_validator("files")(lambda files: in_workspace(files))

    @model_validator(mode="after")
    def _rows_named(self) -> Case:
        if self.vars_id is not None and self.vars is None:
            raise ValueError("vars_id goes with vars (the rows it names)")
        return self

    @model_validator(mode="after")
    def _turns_or_simulate(self) -> Case:
        if bool(self.turns) == (self.simulate is not None):
            raise ValueError("a case has turns or simulate (one of them)")
        return self

    @field_validator("history")
    @classmethod
    def _messages(cls, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for n, message in enumerate(history):
            try:
                Message.model_validate(message)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ValueError(f"history[{n}]: not a message ({where}: {first['msg']})") from None
        return history


class JudgeConfig(Strict):
    model: str | None = None
    """The judge model (``provider/name``); none: the model under test."""
    threshold: float = Field(0.7, ge=0, le=1)


class Suite(Strict):
    """An eval suite: cases run through the real supervisor, checked turn by turn."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=80)
    description: str = ""
    config: dict[str, Any] = {}
    """Settings for every case (over the configuration; a case's own ``config`` goes over these)."""
    agents: list[str] = []
    """Directories of agent files for the cases (relative to the suite file); none: the configured ones."""
    models: list[str] = []
    """Models to run when the command names none (``offline``, ``scripted``, ``provider/name``)."""
    judge: JudgeConfig = JudgeConfig()
    cases: list[Case] = Field(min_length=1)
    _code_lines: dict[tuple[str, int], int] = PrivateAttr(default_factory=dict)
    """(case id, turn number or 0 for the case's own) → the line of its Python checks in the file."""

    @field_validator("cases")
    @classmethod
    def _unique(cls, cases: list[Case]) -> list[Case]:
        seen: set[str] = set()
        for case in cases:
            if case.id in seen:
                raise ValueError(f"two cases are named {case.id!r}")
            seen.add(case.id)
        return cases

    def select(self, ids: list[str] | None = None, tags: list[str] | None = None) -> Suite:
        """The suite with only the cases named (or tagged); a template's id names every case of its rows."""
        cases = [
            c
            for c in self.cases
            if (not ids or c.id in ids or c._template in ids) and (not tags or any(t in c.tags for t in tags))
        ]
        return self.model_copy(update={"cases": cases})


def suite_json_schema() -> dict[str, Any]:
    """The JSON schema of a suite file (for editors: ``# yaml-language-server: $schema=…``)."""
    schema = Suite.model_json_schema(by_alias=True)
    return {"$schema": JSON_SCHEMA_DIALECT, **schema, "title": "Eval suite"}


_VALIDATOR: Draft202012Validator | None = None


def _validator() -> Draft202012Validator:
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = Draft202012Validator(suite_json_schema())
    return _VALIDATOR


def parse_suite(text: str, source: str = "<suite>", base_dir: Path | None = None) -> Suite:
    """A suite file's text → a :class:`Suite`; :class:`SuiteError` lists every problem with its line.

    Read within :data:`agents.yaml_safe.SUITE`'s limits (a YAML bomb anywhere is refused at once); with
    ``base_dir`` (the suite's folder), every file a turn attaches is checked to be in it
    (:mod:`bot.evals.confine`)."""
    try:
        data, root = yaml_safe.load_document(text, limits=yaml_safe.SUITE)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        what = "refused" if isinstance(exc, yaml_safe.LimitError) else "invalid YAML"
        raise SuiteError(source, [f"{where}{what}: {getattr(exc, 'problem', None) or exc}"]) from None
    if not isinstance(data, dict):
        raise SuiteError(source, ["a suite is a mapping with name and cases"])
    found: list[tuple[int, str]] = [(_line_of(root, _pointed(e)), _describe(e)) for e in _validator().iter_errors(data)]
    if found:
        raise SuiteError(source, [f"line {n}: {what}" if n else what for n, what in sorted(found)])
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            path = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
            message = err["msg"].removeprefix("Value error, ")
            found.append((_line_of(root, path), f"{_where(path)}: {message}"))
        raise SuiteError(source, [f"line {n}: {what}" if n else what for n, what in sorted(found)]) from None
    if base_dir is not None:
        for i, case in enumerate(suite.cases):
            for j, turn in enumerate(case.turns):
                for k, name in enumerate(turn.attach):
                    if case.vars is not None and PLACEHOLDER.search(name):
                        continue  # a row's file: checked when the row fills it (_filled)
                    try:
                        confined(base_dir, name)
                    except OutsideError as exc:
                        path = ["cases", i, "turns", j, "attach", k]
                        found.append((_line_of(root, path), f"{_where(path)}: {exc}"))
    if found:
        raise SuiteError(source, [f"line {n}: {what}" for n, what in sorted(found)])
    suite._code_lines = {  # where each Python check is written (a refusal names it)
        (case.id, j): _line_of(root, ["cases", i, *(["turns", j - 1, "expect"] if j else []), "check"])
        for i, case in enumerate(suite.cases)
        for j in range(len(case.turns) + 1)
        if (case.turns[j - 1].expect.check if j else case.check)
    }
    if any(case.vars is not None for case in suite.cases):
        suite = _filled(suite, data, root, source, base_dir)
    return suite


def _filled(suite: Suite, data: dict[str, Any], root: Any, source: str, base_dir: Path | None) -> Suite:
    """``suite`` with each case that has ``vars`` replaced by the cases its rows make (:mod:`bot.evals.datasets`),
    each checked as a case is; a problem is said at the template's line, with the row's."""
    expander = Expander(base_dir, lambda path: _line_of(root, path), _where)
    cases, found = expander.cases(suite.cases, data["cases"], Case.model_validate)
    if found:
        raise SuiteError(source, [f"line {n}: {what}" for n, what in sorted(found)])
    out = suite.model_copy(update={"cases": cases})
    lines = suite._code_lines  # a Python check's line: its template's
    out._code_lines = lines | {(c.id, j): n for c in cases for (t, j), n in lines.items() if t == c._template}
    return out


def load_suite(path: Path) -> Suite:
    """The suite in the file ``path``; what its turns attach must be in its folder."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(str(path), [f"cannot read it ({exc.strerror})"]) from None
    except UnicodeDecodeError:
        raise SuiteError(str(path), ["not a text file (UTF-8)"]) from None
    return parse_suite(text, str(path), path.parent)


def _where(path: list[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f"{'.' if out else ''}{part}"
    return out or "the suite"


def _pointed(error: Any) -> list[Any]:
    """Where an error points: the misspelt key itself for an unknown key."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        path += [next(k for k in error.instance if k not in known)]
    return path


def _line_of(node: Any, path: list[Any]) -> int:
    """The line of the YAML node at ``path`` (the deepest one found)."""
    found = node
    for part in path:
        if isinstance(found, yaml.MappingNode):
            found = next((v for k, v in found.value if k.value == part), None)
        elif isinstance(found, yaml.SequenceNode) and isinstance(part, int) and part < len(found.value):
            found = found.value[part]
        else:
            break
        if found is None:
            break
        node = found
    return int(node.start_mark.line) + 1 if node is not None else 0


def _describe(error: Any) -> str:
    """One schema error as a person reads it: where, what, and a did-you-mean for a misspelt key."""
    where = _where(list(error.absolute_path))
    if error.validator in ("anyOf", "oneOf") and error.context:
        # A short form or its long one: say what is wrong with the branch of the same shape.
        shaped = [e for e in error.context if _same_shape(e, error.instance)] or list(error.context)
        deepest = max(shaped, key=lambda e: len(e.absolute_path))
        if deepest.validator not in ("type", "anyOf", "oneOf") or len(deepest.absolute_path) > len(error.path):
            return _describe(deepest)
        kinds = sorted({t for e in error.context if e.validator == "type" for t in listed(e.validator_value)})
        return f"{where}: {_shown(error.instance)} is not {' or '.join(kinds) or 'allowed here'}{_quote_hint(error)}"
    if error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in known]
        hints = []
        for key in extra:
            close = difflib.get_close_matches(str(key), known, n=1)
            hints.append(f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return f"{where}: {'; '.join(hints)}; known: {', '.join(known)}"
    if error.validator == "enum":
        close = difflib.get_close_matches(str(error.instance), [str(v) for v in error.validator_value], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        choices = ", ".join(_shown(v) for v in error.validator_value)
        return f"{where}: {_shown(error.instance)} is not one of {choices}{hint}"
    if error.validator == "const":
        return f"{where}: {_shown(error.instance)} is not allowed here"
    if error.validator == "pattern" and error.validator_value == CODE_CHECK:
        return (
            f"{where}: {_shown(error.instance)} is not module:function (a function of a module in the suite's folder)"
        )
    if error.validator == "required":
        return f"{where}: {error.message.replace('property', 'key')}"
    if error.validator == "type":
        wanted = " or ".join(listed(error.validator_value))
        return f"{where}: {_shown(error.instance)} is not {wanted}{_quote_hint(error)}"
    return f"{where}: {error.message}"


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, bool | None | int | float) else repr(value)


def _quote_hint(error: Any) -> str:
    """YAML reads ``yes``, ``1`` or ``on`` as a boolean or number where text was meant."""
    wanted = {t for e in [error, *(error.context or [])] if e.validator == "type" for t in listed(e.validator_value)}
    if "string" in wanted and isinstance(error.instance, bool | int | float):
        return f" (YAML read it as {type(error.instance).__name__}: put it in quotes)"
    return ""


def _same_shape(error: Any, instance: Any) -> bool:
    """The branch ``error`` came from is for values shaped like ``instance`` (an object for a mapping …)."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    kind = schema.get("type")
    shapes = {dict: "object", list: "array", str: "string", bool: "boolean"}
    wanted = next((name for cls, name in shapes.items() if isinstance(instance, cls)), None)
    if kind is None:
        return "properties" in schema and wanted == "object"
    return wanted in listed(kind)
