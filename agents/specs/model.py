"""The front matter of an agent file as a frozen pydantic model, and its JSON schema.

Unknown fields are errors at every level, so a typo (``trigers:``) fails loudly
instead of silently doing nothing.  The field docstrings become the schema's
descriptions, which editors show next to the fields.
"""

from __future__ import annotations

import difflib
import re
from functools import cached_property
from typing import Annotated, Any, Literal

import jsonschema
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from agents.conditions import ConditionError, as_condition, parse_condition
from agents.models.base import Generation
from agents.specs.graph import GraphEdge, GraphSpec
from agents.specs.paths import first_problem
from agents.specs.patterns import pattern_problem

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
# Gemini allows 64 characters in a function name; "transfer_to_" takes 12 of them.
MAX_NAME_LENGTH = 48
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

Scope = Literal["builtin", "user", "project"]
ContextMode = Literal["isolated", "shared"]

RUNNER_NAMES: dict[str, None] = dict.fromkeys(["chat", "react", "plan", "graph"])
"""The runners an agent file may name; the gateway's runner registry adds each runner it registers."""
GuardrailPolicy = Literal["reject", "repair", "warn"]


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an agent, or None when it can."""
    if len(name) > MAX_NAME_LENGTH:
        return f"at most {MAX_NAME_LENGTH} characters, so transfer_to_<name> stays a valid function name"
    if not NAME_PATTERN.match(name):
        return "use kebab-case: lower-case letters and digits, words joined by single hyphens, starting with a letter"
    return None


def _agent_name(name: str) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


def _regex(pattern: str) -> str:
    problem = pattern_problem(pattern)
    if problem is not None:
        raise ValueError(problem)
    return pattern


def _number_to_str(value: Any) -> Any:
    # YAML reads `version: 1.0` as a float; a version is a label, not a number.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


AgentName = Annotated[
    str,
    AfterValidator(_agent_name),
    WithJsonSchema({"type": "string", "pattern": NAME_PATTERN.pattern, "maxLength": MAX_NAME_LENGTH}),
]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Regex = Annotated[str, AfterValidator(_regex), WithJsonSchema({"type": "string", "format": "regex"})]
Version = Annotated[str, BeforeValidator(_number_to_str), WithJsonSchema({"type": ["string", "number"]})]


def _comma_list(value: Any) -> Any:
    # `keywords: "fix, patch"` is what people write for a list in YAML: read it as one.
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True)


class ToolsPolicy(_Strict):
    """Which tools the agent is offered: names or glob patterns such as ``mcp.github.*``."""

    allow: tuple[Text, ...] = ()
    """Tools offered to the agent. Empty: every tool of risk low or medium (high-risk tools must be named)."""
    deny: tuple[Text, ...] = ()
    """Tools never offered; deny wins over allow."""


class McpPolicy(_Strict):
    """The MCP servers whose tools the agent may use."""

    servers: tuple[Text, ...] = ()
    """Names of servers configured under the gateway's ``mcp.servers``; none by default."""


class Triggers(_Strict):
    """What the rule router scores: (10 per keyword + 20 per pattern) × priority / 100."""

    keywords: Annotated[tuple[Text, ...], BeforeValidator(_comma_list)] = ()
    """Case-insensitive words or phrases; Latin ones match whole words and their forms ("crashes", "errors" for
    crash, error), CJK ones match anywhere. A list, or one string of comma-separated words."""
    patterns: Annotated[tuple[Regex, ...], BeforeValidator(_comma_list)] = ()
    """Python regular expressions, matched case-insensitively anywhere in the message.

    Checked at load: a pattern that could take exponential or quadratic time on a long
    message is refused (bound its repeats: ``[^,]{1,80}``, ``.{0,200}``)."""
    priority: int = Field(50, ge=0, le=100)
    """Which agent wins when two are about equally likely (the higher); with a model, hybrid also takes a trigger
    score (10 a keyword + 20 a pattern, times priority/100) of ``rule.confidence_threshold`` without asking it."""

    @cached_property
    def compiled(self) -> tuple[re.Pattern[str], ...]:
        """The patterns compiled the way the router uses them."""
        return tuple(re.compile(p, re.IGNORECASE) for p in self.patterns)


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        raise ValueError(f"not a valid JSON schema{f' at {where}' if where else ''}: {exc.message}") from None
    return schema


JsonSchema = Annotated[dict[str, Any], AfterValidator(_json_schema)]


