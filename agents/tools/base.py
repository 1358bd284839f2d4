"""Tools: a name, a description, JSON-schema parameters, a risk level.

A tool's parameters come from a typed signature (or a pydantic model) so the
schema the model sees and the validation of its arguments cannot drift apart.
Errors a tool raises become tool results for the model, not crashes.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_type_hints

import jsonschema
from pydantic import BaseModel, ConfigDict, create_model

from agents.models.base import ToolDeclaration

Risk = Literal["safe", "low", "medium", "high"]
RISK_ORDER: dict[str, int] = {"safe": 0, "low": 1, "medium": 2, "high": 3}


class ToolError(Exception):
    """A tool failed in a way the model should be told about (the message is its result)."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool may know about the call: who asked, where."""

    chat_key: str = ""
    user_id: str = ""
    call_id: str = ""
    agent: str = ""
    """The agent that called it."""
    run_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


ToolFunc = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """One callable tool."""

    name: str
    description: str
    parameters: dict[str, Any]
    func: ToolFunc
    risk: Risk = "low"
    needs_approval: bool = False
    """The tool's own flag: every call waits for a person's yes (:mod:`agents.approval`)."""
    toolset: str = "builtin"
    wants_context: bool = False
    _validator: Any = field(default=None, init=False, repr=False, compare=False)
    _declaration: ToolDeclaration | None = field(default=None, init=False, repr=False, compare=False)

    def declaration(self, name: str | None = None) -> ToolDeclaration:
        if name is not None and name != self.name:
            return ToolDeclaration(name=name, description=self.description, parameters=self.parameters)
        declared = self._declaration
        if declared is None:  # built once: an agent's loop declares its tools on every model call
            declared = ToolDeclaration(name=self.name, description=self.description, parameters=self.parameters)
            object.__setattr__(self, "_declaration", declared)
        return declared

    def validate(self, args: dict[str, Any]) -> None:
        """Raise :class:`ToolError` naming the problem when ``args`` do not fit the schema."""
        validator = self._validator
        if validator is None:
            # Built once per tool: jsonschema.validate() would re-check the schema on every call.
            validator = (
                jsonschema.validators.validator_for(self.parameters)(self.parameters),
                plainly_valid(self.parameters),
            )
            object.__setattr__(self, "_validator", validator)
        full, quick = validator
        if quick is not None and quick(args):
            return
        try:
            full.validate(args)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
            raise ToolError(f"invalid arguments for {self.name}: {where}: {exc.message}") from None

    async def invoke(self, args: dict[str, Any], ctx: ToolContext | None = None) -> Any:
        self.validate(args)
        if self.wants_context:
            return await self.func(ctx or ToolContext(), **args)
        return await self.func(**args)


_PLAIN_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}
_PLAIN_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "description", "title"})
_PLAIN_PROPERTY_KEYS = frozenset({"type", "description", "title", "default"})


def plainly_valid(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """A quick test that says True only for arguments the schema certainly accepts.

    For the shape most tools have: an object whose properties are strings, numbers,
    booleans or null (``required``, ``additionalProperties: false`` honoured).  Other
    schemas get None; a False answer means "ask jsonschema" (it explains the error,
    and accepts what this test is too strict for, like 1.0 as an integer).  A
    jsonschema pass costs many times more per call (see bench/README.md).
    """
    if schema.get("type") != "object" or not set(schema) <= _PLAIN_KEYS:
        return None
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        if not isinstance(kind, str) or kind not in _PLAIN_TYPES or not set(prop) <= _PLAIN_PROPERTY_KEYS:
            return None
        checks[name] = _PLAIN_TYPES[kind]
    required = frozenset(schema.get("required") or ())
    closed = schema.get("additionalProperties", True) is False
    if not isinstance(schema.get("additionalProperties", True), bool):
        return None

    def quick(args: Any) -> bool:
        if type(args) is not dict or not required <= args.keys():
            return False
        for key, value in args.items():
            check = checks.get(key)
            if check is None:
                if closed:
                    return False
            elif not check(value):
                return False
        return True

    return quick


def _schema_from_signature(func: Callable[..., Any], skip_first: bool) -> dict[str, Any]:
    hints = get_type_hints(func)
    params = list(inspect.signature(func).parameters.values())
    if skip_first:
        params = params[1:]
    fields: dict[str, Any] = {}
    for p in params:
        annotation = hints.get(p.name, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (annotation, default)
    model = create_model(f"{func.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return _clean_schema(model.model_json_schema())


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    risk: Risk = "low",
    needs_approval: bool = False,
    args_model: type[BaseModel] | None = None,
    confirm: bool = False,
) -> Callable[[ToolFunc], Tool]:
    """Make a :class:`Tool` from an async function; its docstring is the description.

    A first parameter annotated ``ToolContext`` receives the call's context.  ``needs_approval``: every call
    waits for a person's yes (``confirm`` is its older name, still accepted).
    """

    def wrap(func: ToolFunc) -> Tool:
        params = list(inspect.signature(func).parameters.values())
        wants_ctx = bool(params) and get_type_hints(func).get(params[0].name) is ToolContext
        if args_model is not None:
            schema = _clean_schema(args_model.model_json_schema())
        else:
            schema = _schema_from_signature(func, skip_first=wants_ctx)
        return Tool(
            name=name or func.__name__,
            description=description or inspect.getdoc(func) or "",
            parameters=schema,
            func=func,
            risk=risk,
            needs_approval=needs_approval or confirm,
            wants_context=wants_ctx,
        )

    return wrap


class Toolset(Protocol):
    """A group of tools (built-in, gateway-owned, an MCP server)."""

    name: str

    async def list_tools(self) -> Sequence[Tool]: ...


class StaticToolset:
    """A fixed list of tools."""

    def __init__(self, name: str, tools: Iterable[Tool]) -> None:
        self.name = name
        self.tools = [t if t.toolset == name else _retag(t, name) for t in tools]

    async def list_tools(self) -> Sequence[Tool]:
        return self.tools


def _retag(t: Tool, toolset: str) -> Tool:
    from dataclasses import replace

    return replace(t, toolset=toolset)


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether ``name`` matches any name or glob pattern (``mcp.github.*``)."""
    return any(p == name or fnmatch.fnmatchcase(name, p) for p in patterns)


def select_tools(tools: Iterable[Tool], allow: Sequence[str] | None, deny: Sequence[str] = ()) -> list[Tool]:
    """The tools an agent may see: deny wins; without an allow list, every tool of risk ≤ medium."""
    chosen = []
    for t in tools:
        if matches(t.name, deny):
            continue
        if allow is None or len(allow) == 0:
            if RISK_ORDER[t.risk] > RISK_ORDER["medium"]:
                continue
        elif not matches(t.name, allow):
            continue
        chosen.append(t)
    return chosen
