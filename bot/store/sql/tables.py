"""The schema, as SQLModel tables.  Every change adds an Alembic migration, and
tests/store/test_migrations_match_tables.py checks the two agree (on SQLite and PostgreSQL): text columns are
``TEXT``, timestamps naive UTC (``timestamp without time zone``), as the migrations create them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Index, Text, text
from sqlmodel import Field, SQLModel


class SessionMessage(SQLModel, table=True):
    """One message of a chat's history (user, assistant or tool turn), as JSON."""

    __tablename__ = "session_messages"

    id: int | None = Field(default=None, primary_key=True)
    chat_key: str = Field(index=True, max_length=255)
    role: str = Field(max_length=16)
    agent: str | None = Field(default=None, max_length=64)
    data: str = Field(sa_type=Text)
    created_at: datetime = Field(sa_type=DateTime)


class ChatSetting(SQLModel, table=True):
    """A per-chat setting (strategy override, pinned agent, tool grants)."""

    __tablename__ = "chat_settings"

    settings_key: str = Field(primary_key=True, max_length=255)
    name: str = Field(primary_key=True, max_length=128)
    value: str = Field(sa_type=Text)
    updated_at: datetime = Field(sa_type=DateTime)


class InboxEvent(SQLModel, table=True):
    """An inbound event, committed before the platform is told "received" (the durable intake).

    ``pending`` rows are accepted and not yet handled (recovery takes them up in ``seq``
    order); ``done`` rows remember the platform ids handled, for de-duplication, and are
    pruned beyond ``store.processed_ids_limit``.
    """

    __tablename__ = "inbox"

    seq: int | None = Field(default=None, primary_key=True)
    """Arrival order (per chat order on recovery)."""
    event_key: str = Field(max_length=255, unique=True)
    """``channel:platform id``: the de-duplication key."""
    chat_key: str = Field(max_length=255)
    kind: str = Field(max_length=16)
    """``message`` or ``action`` (empty for rows recorded only as handled)."""
    event: str = Field(sa_type=Text)
    """The event as JSON (empty for rows recorded only as handled)."""
    status: str = Field(max_length=16)
    """No index: marking an event handled then touches one row and one index (its key); recovery and
    retention read the table in ``seq`` order, at start and every few seconds."""
    received_at: datetime = Field(sa_type=DateTime)


class AuditEntry(SQLModel, table=True):
    """An admin change: who, when, which setting, old and new value (JSON)."""

    __tablename__ = "audit_log"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(sa_type=DateTime)
    actor: str = Field(max_length=255)
    scope: str = Field(max_length=255)
    name: str = Field(max_length=128)
    old: str | None = Field(default=None, sa_type=Text)
    new: str | None = Field(default=None, sa_type=Text)


class Run(SQLModel, table=True):
    """One agent run; its checkpoint is the versioned JSON needed to resume it."""

    __tablename__ = "runs"

    id: str = Field(primary_key=True, max_length=32)
    chat_key: str = Field(index=True, max_length=255)
    agent: str = Field(max_length=64)
    status: str = Field(index=True, max_length=16)
    correlation_id: str = Field(max_length=255)
    user_id: str = Field(max_length=255)
    reply_to: str | None = Field(default=None, max_length=255)
    history_cutoff: int = 0
    checkpoint: str | None = Field(default=None, sa_type=Text)
    direct: bool = Field(default=False, sa_column_kwargs={"server_default": text("false")})
    """A direct (one-to-one) chat: personal memory applies."""
    created_at: datetime = Field(sa_type=DateTime)
    updated_at: datetime = Field(sa_type=DateTime)