class HandoffPayload(_Strict):
    """The data a handoff carries: the model fills it in, it is validated before the handoff runs."""

    schema_: JsonSchema = Field(alias="schema")
    """A JSON schema (draft 2020-12) of an object; its properties are names ``when`` may test."""

    @field_validator("schema_")
    @classmethod
    def _an_object(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("type") != "object":
            raise ValueError("the payload schema must describe an object (type: object)")
        return schema


class Handoff(_Strict):
    """A ``transfer_to_<to>`` tool the agent may call to pass the conversation on."""

    to: AgentName
    """The agent that takes over."""
    when: str = ""
    """When to hand off. A condition (``task.status == 'need-review'``, ``fix.applied and not review.done``) is
    checked against the payload before the handoff runs, and a call it refuses gets an error naming it; other
    text is advice in the tool's description."""
    description: str = ""
    """What the target does, for the model; the target's own description when empty."""
    include_context: bool = False
    """Give the target this agent's conversation, not only the handoff summary."""
    payload: HandoffPayload | None = None
    """``{schema: …}``: the data the handoff must carry (the call is refused with the errors when it does not
    fit; the target is shown it)."""

    @model_validator(mode="after")
    def _condition_names(self) -> Handoff:
        condition = as_condition(self.when)
        if condition is None:
            if re.search(r"[=<>]", self.when):  # meant as a condition: say why it is not one
                try:
                    parse_condition(self.when)
                except ConditionError as exc:
                    raise ValueError(f"when: {exc}") from None
            return self
        if self.payload is None:
            raise ValueError(
                f"when: `{condition}` is a condition, and it reads the payload: give the handoff a "
                "payload: {schema: …} (or write the when as advice, without operators)"
            )
        properties = self.payload.schema_.get("properties") or {}
        known = set(properties)
        for name in sorted(condition.names() - known):
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            where = f"the payload's properties ({', '.join(sorted(known))})" if known else "the payload's properties"
            raise ValueError(f"when: `{condition}` reads {name!r}, which is not among {where}{hint}")
        problem = first_problem(condition.paths(), properties, "the payload's")
        if problem is not None:
            raise ValueError(f"when: `{condition}` {problem}")
        return self


class Guardrail(_Strict):
    """A check of the agent's final answer against a JSON schema."""

    name: Text
    output_schema: dict[str, Any]
    """A JSON schema (draft 2020-12) the answer, parsed as JSON, must satisfy."""
    policy: GuardrailPolicy = "reject"
    """reject: replace the answer with an error notice; repair: re-ask the model with the errors
    (at most max_repairs times, then reject); warn: send the answer and record the violation."""
    max_repairs: int = Field(1, ge=0, le=5)

    @field_validator("output_schema")
    @classmethod
    def _schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        return _json_schema(schema)


class Confirmation(_Strict):
    """Tools this agent must ask the user about before running them (besides the tools' own flags)."""

    require_confirmation: tuple[Text, ...] = ()
    """Tool names or glob patterns."""
    prompt_template: str | None = None
    """The question shown above the calls instead of "🔐 Confirm before I run:" (``{agent}`` and ``{tools}`` are
    filled in); the calls themselves always follow in full."""
    timeout: float | None = Field(None, gt=0)
    """Seconds before an unanswered confirmation expires (counts as denied); the gateway default when empty."""


class MemoryPolicy(_Strict):
    """What the agent remembers: per chat (session keys) and per person (long-term memory)."""

    session: tuple[Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")], ...] = ()
    """Session memory keys (e.g. ``current_task``): values the agent keeps per chat with the
    ``update_session`` tool; shown to it before each turn and in ``/trace``."""
    long_term: bool = True
    """Recall what the gateway remembers about the person, and offer ``remember``/``recall``/``forget``
    (where memory is on: direct chats by default)."""

    @field_validator("session")
    @classmethod
    def _distinct(cls, keys: tuple[str, ...]) -> tuple[str, ...]:
        for i, key in enumerate(keys):
            if key in keys[:i]:
                raise ValueError(f"the key {key!r} is listed twice")
        return keys


class TracingPolicy(_Strict):
    """What of this agent's work is traced, within the gateway's ``tracing`` (which decides first)."""

    enabled: bool = True
    """false: none of its events are kept (errors still are)."""
    sample_rate: float = Field(1.0, ge=0, le=1)
    """The share of requests whose events of this agent are kept (each request whole or not at all)."""
    events: tuple[
        Literal["llm_call", "tool_call", "handoff", "guardrail", "interrupt", "memory", "summary", "graph"], ...
    ] = ()
    """Only these kinds of its events are kept (empty: all)."""


class AgentSpec(_Strict):
    """An agent defined in a Markdown file: the front matter's fields, the body as :attr:`prompt`.

    Files load from three layers (see :func:`agents.spec.load_agents`); ``scope`` and
    ``source`` record where the winning file was found.
    """

    kind: Literal["agent"] = "agent"
    name: AgentName
    """Unique kebab-case name: ``@name`` in chat, ``transfer_to_<name>`` for handoffs."""
    title: str = ""
    """A human-readable name for lists and menus."""
    description: str = ""
    """What the agent is for: the router compares every message with it by meaning, in any language, and the
    LLM router reads it."""
    examples: Annotated[tuple[Text, ...], BeforeValidator(lambda v: (v,) if isinstance(v, str) else v)] = ()
    """Sample requests this agent should get, in your users' words (5-10 varied ones route best): messages
    close to one of them in meaning, in any language, come here."""
    model: str | None = None
    """A model name overriding the gateway's ``model.name`` for this agent."""
    scope: Scope = "project"
    """The layer the file was loaded from: builtin < user < project. Set by the loader; a value
    written in the file is accepted for readers but overruled by where the file actually is."""
    version: Version = "1"
    """The file's own version label, for the operator."""
    runner: str = Field("react", json_schema_extra=lambda schema: schema.update(enum=list(RUNNER_NAMES)))
    """The runner that executes the agent, by its name in the gateway's runner registry: chat (one model
    call), react (model and tools), plan (plan, approve, execute, replan). An unknown name makes
    the file invalid (reported, not loaded)."""

    @field_validator("runner")
    @classmethod
    def _known_runner(cls, value: str) -> str:
        if value not in RUNNER_NAMES:
            names = [repr(name) for name in RUNNER_NAMES]
            close = difflib.get_close_matches(value, list(RUNNER_NAMES), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
            raise ValueError(f"Input should be {known}{hint}")
        return value

    context_mode: ContextMode = Field("isolated", alias="contextMode")
    """isolated: this agent's earlier turns in the chat + the handoff context + the message;
    shared: the chat's recent history. ``context_mode`` is accepted too."""
    tools: ToolsPolicy = ToolsPolicy()
    mcp: McpPolicy = McpPolicy()
    triggers: Triggers = Triggers()
    handoffs: tuple[Handoff, ...] = ()
    guardrails: tuple[Guardrail, ...] = ()
    confirmation: Confirmation = Confirmation()
    generation: Generation | None = None
    """temperature, max_output_tokens, thinking_budget (Gemini 2.5), thinking_level (Gemini 3) for this agent."""
    memory: MemoryPolicy = MemoryPolicy()
    tracing: TracingPolicy = TracingPolicy()
    graph: GraphSpec | None = None
    """``runner: graph``: the nodes (agents) it runs one after another, its edges and their conditions."""
    media: tuple[Literal["image", "audio", "document"], ...] = ("image", "audio", "document")
    """The files this agent takes with a message (photos and images, voice notes and audio, PDFs and text
    files); a message carrying another kind is routed to an agent that takes it. ``[]``: text only."""
    prompt: SkipJsonSchema[str] = Field("", exclude=True)
    """The system prompt: the file's Markdown body."""
    source: SkipJsonSchema[str] = Field("", exclude=True)
    """The file the spec came from."""

    @model_validator(mode="before")
    @classmethod
    def _snake_case_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "context_mode" in data:
            if "contextMode" in data:
                raise ValueError("give contextMode or context_mode, not both")
            data = {("contextMode" if k == "context_mode" else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _graph_runner(self) -> AgentSpec:
        if self.runner == "graph" and self.graph is None:
            raise ValueError("runner: graph needs a graph: block (entry, nodes, edges)")
        if self.graph is not None and self.runner != "graph":
            raise ValueError(f"graph: is run by runner: graph, not {self.runner}")
        if self.graph is not None and self.name in self.graph.nodes.values():
            raise ValueError("graph.nodes: a graph cannot run itself as a node")
        return self

    @field_validator("handoffs")
    @classmethod
    def _distinct_targets(cls, handoffs: tuple[Handoff, ...], info: ValidationInfo) -> tuple[Handoff, ...]:
        seen: set[str] = set()
        for handoff in handoffs:
            if handoff.to == info.data.get("name"):
                raise ValueError(f"{handoff.to!r} is this agent: it cannot hand off to itself")
            if handoff.to in seen:
                raise ValueError(f"{handoff.to!r} is listed twice")
            seen.add(handoff.to)
        return handoffs

    @field_validator("guardrails")
    @classmethod
    def _distinct_guardrails(cls, guardrails: tuple[Guardrail, ...]) -> tuple[Guardrail, ...]:
        names = [g.name for g in guardrails]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ValueError(f"the name {name!r} is used twice")
        return guardrails

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON schema of the front matter, for editors (``bot agents schema``)."""
        schema = cls.model_json_schema(by_alias=True)
        properties = schema["properties"]
        properties["context_mode"] = {**properties["contextMode"], "description": "Same as contextMode."}
        return {
            "$schema": JSON_SCHEMA_DIALECT,
            **schema,
            "title": "Agent file front matter",
            "description": "The YAML between the --- lines of an agent file; the Markdown body is the system prompt.",
            "not": {"required": ["contextMode", "context_mode"]},
        }


def agent_json_schema() -> dict[str, Any]:
    """The JSON schema of an agent file's front matter."""
    return AgentSpec.json_schema()


# Field names per section, for "did you mean …?" on unknown fields.
SECTIONS: dict[str, type[BaseModel]] = {
    "": AgentSpec,
    "tools": ToolsPolicy,
    "mcp": McpPolicy,
    "triggers": Triggers,
    "handoffs": Handoff,
    "payload": HandoffPayload,
    "graph": GraphSpec,
    "tracing": TracingPolicy,
    "edges": GraphEdge,
    "guardrails": Guardrail,
    "confirmation": Confirmation,
    "memory": MemoryPolicy,
}
