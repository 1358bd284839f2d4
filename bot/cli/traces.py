"""Reading traces from a shell: ``bot trace CHAT_KEY`` (the timeline of a chat's last requests) and
``bot agents replay SESSION`` (one finished request step by step, with totals). Both open the store read-only:
they work beside a running bot and never create or migrate a database.  What they print went through the
redaction step (:mod:`bot.redaction`) and shows hidden characters as ``\\uXXXX`` (:mod:`bot.tracing.steps`)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer

from bot.config.settings import Settings
from bot.tracing.recorder import Redactor, TraceEvent, Tracing, timeline
from channels.terminal import terminal_safe

T = TypeVar("T")


async def with_traces(settings: Settings, read: Callable[[Tracing], Awaitable[T]]) -> T | None:
    """``read`` on the configured store's traces (None, with the reason printed, when it cannot be opened)."""
    from bot.store.base import StoreError
    from bot.store.sql import store_from_settings
    from bot.store.sql.repos.traces import SqlTraces

    store = store_from_settings(settings.store, read_only=True)
    try:
        await store.start()
    except StoreError as exc:
        typer.echo(f"cannot read the traces: {exc}", err=True)
        return None
    try:
        # Read through the redaction step with the configured secrets too (rows kept before it knew a kind).
        return await read(
            Tracing(
                SqlTraces(store), settings.tracing, Redactor.configured(settings.model, settings.channels, settings.mcp)
            )
        )
    finally:
        await store.close()


async def print_trace(settings: Settings, chat_key: str | None, last: int, as_json: bool) -> int:
    """The timeline of ``chat_key``'s last requests (None: the chat traced last, named on stderr)."""

    async def read(tracing: Tracing) -> tuple[str | None, list[list[TraceEvent]]]:
        chat = chat_key or await last_traced_chat(tracing)
        return chat, await tracing.runs(chat, last) if chat else []

    found = await with_traces(settings, read)
    if found is None:
        return 1
    chat, runs = found
    if chat is None:
        typer.echo("no trace events yet: send the bot a message first", err=True)
        return 1
    if not runs:
        typer.echo(f"no trace events for {chat}", err=True)
        return 1
    if chat_key is None:
        typer.echo(f"the last chat traced: {chat} (bot trace CHAT_KEY for another)", err=True)
    for events in runs:
        if as_json:
            for event in events:
                typer.echo(terminal_safe(json.dumps(event.as_dict(), ensure_ascii=False)))
        else:
            typer.echo(timeline(events, full=True) + "\n")
    return 0


async def last_traced_chat(tracing: Tracing) -> str | None:
    """The chat of the newest trace event (``bot trace`` without a chat key)."""
    return await tracing.traces.newest_chat()


async def session_events(tracing: Tracing, session: str) -> list[TraceEvent]:
    """A request's events by its correlation id, or a chat's last request when ``session`` is a chat key."""
    events = await tracing.events(session)
    if not events and ":" in session:
        runs = await tracing.runs(session, 1)
        events = runs[0] if runs else []
    return events