class Interrupt(SQLModel, table=True):
    """A pause waiting for a human; at most one ``pending`` per chat key."""

    __tablename__ = "interrupts"
    __table_args__ = (
        # The store's rule "at most one pending interrupt per chat key".
        Index(
            "ux_interrupts_one_pending",
            "chat_key",
            unique=True,
            sqlite_where=text("status = 'pending'"),
            postgresql_where=text("status = 'pending'"),
        ),
    )

    id: str = Field(primary_key=True, max_length=32)
    chat_key: str = Field(index=True, max_length=255)
    run_id: str = Field(max_length=32)
    kind: str = Field(max_length=32)
    prompt: str = Field(sa_type=Text)
    payload: str = Field(sa_type=Text)
    choices: str = Field(sa_type=Text)
    nonce: str = Field(max_length=16)
    requester: str = Field(max_length=255)
    status: str = Field(max_length=16)
    resolution: str | None = Field(default=None, sa_type=Text)
    resolved_by: str | None = Field(default=None, max_length=255)
    prompt_ref: str | None = Field(default=None, max_length=255)
    reprompted: int = 0
    created_at: datetime = Field(sa_type=DateTime)
    expires_at: datetime | None = Field(default=None, sa_type=DateTime)
    resolved_at: datetime | None = Field(default=None, sa_type=DateTime)


class ToolLedgerEntry(SQLModel, table=True):
    """A tool call of a run: started, then succeeded or failed with its result."""

    __tablename__ = "tool_ledger"

    run_id: str = Field(primary_key=True, max_length=32)
    call_id: str = Field(primary_key=True, max_length=128)
    name: str = Field(max_length=255)
    status: str = Field(max_length=16)
    result: str | None = Field(default=None, sa_type=Text)
    args: str | None = Field(default=None, sa_type=Text)
    """The call's arguments (canonical JSON): a run re-run after a crash finds what it already did by them, and a
    call cut off is named with them."""
    updated_at: datetime = Field(sa_type=DateTime)


class OutboxEntry(SQLModel, table=True):
    """A reply or prompt committed before it is sent; sent ones are marked with their reference."""

    __tablename__ = "outbox"

    id: int | None = Field(default=None, primary_key=True)
    chat_key: str = Field(max_length=255)
    message: str = Field(sa_type=Text)
    interrupt_id: str | None = Field(default=None, max_length=32)
    status: str = Field(index=True, max_length=16)
    ref: str | None = Field(default=None, max_length=255)
    created_at: datetime = Field(sa_type=DateTime)


class ScheduledMessage(SQLModel, table=True):
    """A message the bot will send to a chat at a time (the ``schedule_message`` tool)."""

    __tablename__ = "scheduled_messages"

    id: str = Field(primary_key=True, max_length=32)
    chat_key: str = Field(index=True, max_length=255)
    text: str = Field(sa_type=Text)
    due_at: datetime = Field(index=True, sa_type=DateTime)
    status: str = Field(max_length=16)
    created_by: str = Field(max_length=255)
    created_at: datetime = Field(sa_type=DateTime)


class TraceEventRow(SQLModel, table=True):
    """One decision of a run (``bot/tracing/recorder.py``): route, model call, tool call, handoff, interrupt..."""

    __tablename__ = "trace_events"

    __table_args__ = (Index("ix_trace_events_chat_key_correlation_id", "chat_key", "correlation_id"),)

    seq: int | None = Field(default=None, primary_key=True)
    """Time order (events are written in the order they happen); retention deletes a prefix."""
    id: str = Field(max_length=32)
    chat_key: str = Field(max_length=255)
    correlation_id: str = Field(max_length=255)
    run_id: str | None = Field(default=None, max_length=32)
    agent: str | None = Field(default=None, max_length=64)
    type: str = Field(max_length=32)
    data: str = Field(sa_type=Text)
    created_at: datetime = Field(sa_type=DateTime)


