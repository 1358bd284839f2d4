"""The conversation history shared by every model client and runner.

Messages are plain pydantic models so a run's history serialises to JSON for
checkpoints and the store without an adapter per provider.  Provider metadata
that an API requires back on the next request (for example Gemini's thought
signatures) is kept opaque in ``provider_meta``.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

Role = Literal["user", "assistant", "tool"]

M = TypeVar("M", bound=BaseModel)


MAX_ARGS_DEPTH = 32
"""Tool arguments nested deeper than this are refused (nothing real needs it; storing them would fail)."""


def args_problem(args: Any) -> str | None:
    """Why a model's tool arguments cannot be used as they are, or None."""
    if not isinstance(args, dict):
        return f"the arguments must be a JSON object, not {type(args).__name__}"
    stack: list[tuple[Any, int]] = [(args, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_ARGS_DEPTH:
            return f"the arguments are nested more than {MAX_ARGS_DEPTH} levels deep"
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list | tuple):
            stack.extend((v, depth + 1) for v in value)
    return None


class ToolCall(BaseModel):
    """A function call requested by the model.

    Arguments that are not an object, or absurdly deep, are replaced by ``{}`` and the
    reason is kept in ``invalid``: the call then gets a tool error the model can read,
    and nothing downstream (validation, storage, a confirmation prompt) meets them.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    provider_meta: dict[str, Any] | None = None
    invalid: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _usable_args(cls, data: Any) -> Any:
        if isinstance(data, dict) and "args" in data and data.get("invalid") is None:
            problem = args_problem(data["args"])
            if problem is not None:
                return {**data, "args": {}, "invalid": problem}
        return data


class ToolResult(BaseModel):
    """The single result that answers one :class:`ToolCall`."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    content: Any
    is_error: bool = False


MediaKind = Literal["image", "audio", "document"]

MEDIA_SIZE = 2_000
"""What one media item counts for in the context budget (characters)."""


class Media(BaseModel):
    """A file that came with a user's message: a reference, never the bytes.

    ``path`` is the stored file (the model client reads it when it builds a request); once the file is
    dropped after its keep time, the model is told it is gone.  ``transcript`` is a voice note's words
    (then the text of the message carries them and the audio is not sent again).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    kind: MediaKind
    mime_type: str
    size: int
    path: str
    name: str | None = None
    transcript: str | None = None

    def label(self) -> str:
        """How a person would name it: "photo", "voice note", "report.pdf"."""
        if self.kind == "image":
            return f"image {self.name}" if self.name else "photo"
        if self.kind == "audio":
            return f"audio {self.name}" if self.name else "voice note"
        return self.name or "document"

    def gone(self) -> str:
        """What the model is told about a file deleted after its keep time."""
        return f"({self.label()} sent earlier: no longer kept)"


class Message(BaseModel):
    """One turn of a conversation.

    ``user`` messages carry text; ``assistant`` messages text and/or tool calls;
    ``tool`` messages carry the results answering the previous assistant turn.
    """

    model_config = ConfigDict(frozen=True)

    role: Role
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    agent: str | None = None
    provider_meta: dict[str, Any] | None = None
    media: tuple[Media, ...] = ()
    """Files the user sent with this message (``user`` messages only)."""

    @classmethod
    def user(cls, text: str, media: tuple[Media, ...] = ()) -> Message:
        if cls is Message and type(text) is str and all_of(media, Media):
            return typed(Message, {"role": "user", "text": text, "media": media})
        return cls(role="user", text=text, media=media)

    @classmethod
    def assistant(cls, text: str, *, agent: str | None = None) -> Message:
        return cls(role="assistant", text=text, agent=agent)

    @classmethod
    def results(cls, results: list[ToolResult] | tuple[ToolResult, ...]) -> Message:
        return cls(role="tool", tool_results=tuple(results))

    def size(self) -> int:
        """Approximate size in characters, used for the context budget."""
        n = len(self.text or "") + MEDIA_SIZE * len(self.media)
        for call in self.tool_calls:
            n += len(call.name) + len(str(call.args))
        for result in self.tool_results:
            n += len(str(result.content))
        return n


def unanswered_calls(messages: list[Message] | tuple[Message, ...]) -> list[ToolCall]:
    """Tool calls in ``messages`` that have no result yet, in order."""
    answered = {r.call_id for m in messages for r in m.tool_results}
    return [c for m in messages for c in m.tool_calls if c.id not in answered]


def fit_context(messages: list[Message], max_chars: int) -> list[Message]:
    """The newest messages that fit in ``max_chars``, starting at a user turn.

    Cutting in the middle of a tool exchange would leave a result without its
    call (which providers reject), so the window always starts at a user message.
    The newest message is kept even when it alone exceeds the budget.
    """
    total = 0
    start = len(messages)
    for i in range(len(messages) - 1, -1, -1):
        total += messages[i].size()
        if total > max_chars and start < len(messages):
            break
        start = i
    while start < len(messages) and messages[start].role != "user":
        start += 1
    return messages[start:]


def recent_media(messages: list[Message], keep: int) -> list[Message]:
    """``messages`` with the files of all but the ``keep`` newest file-bearing messages left out (their text
    stays): a model is not sent every photo of a long chat again."""
    seen = 0
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i].media:
            seen += 1
            if seen > keep:
                names = ", ".join(m.label() for m in out[i].media)
                text = f"{out[i].text or ''} ({names} sent here, not shown again)".strip()
                out[i] = out[i].model_copy(update={"media": (), "text": text})
    return out


# Building from values that are already typed ------------------------------------------------------------------

_set = object.__setattr__
_PLAIN = (str, int, float, bool, type(None))


@cache
def _template(cls: type[BaseModel]) -> tuple[dict[str, Any], frozenset[str]]:
    """Every field of ``cls`` in order with its default, and the fields a caller must give (required ones and
    those made by a ``default_factory``); refused for a model whose validation could change a value."""
    decorators = cls.__pydantic_decorators__
    if (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
        or cls.__pydantic_post_init__
        or cls.__private_attributes__
        or cls.model_config.get("extra") is not None
        or cls.model_config.get("strict") is not None
        or cls.model_config.get("str_strip_whitespace")
    ):
        raise TypeError(f"{cls.__name__} validates more than types: it is built only by validation")
    template: dict[str, Any] = {}
    needs: set[str] = set()
    for name, field in cls.model_fields.items():
        if field.metadata or field.alias is not None:
            raise TypeError(f"{cls.__name__}.{name} has constraints: it is built only by validation")
        if field.is_required() or field.default_factory is not None:
            needs.add(name)
            template[name] = None
        elif isinstance(field.default, _PLAIN) or field.default == ():
            template[name] = field.default
        else:
            raise TypeError(f"{cls.__name__}.{name} has a mutable default: it is built only by validation")
    return template, frozenset(needs)


def typed(cls: type[M], given: dict[str, Any], **made: Any) -> M:
    """``cls(**given)`` without validating again values that already are of their fields' validated types
    (the caller checks them: exact types, tuples of exact model types, dicts that are copies); ``made`` holds
    what ``default_factory`` would make (not counted as set, as in validation).

    The same object validation makes (``__dict__`` in field order, fields set, equal and the same JSON;
    ``tests/agents/test_typed.py`` checks each use) for 0.6-0.8 µs instead of 1.4-2.2 µs.  Only for models
    whose validation checks types alone: no validators, constraints, aliases, private attributes or extra.
    """
    template, needs = _template(cls)
    values = template.copy()
    values.update(given)
    if made:
        values.update(made)
    if len(values) != len(template) or not needs.issubset(given.keys() | made.keys() if made else given.keys()):
        raise TypeError(f"{cls.__name__}: fields {sorted(given)} and {sorted(made)} do not fit its fields")
    obj = object.__new__(cls)
    _set(obj, "__dict__", values)
    _set(obj, "__pydantic_fields_set__", set(given))
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


def all_of(items: Any, kind: type) -> bool:
    """``items`` is a tuple of exactly ``kind`` instances (what a ``tuple[kind, ...]`` field holds once validated)."""
    return type(items) is tuple and (not items or all(type(item) is kind for item in items))
