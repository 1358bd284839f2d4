"""A run that fails unexpectedly ends as failed and the user is told; secrets never reach a reply or a row."""

from __future__ import annotations

import sqlite3
from typing import Any

from agents.models.scripted import ScriptedModel, call
from agents.tools.base import tool

SECRET = "tg-secret-token-0123456789"


async def test_an_unexpected_error_ends_the_run_as_failed_and_says_so(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([RuntimeError("a bug in a runner"), "fine again"]))
    replies = await h.say("hello")
    assert len(replies) == 1 and "Something went wrong" in replies[0] and "stopped" in replies[0]
    assert await h.gateway.runs.runs_with_status("running") == []
    rows = await h.gateway.store.read("SELECT status FROM runs")
    assert [r[0] for r in rows] == ["failed"]
    assert await h.say("and now?") == ["fine again"]  # the chat is not stuck


async def test_a_known_secret_is_redacted_in_replies_and_in_every_stored_row(make_harness: Any) -> None:
    @tool(risk="safe")
    async def show_env() -> str:
        """Shows the environment."""
        return f"TELEGRAM_BOT_TOKEN={SECRET}"

    model = ScriptedModel([call("show_env", {}, id="c1"), f"Your token is {SECRET}."])
    h = await make_harness(model, tools=[show_env], channels={"telegram": {"token": SECRET}})
    assert await h.say("@react what is in the environment?") == ["Your token is ***."]
    await h.gateway.store.flush()
    await h.gateway.tracing.flush()
    conn = sqlite3.connect(h.gateway.settings.store.database_url().split(":///", 1)[1])
    dump = "\n".join(conn.iterdump())
    conn.close()
    assert SECRET not in dump
    assert "TELEGRAM_BOT_TOKEN=‹redacted: secret›" in dump  # the tool result, in the history and the ledger