class MemoryItem(SQLModel, table=True):
    """One thing the bot remembers about a person (``remember``); searched by full text.

    SQLite indexes it in the FTS5 table ``memory_index`` (kept equal by triggers, so a deleted memory leaves
    the index with its row); PostgreSQL in a GIN index over ``to_tsvector`` (migration 0008).
    """

    __tablename__ = "memories"
    __table_args__ = (Index("ix_memories_person_id", "person", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    person: str = Field(max_length=255)
    """The person (an identity ``channel:user_id``, shared by the identities linked to it)."""
    text: str = Field(sa_type=Text)
    grams: str = Field(sa_type=Text)
    """The text's CJK characters and character pairs, space-separated: what full-text search matches CJK by."""
    source: str = Field(max_length=255)
    """The chat it was learned in."""
    created_at: datetime = Field(sa_type=DateTime)


class MemoryVector(SQLModel, table=True):
    """A memory's embedding (``memory.embeddings.model``), for semantic recall beside full-text search."""

    __tablename__ = "memory_vectors"

    memory_id: int = Field(primary_key=True)
    person: str = Field(index=True, max_length=255)
    model: str = Field(max_length=128)
    vector: str = Field(sa_type=Text)
    """Little-endian float32, base64."""


class Identity(SQLModel, table=True):
    """A platform account linked to a person (``/memory link``); unlinked accounts are their own person."""

    __tablename__ = "identities"

    identity: str = Field(primary_key=True, max_length=255)
    person: str = Field(index=True, max_length=255)
    linked_by: str = Field(max_length=255)
    linked_at: datetime = Field(sa_type=DateTime)


class LinkCode(SQLModel, table=True):
    """A one-time code that links the account redeeming it to the person who asked for it."""

    __tablename__ = "link_codes"

    code: str = Field(primary_key=True, max_length=32)
    identity: str = Field(max_length=255)
    expires_at: datetime = Field(sa_type=DateTime)


class ChatSummary(SQLModel, table=True):
    """The running summary of a chat's turns that left the context window."""

    __tablename__ = "chat_summaries"

    chat_key: str = Field(primary_key=True, max_length=255)
    summary: str = Field(sa_type=Text)
    upto_id: int
    """The newest history row the summary covers."""
    updated_at: datetime = Field(sa_type=DateTime)


class SessionValue(SQLModel, table=True):
    """A session memory key of an agent in a chat (``memory.session`` in its file)."""

    __tablename__ = "session_memory"

    chat_key: str = Field(primary_key=True, max_length=255)
    agent: str = Field(primary_key=True, max_length=64)
    name: str = Field(primary_key=True, max_length=64)
    value: str = Field(sa_type=Text)
    run_id: str | None = Field(default=None, max_length=32)
    updated_at: datetime = Field(sa_type=DateTime)


class UsageRow(SQLModel, table=True):
    """Model tokens and estimated cost of one scope (``user:<account>``, ``chat:<channel:chat>``) in one period
    (``d2026-11-26``, ``m2026-11``, in ``budgets.timezone``)."""

    __tablename__ = "usage"

    scope: str = Field(primary_key=True, max_length=255)
    period: str = Field(primary_key=True, max_length=16, index=True)
    calls: int
    input_tokens: int = Field(sa_type=BigInteger)
    output_tokens: int = Field(sa_type=BigInteger)
    thinking_tokens: int = Field(sa_type=BigInteger)
    cached_tokens: int = Field(sa_type=BigInteger)
    cost: float
    updated_at: datetime = Field(sa_type=DateTime)


class JobRow(SQLModel, table=True):
    """A recurring job of a chat: its trigger (JSON), its action (``message`` text or ``prompt`` for ``agent``)."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_status_next_fire_at", "status", "next_fire_at"),)

    id: str = Field(primary_key=True, max_length=16)
    chat_key: str = Field(index=True, max_length=255)
    owner: str = Field(index=True, max_length=255)
    name: str = Field(max_length=255)
    trigger: str = Field(sa_type=Text)
    action: str = Field(max_length=16)
    text: str = Field(sa_type=Text)
    agent: str | None = Field(default=None, max_length=64)
    status: str = Field(max_length=16)
    next_fire_at: datetime | None = Field(default=None, sa_type=DateTime)
    last_fire_at: datetime | None = Field(default=None, sa_type=DateTime)
    fires: int
    created_at: datetime = Field(sa_type=DateTime)
    updated_at: datetime = Field(sa_type=DateTime)


class JobFire(SQLModel, table=True):
    """One fire of a job (and its retries): claimed, then done, failed, missed or retried."""

    __tablename__ = "job_fires"

    job_id: str = Field(primary_key=True, max_length=16)
    due_at: datetime = Field(primary_key=True, sa_type=DateTime)
    attempt: int = Field(primary_key=True)
    status: str = Field(index=True, max_length=16)
    event_key: str | None = Field(default=None, max_length=255)
    detail: str | None = Field(default=None, sa_type=Text)
    retry_at: datetime | None = Field(default=None, sa_type=DateTime)
    """A failed fire to try again (status ``retry``) at this time."""
    fired_at: datetime = Field(sa_type=DateTime)


class WebSession(SQLModel, table=True):
    """A web console session: ``id`` is the SHA-256 of the cookie's token (the token is never stored)."""

    __tablename__ = "web_sessions"

    id: str = Field(primary_key=True, max_length=64)
    user_name: str = Field(max_length=64)
    created_at: datetime = Field(sa_type=DateTime)
    expires_at: datetime = Field(sa_type=DateTime, index=True)


class PartitionFence(SQLModel, table=True):
    """The fencing token of a bus partition (scaled out): raised by each new owner before it handles anything
    there; every write of a partition's work checks it, so a worker whose lease lapsed cannot commit."""

    __tablename__ = "partition_fences"

    partition: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    token: int = Field(sa_type=BigInteger)
    owner: str = Field(max_length=255)
    updated_at: datetime = Field(sa_type=DateTime)


class EvalRun(SQLModel, table=True):
    """A run of an eval suite (``bot eval``): its figures, and the whole result as JSON (``bot/evals``)."""

    __tablename__ = "eval_runs"
    __table_args__ = (Index("ix_eval_runs_suite_started_at", "suite", "started_at"),)

    id: str = Field(primary_key=True, max_length=32)
    suite: str = Field(max_length=80)
    models: str = Field(max_length=255)
    status: str = Field(max_length=16)
    """``passed``, ``failed`` or ``stopped`` (the budget ran out)."""
    cases: int
    trials: int
    passed: int
    pass_rate: float
    cost: float
    data: str = Field(sa_type=Text)
    started_at: datetime = Field(sa_type=DateTime)


class PairingCode(SQLModel, table=True):
    """A one-time code an unknown sender was given (``channels.<name>.unknown_senders: pair``): an admin's
    ``/pair CODE`` (or the web console) lets that sender in. One per sender; it expires."""

    __tablename__ = "pairing_codes"
    __table_args__ = (Index("ix_pairing_codes_sender", "channel", "user_id", unique=True),)

    code: str = Field(primary_key=True, max_length=16)
    channel: str = Field(max_length=32)
    user_id: str = Field(max_length=255)
    user_name: str = Field(max_length=255)
    chat_key: str = Field(max_length=255)
    """Where the code was given (the sender is told there when an admin approves it)."""
    created_at: datetime = Field(sa_type=DateTime)
    expires_at: datetime = Field(sa_type=DateTime, index=True)


class PairedSender(SQLModel, table=True):
    """A sender an admin (or the operator, ``bot pair approve``) let in by pairing: allowed like one in
    ``allow_from`` until ``/unpair``."""

    __tablename__ = "paired_senders"

    channel: str = Field(primary_key=True, max_length=32)
    user_id: str = Field(primary_key=True, max_length=255)
    user_name: str = Field(max_length=255)
    approved_by: str = Field(max_length=255)
    approved_at: datetime = Field(sa_type=DateTime)
    is_admin: bool = Field(default=False, sa_column_kwargs={"server_default": text("false")})
    """An admin too (``bot pair approve CODE --admin``): the first admin of a bot set up without one."""
