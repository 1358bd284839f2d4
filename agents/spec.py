"""File-defined agents: Markdown with YAML front matter.

The front matter is the agent's configuration (validated by :class:`AgentSpec`,
which also exports a JSON schema for editors); the Markdown body is its system
prompt.  Files load from three places, later overriding earlier by name:
built-in (package data) < user (``~/.config/bot/agents``) < project
(``config/agents``).  A broken file is reported with file, field and reason and
skipped; the others load.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jsonschema
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
MAX_NAME = 48  # transfer_to_<name> must stay a valid function name (≤ 64 chars)
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.DOTALL)
_GLOB = re.compile(r"[*?\[]")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ToolsPolicy(_Strict):
    allow: tuple[str, ...] = ()
    """Tool names or glob patterns (``mcp.github.*``); empty = every tool of risk ≤ medium."""
    deny: tuple[str, ...] = ()
    """Names or patterns never offered; deny wins over allow."""


class McpPolicy(_Strict):
    servers: tuple[str, ...] = ()


class Triggers(_Strict):
    keywords: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    priority: int = Field(50, ge=0, le=100)

    @field_validator("patterns")
    @classmethod
    def _compile(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for i, pattern in enumerate(patterns):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"patterns[{i}] {pattern!r} is not a valid regex: {exc}") from None
        return patterns


class Handoff(_Strict):
    to: str
    when: str = ""
    description: str = ""
    include_context: bool = False


class Guardrail(_Strict):
    name: str
    output_schema: dict[str, Any]
    policy: Literal["reject", "repair", "warn"] = "reject"
    max_repairs: int = Field(1, ge=0, le=5)

    @field_validator("output_schema")
    @classmethod
    def _schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"not a valid JSON schema: {exc.message}") from None
        return schema


class Confirmation(_Strict):
    require_confirmation: tuple[str, ...] = ()
    """Tool names or patterns that always ask before running."""
    prompt_template: str | None = None
    timeout: float | None = Field(None, gt=0)
    """Seconds before an unanswered confirmation expires (counts as denied)."""


class AgentSpec(_Strict):
    """The front matter of an agent file (the body becomes :attr:`prompt`)."""

    kind: Literal["agent"] = "agent"
    name: str
    title: str = ""
    description: str = ""
    model: str | None = None
    scope: str = "project"
    version: str = "1"
    runner: Literal["chat", "react", "plan"] = "react"
    context_mode: Literal["isolated", "shared"] = Field("isolated", alias="contextMode")
    tools: ToolsPolicy = Field(default_factory=ToolsPolicy)
    mcp: McpPolicy = Field(default_factory=McpPolicy)
    triggers: Triggers = Field(default_factory=Triggers)
    handoffs: tuple[Handoff, ...] = ()
    guardrails: tuple[Guardrail, ...] = ()
    confirmation: Confirmation = Field(default_factory=Confirmation)
    prompt: str = Field("", exclude=True)
    source: str = Field("", exclude=True)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if len(name) > MAX_NAME:
            raise ValueError(f"at most {MAX_NAME} characters (transfer_to_<name> must stay a valid function name)")
        if not NAME.match(name):
            raise ValueError("use kebab-case: lower-case letters, digits and single hyphens, starting with a letter")
        return name

    @model_validator(mode="before")
    @classmethod
    def _snake_case_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "context_mode" in data and "contextMode" not in data:
            data = {**data, "contextMode": data["context_mode"]}
            del data["context_mode"]
        return data


def agent_json_schema() -> dict[str, Any]:
    """The JSON schema of the front matter (``bot agents schema``), for editors."""
    schema = AgentSpec.model_json_schema(by_alias=True)
    schema["properties"].pop("prompt", None)
    schema["properties"].pop("source", None)
    schema["title"] = "Agent file front matter"
    return schema


@dataclass(frozen=True)
class SpecError:
    """A problem in one agent file."""

    file: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.reason}"


@dataclass
class AgentRegistry:
    """Loaded specs by name (load order), the file each came from, and the files skipped."""

    specs: dict[str, AgentSpec] = field(default_factory=dict)
    errors: list[SpecError] = field(default_factory=list)

    def names(self) -> list[str]:
        return list(self.specs)


def parse_agent_file(path: Path, scope: str = "project") -> AgentSpec:
    """One file → an :class:`AgentSpec`; raises :class:`SpecFileError` naming field and reason."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecFileError(path, "file", f"cannot read: {exc}") from None
    match = _FRONT.match(text)
    if match is None:
        raise SpecFileError(path, "front matter", "missing: the file must start with a --- YAML block ---")
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise SpecFileError(path, "front matter", f"invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SpecFileError(path, "front matter", "must be a mapping of fields")
    body = match.group(2).strip()
    if not body:
        raise SpecFileError(path, "body", "empty: the Markdown body is the agent's system prompt")
    data.setdefault("scope", scope)
    try:
        spec = AgentSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "front matter"
        reason = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        raise SpecFileError(path, where, reason) from None
    return spec.model_copy(update={"prompt": body, "source": str(path)})


class SpecFileError(Exception):
    def __init__(self, path: Path, field: str, reason: str) -> None:
        super().__init__(f"{path}: {field}: {reason}")
        self.error = SpecError(str(path), field, reason)


def _is_pattern(name: str) -> bool:
    return bool(_GLOB.search(name))


def _load_dir(directory: Path, scope: str, registry: AgentRegistry, found: dict[str, AgentSpec]) -> None:
    if not directory.is_dir():
        return
    here: dict[str, Path] = {}
    for path in sorted(directory.glob("*.md")):
        try:
            spec = parse_agent_file(path, scope)
        except SpecFileError as exc:
            registry.errors.append(exc.error)
            continue
        if spec.name in here:
            registry.errors.append(
                SpecError(str(path), "name", f"{spec.name!r} is already defined in {here[spec.name]}")
            )
            continue
        here[spec.name] = path
        found.pop(spec.name, None)  # an override moves to where it was defined last
        found[spec.name] = spec


def load_agents(
    builtin_dir: Path | None,
    user_dir: Path | None,
    project_dirs: Iterable[Path] = (),
    *,
    known_tools: set[str] | None = None,
    known_mcp_servers: set[str] | None = None,
) -> AgentRegistry:
    """Load every agent file; later directories override earlier ones by name.

    With ``known_tools`` / ``known_mcp_servers`` also check that plainly named
    tools and servers exist (patterns are not checked).
    """
    registry = AgentRegistry()
    found: dict[str, AgentSpec] = {}
    for directory, scope in [(builtin_dir, "builtin"), (user_dir, "user"), *((d, "project") for d in project_dirs)]:
        if directory is not None:
            _load_dir(directory, scope, registry, found)
    for name, spec in list(found.items()):
        problems = check_references(spec, set(found), known_tools, known_mcp_servers)
        if problems:
            registry.errors.extend(problems)
            del found[name]
    registry.specs = found
    return registry


def check_references(
    spec: AgentSpec,
    agents: set[str],
    known_tools: set[str] | None = None,
    known_mcp_servers: set[str] | None = None,
) -> list[SpecError]:
    """Handoff targets, and (when known) tool names and MCP servers, that do not exist."""
    errors = []
    for i, handoff in enumerate(spec.handoffs):
        if handoff.to not in agents:
            errors.append(SpecError(spec.source, f"handoffs.{i}.to", f"unknown agent {handoff.to!r}"))
        elif handoff.to == spec.name:
            errors.append(SpecError(spec.source, f"handoffs.{i}.to", "an agent cannot hand off to itself"))
    if known_tools is not None:
        lists: Sequence[tuple[str, Sequence[str]]] = (
            ("tools.allow", spec.tools.allow),
            ("tools.deny", spec.tools.deny),
            ("confirmation.require_confirmation", spec.confirmation.require_confirmation),
        )
        for where, names in lists:
            for name in names:
                if not _is_pattern(name) and not name.startswith("mcp.") and name not in known_tools:
                    errors.append(SpecError(spec.source, where, f"unknown tool {name!r}"))
    if known_mcp_servers is not None:
        for server in spec.mcp.servers:
            if server not in known_mcp_servers:
                errors.append(SpecError(spec.source, "mcp.servers", f"unknown MCP server {server!r}"))
    return errors
