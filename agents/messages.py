"""The conversation history shared by every model client and runner.

Messages are plain pydantic models so a run's history serialises to JSON for
checkpoints and the store without an adapter per provider.  Provider metadata
that an API requires back on the next request (for example Gemini's thought
signatures) is kept opaque in ``provider_meta``.
"""

from __future__ import annotations

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
        if cls is Message and type(text) is str and (media == () or all_of(media, Media)):
            values = {
                "role": "user",
                "text": text,
                "tool_calls": (),
                "tool_results": (),
                "agent": None,
                "provider_meta": None,
                "media": media,
            }
            return typed(Message, values, {"role", "text", "media"})
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
_slots = BaseModel.__dict__
_set_fields, _set_extra, _set_private = (
    _slots[name].__set__ for name in ("__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
)
"""The slots' own setters: 0.05 µs less each than ``object.__setattr__``."""
_SIZES: dict[type[BaseModel], int] = {}


def _size(cls: type[BaseModel]) -> int:
    """How many fields ``cls`` has; refused for a model whose validation could change a value (or refuse it)."""
    decorators = cls.__pydantic_decorators__
    if (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
        or cls.__pydantic_post_init__
        or cls.__private_attributes__
        or any(cls.model_config.get(k) for k in ("extra", "strict", "str_strip_whitespace", "str_to_lower"))
    ):
        raise TypeError(f"{cls.__name__} validates more than types: it is built only by validation")
    for name, field in cls.model_fields.items():
        if field.metadata or field.alias is not None:
            raise TypeError(f"{cls.__name__}.{name} has constraints: it is built only by validation")
    _SIZES[cls] = len(cls.model_fields)
    return _SIZES[cls]


def typed(cls: type[M], values: dict[str, Any], given: set[str]) -> M:
    """The object validation makes of ``cls(**{name: values[name] for name in given})``, without validating
    again values that are already of their fields' validated types (the caller checks them: exact types, tuples
    of exact model types, copies of dicts).

    ``values`` holds every field in the model's order (defaults written out, a ``default_factory``'s value made);
    ``given`` are the fields the call names (``model_fields_set``).  0.7 µs against 1.25 for validating a
    three-field :class:`Message` (same-process A/B); ``tests/agents/test_typed.py`` checks that each use builds
    the object validation makes (equal, fields set, ``__dict__`` order, JSON).  Only for models whose validation
    checks types alone: no validators, constraints, aliases, private attributes or extra fields.
    """
    if len(values) != (_SIZES.get(cls) or _size(cls)):
        raise TypeError(f"{cls.__name__}: {sorted(values)} are not its fields")
    obj = object.__new__(cls)
    _set(obj, "__dict__", values)
    _set_fields(obj, given)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


def all_of(items: Any, kind: type) -> bool:
    """``items`` is a tuple of exactly ``kind`` instances (what a ``tuple[kind, ...]`` field holds once validated)."""
    return type(items) is tuple and all(type(item) is kind for item in items)
