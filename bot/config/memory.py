"""The ``memory`` section: what the bot remembers about people, and how long conversations are summarised."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SummarySection(_Section):
    """Summarised history: turns that leave the context window are folded into a running summary per chat."""

    enabled: bool = True
    model: str = ""
    """``provider/name`` of a cheap model for summaries; '' = the main model; ``extractive`` = no model (the
    sentences that state facts are kept; what the offline model always does)."""
    max_chars: int = Field(2000, ge=200, le=20000)
    """The running summary is kept under this length."""


class EmbeddingsSection(_Section):
    """Optional semantic recall next to full-text search (needs a model provider that embeds)."""

    model: str = ""
    """``provider/name`` of an embedding model, e.g. ``gemini/gemini-embedding-001`` or
    ``openai/text-embedding-3-small``; '' = full-text search only."""
    timeout_s: float = Field(5.0, gt=0)
    """A slower embedding call is skipped (full-text results still count)."""


class MemorySection(_Section):
    enabled: bool = True
    """Long-term memory per person: the ``remember``, ``recall`` and ``forget`` tools, and what is recalled
    before each turn."""
    groups: bool = False
    """Memory in group chats too (an admin may turn it on or off per chat: ``/memory on|off``). Off by default:
    what the bot knows about one member would otherwise be shown to the whole group."""
    budget_tokens: int = Field(400, ge=0, le=20000)
    """Memories given to the model before each turn: the most relevant first, at most this many tokens."""
    max_items: int = Field(1000, ge=1)
    """Memories one person may have; ``remember`` refuses past it (forget some first)."""
    max_chars: int = Field(500, ge=20, le=5000)
    """The longest memory (longer ones are refused, not cut)."""
    link_code_minutes: float = Field(10, gt=0, le=1440)
    """How long a ``/memory link`` code is valid (used once)."""
    summary: SummarySection = Field(default_factory=SummarySection)
    embeddings: EmbeddingsSection = Field(default_factory=EmbeddingsSection)
