"""Rows of a chat's history: statements that insert messages, and applying the committed rows to a cached state."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

from agents.messages import Message
from bot.redaction import redact_json
from bot.store.chat_state import ChatState
from bot.store.sql.ops import INSERT_MESSAGE, INSERT_MESSAGES_HEAD, MESSAGE_ROW, Step


def message_row(chat_key: str, message: Message, at: Any) -> tuple[Any, ...]:
    """A history row; secrets the redaction step finds are not stored (the cached message, which this process's
    next turns read, keeps them)."""
    # What ``model_dump_json`` returns, without its Python wrapper's keywords (twice a message; measured: see
    # bench/README.md, "Per-message micro-optimisations").
    data = message.__pydantic_serializer__.to_json(message, exclude_defaults=True).decode()
    return (chat_key, message.role, message.agent, redact_json(data), at)


_MESSAGE_ROWS_PER_INSERT = 100


def insert_messages(chat_key: str, messages: Sequence[Message], at: Any) -> list[Step]:
    """Multi-row inserts of ``messages`` (one statement per 100; each row returns its id)."""
    if len(messages) == 1:  # a run's one answer: the single-row insert (ops.ROWID_INSERTS), its row as it is
        return [Step(INSERT_MESSAGE, message_row(chat_key, messages[0], at), returning=True)]
    steps = []
    for i in range(0, len(messages), _MESSAGE_ROWS_PER_INSERT):
        chunk = messages[i : i + _MESSAGE_ROWS_PER_INSERT]
        # One row (the last of 101, 201...): the single-row insert, which the SQLite writer runs without RETURNING.
        sql = (
            INSERT_MESSAGE
            if len(chunk) == 1
            else INSERT_MESSAGES_HEAD + ", ".join([MESSAGE_ROW] * len(chunk)) + " RETURNING id"
        )
        steps.append(Step(sql, tuple(chain.from_iterable(message_row(chat_key, m, at) for m in chunk)), returning=True))
    return steps


def add_rows(state: ChatState, rows: Sequence[tuple[Any, ...]], messages: Sequence[Message]) -> None:
    """Apply committed message rows to a cached chat state.

    RETURNING does not promise the order of rows, but ids are given in insertion
    order (one writer), so sorted ids line up with the messages.
    """
    for row_id, message in zip(sorted(r[0] for r in rows), messages, strict=True):
        state.add(row_id, message)
