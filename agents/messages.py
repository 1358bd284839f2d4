"""The conversation history shared by every model client and runner.

Messages are plain pydantic models so a run's history serialises to JSON for
checkpoints and the store without an adapter per provider.  Provider metadata
that an API requires back on the next request (for example Gemini's thought
signatures) is kept opaque in ``provider_meta``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Role = Literal["user", "assistant", "tool"]


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
