"""Reading one agent file: the ``---`` fences, strict YAML, and errors that name the field.

Every problem found in a file is reported at once (``file: field: reason``), so
an operator fixes a file in one pass instead of one error per run.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agents.specs.model import SECTIONS, AgentSpec, Scope
from agents.yaml_safe import FAST, load

# The closing fence is a line of exactly three dashes; `----` or `--- x` inside the YAML do not end it.
_FRONT_MATTER = re.compile(
    r"\A---[ \t]*\r?\n(?P<front>.*?)(?:\r?\n)?^---[ \t]*$\r?\n?(?P<body>.*)\Z", re.DOTALL | re.MULTILINE
)
_NO_FRONT_MATTER = "missing: start the file with a '---' line, the YAML fields and another '---' line, then the prompt"
# Keys the loader fills in: in the front matter they would be silently replaced.
_RESERVED = {
    "prompt": "not a front matter field: the Markdown body is the prompt",
    "source": "unknown field (the loader records the file)",
}


@dataclass(frozen=True)
class SpecError:
    """One problem in one agent file: the operator's fix is in ``file`` at ``field``."""

    file: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.reason}"


class SpecFileError(Exception):
    """An agent file that cannot be loaded, with every problem found in it."""

    def __init__(self, source: str, problems: Iterable[tuple[str, str]], name: str | None = None) -> None:
        self.errors = [SpecError(source, where, reason) for where, reason in problems]
        self.name = name
        """The agent name the file declares, when it could be read."""
        super().__init__("; ".join(str(e) for e in self.errors))


class _UniqueKeyLoader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice (PyYAML would silently keep the last one)."""


class _FastUniqueKeyLoader(FAST):  # type: ignore[valid-type,misc]
    """The same on libyaml's parser."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # an unhashable key; construct_mapping reports it
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_FastUniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return f"invalid YAML: {problem}"
    # +2: marks count from 0, and the front matter starts on the file's second line.
    return f"invalid YAML at line {mark.line + 2}, column {mark.column + 1}: {problem}"


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f"{'.' if out else ''}{part}"
    return out or "front matter"


def _unknown_field(loc: tuple[int | str, ...]) -> str:
    section = ".".join(str(p) for p in loc[:-1] if isinstance(p, str))
    model = SECTIONS.get(section)
    if model is None:
        return "unknown field"
    known = [info.alias or name for name, info in model.model_fields.items() if name not in _RESERVED]
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    return f"unknown field (did you mean {close[0]!r}?)" if close else "unknown field"


def _explain(exc: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        if err["type"] == "extra_forbidden":
            reason = _unknown_field(loc)
        elif err["type"] == "missing":
            reason = "required"
        else:
            reason = err["msg"].removeprefix("Value error, ")
            given = err.get("input")
            if err["type"] == "string_type" and isinstance(given, bool | int | float):
                reason += f" (YAML read {given!r} as {type(given).__name__}: put it in quotes)"
        problems.append((_location(loc), reason))
    return problems


def parse_agent_text(text: str, *, source: str = "<text>", scope: Scope = "project") -> AgentSpec:
    """An agent file's text → an :class:`AgentSpec`; raises :class:`SpecFileError` listing every problem."""
    match = _FRONT_MATTER.match(text.removeprefix("\ufeff"))
    if match is None:
        raise SpecFileError(source, [("front matter", _NO_FRONT_MATTER)])
    try:
        data = load(match["front"], fast=_FastUniqueKeyLoader, exact=_UniqueKeyLoader)  # safe: no arbitrary objects
    except yaml.YAMLError as exc:
        raise SpecFileError(source, [("front matter", _yaml_problem(exc))]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecFileError(source, [("front matter", "must be a mapping of fields (name: value)")])
    name = data.get("name") if isinstance(data.get("name"), str) else None
    problems = [(key, reason) for key, reason in _RESERVED.items() if key in data]
    body = match["body"].strip()
    if not body:
        problems.append(("body", "empty: the Markdown body is the agent's system prompt"))
    fields = {k: v for k, v in data.items() if k not in _RESERVED}
    fields.setdefault("scope", scope)
    spec = None
    try:
        spec = AgentSpec.model_validate(fields)
    except ValidationError as exc:
        problems.extend(_explain(exc))
    if problems or spec is None:
        raise SpecFileError(source, problems, name)
    return spec.model_copy(update={"prompt": body, "source": source, "scope": scope})


def parse_agent_file(path: Path, scope: Scope = "project") -> AgentSpec:
    """Read and parse one agent file; raises :class:`SpecFileError` listing every problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecFileError(str(path), [("file", f"cannot read: {exc}")]) from None
    return parse_agent_text(text, source=str(path), scope=scope)
