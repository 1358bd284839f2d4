"""Secrets stay out of every row: a password ``remember`` refused, a confirmed call's password argument and a
call cut off by a crash are stored and shown (trace, history, ledger, checkpoint, interrupt, audit, ``bot agents
replay``, the console, the recovery notice) as ``‹redacted: kind›``; the database file holds none of them, and the
confirmed call still runs with what the person approved."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from agents.models.scripted import call
from agents.tools.base import tool
from bot.config.settings import TracingSection
from bot.store.ops import Step, utcnow
from bot.store.runs import RunStore
from bot.store.sql import SqlStore
from bot.store.traces import SqlTraces
from bot.tracing.recorder import Redactor, Tracing
from tests.bot.test_crash_recovery import Gateway as CrashingGateway
from tests.bot.test_crash_recovery import count_lines
from tests.waiting import eventually_sync
from tests.web.harness import WEB_TOKEN, Browserless

PASSWORD = "hunter2-XYZ"
DB_PASSWORD = "Tr0ub4dor&3"
ROOT = Path(__file__).resolve().parents[2]


def replay(settings: Any, tmp_path: Path, session: str) -> str:
    """``bot agents replay SESSION`` in a process of its own."""
    config = tmp_path / "cli.yaml"
    config.write_text(f"store:\n  url: {settings.store.database_url()}\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "bot", "agents", "replay", session, "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


async def test_a_refused_password_and_a_confirmed_ones_are_stored_nowhere(
    make_harness: Any, scripted: Any, tmp_path: Path
) -> None:
    connected: list[str] = []

    @tool(risk="medium", confirm=True)
    async def connect_db(host: str, password: str) -> str:
        """Connect to a database."""
        connected.append(password)
        return f"connected to {host}"

    model = scripted(
        call("remember", {"fact": f"my password is {PASSWORD}"}, id="r1"),
        "I never store passwords.",
        call("connect_db", {"host": "db.local", "password": DB_PASSWORD}, id="c1"),
        "Connected.",
    )
    h = await make_harness(
        model, tools=[connect_db], http={"enabled": True, "port": 0}, web={"enabled": True, "token": WEB_TOKEN}
    )
    assert await h.say(f"remember my password is {PASSWORD}") == ["I never store passwords."]
    gateway = h.gateway
    [events] = await gateway.tracing.runs("console:c1")
    refused = next(e for e in events if e.type == "tool_call")
    assert refused.data["arguments"] == {"fact": "my password is ‹redacted: password›"}
    assert "looks like a password" in refused.data["error"]

    await h.say(f"@react connect to db.local with password {DB_PASSWORD}")  # paused for confirmation
    web = Browserless(gateway)
    try:
        assert await web.login("token", WEB_TOKEN) == 303
        _status, inbox, _ = await web.get("/web/")
        assert "connect_db" in inbox and "‹redacted: password›" in inbox and DB_PASSWORD not in inbox
        _status, chat, _ = await web.get("/web/chats/console%3Ac1")
        assert PASSWORD not in chat and DB_PASSWORD not in chat
    finally:
        await web.close()
    assert (await h.click("Approve"))[-1] == "Connected."
    assert connected == [DB_PASSWORD], "what was approved runs: the redaction is in what is stored, not what runs"
    ledger = await gateway.store.read("SELECT args FROM tool_ledger WHERE call_id = 'c1'")
    assert ledger == [('{"host":"db.local","password":"‹redacted: password›"}',)]

    runs = RunStore(gateway.store)
    await gateway.store.write([runs.audit_step("admin", "*", "mcp.env", None, {"API_TOKEN": "abc", "note": "ok"})])
    audit = await runs.audit_log(1)
    assert audit[0]["new"] == {"API_TOKEN": "‹redacted: token›", "note": "ok"}

    await gateway.tracing.flush()
    shown = replay(gateway.settings, tmp_path, refused.correlation_id)
    assert "‹redacted: password›" in shown and PASSWORD not in shown
    settings = gateway.settings
    await gateway.stop(timeout=5)  # its WAL goes into the database file
    database = Path(settings.store.database_url().split(":///", 1)[1])
    conn = sqlite3.connect(database)
    dump = "\n".join(conn.iterdump())
    conn.close()
    blob = b"".join(f.read_bytes() for f in database.parent.glob(database.name + "*"))
    for secret in (PASSWORD, DB_PASSWORD):
        assert secret not in dump and secret.encode() not in blob, secret
    await gateway.start()  # the harness stops it at teardown


def test_a_call_cut_off_by_a_crash_is_named_without_its_secret(tmp_path: Path) -> None:
    first = CrashingGateway(tmp_path, TOOL_HANGS="1")
    first.send(text=f"@react note my password is {PASSWORD}")
    eventually_sync(lambda: count_lines(tmp_path) == ["started"], what="the tool to start")
    first.stop()
    second = CrashingGateway(tmp_path)
    try:
        notice = second.expect(lambda m: "restarted" in (m.get("text") or ""))
        assert 'append_note(text="my password is ‹redacted: password›")' in notice["text"]
        assert PASSWORD not in notice["text"]
    finally:
        second.stop()


async def test_rows_kept_before_the_detector_knew_are_redacted_when_read(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}")
    await store.start()
    try:
        await store.write(
            [_old_row('{"tool": "remember", "arguments": {"fact": "my password is hunter2-XYZ"}, "error": "refused"}')]
        )
        tracing = Tracing(SqlTraces(store), TracingSection(), Redactor())
        [event] = await tracing.events("old-request")
        assert event.data["arguments"] == {"fact": "my password is ‹redacted: password›"}
    finally:
        await store.close()


def _old_row(data: str) -> Step:
    return Step(
        "INSERT INTO trace_events (id, chat_key, correlation_id, run_id, agent, type, data, created_at) "
        "VALUES ('e1', 'console:c1', 'old-request', 'r1', 'chat', 'tool_call', ?, ?)",
        (data, utcnow()),
    )
