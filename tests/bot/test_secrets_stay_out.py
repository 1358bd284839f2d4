"""Secrets stay out of every row: a password ``remember`` refused, a confirmed call's password argument and a
call cut off by a crash are stored and shown (trace, history, ledger, checkpoint, interrupt, audit, ``bot agents
replay``, the console, the recovery notice) as ``‹redacted: kind›``; the database file holds none of them, and the
confirmed call still runs with what the person approved. So do secrets typed in a chat, the answer to a question
that asks for one (the run still gets it), a scheduled message's text and a job's."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from agents.models.scripted import ScriptedModel, call
from agents.tools.base import tool
from bot.config.settings import TracingSection
from bot.store.sql.ops import Step, utcnow
from bot.store.sql.repos.runs import RunStore
from bot.store.sql.repos.traces import SqlTraces
from bot.store.sql.store import SqlStore
from bot.tracing.recorder import Redactor, Tracing
from tests.helpers.crash_gateway import Gateway as CrashingGateway
from tests.helpers.crash_gateway import count_lines
from tests.waiting import eventually_sync
from tests.web.harness import WEB_TOKEN, Browserless

PASSWORD = "hunter2-XYZ"
DB_PASSWORD = "Tr0ub4dor&3"
ROOT = Path(__file__).resolve().parents[2]


def database_bytes(settings: Any) -> tuple[str, bytes]:
    """The stopped gateway's database: its SQL dump and the bytes of every file of it (WAL and all)."""
    database = Path(settings.store.database_url().split(":///", 1)[1])
    conn = sqlite3.connect(database)
    dump = "\n".join(conn.iterdump())
    conn.close()
    return dump, b"".join(f.read_bytes() for f in database.parent.glob(database.name + "*"))


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
    await gateway.stop(timeout=5)  # its WAL goes into the database file
    dump, blob = database_bytes(gateway.settings)
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


WIFI = "Blue-Marlin-42"
TYPED = {
    "a database URL": "Xq7-db-secret",
    "a token in a URL": "at-5f4e3d2c1b",
    "a passphrase": "correct horse battery staple",
    "reminder": "Sunfish-88",
    "job PIN": "73915",
    "prompt job": "Reef!shark-19",
}


async def test_a_chat_an_answer_a_reminder_and_a_job_keep_no_secret(make_harness: Any) -> None:
    """What an attacker tried (issue 61): a secret typed in a chat, the answer to "What is the wifi password?",
    a scheduled message and jobs with a password in their text. None reaches the database file; the run that
    asked still gets the answer itself (the model reads it, a tool is called with it)."""
    joined: list[str] = []

    @tool(risk="low")
    async def join_wifi(network: str, key: str) -> str:
        """Join a wifi network."""
        joined.append(key)
        return f"joined {network}"

    garage = f"the garage PIN is {TYPED['job PIN']}"
    mail = f"log in with password: {TYPED['prompt job']} and read my mail"
    model = ScriptedModel(
        [
            "Noted.",
            call("ask_user", {"question": "What is the wifi password?"}, id="q1"),
            call("join_wifi", {"network": "home", "key": WIFI}, id="j1"),
            "Joined.",
            call("schedule_message", {"text": f"the wifi password is {TYPED['reminder']}", "in_minutes": 5}, id="s1"),
            "Scheduled.",
            call("schedule_job", {"name": "garage", "message": garage, "cron": "0 8 * * *"}, id="g1"),
            call("schedule_job", {"name": "mail", "prompt": mail, "every_minutes": 60}, id="g2"),
            "Jobs made.",
        ]
    )  # fmt: skip
    h = await make_harness(model, tools=[join_wifi])
    await h.say(
        f"keep postgresql://bot:{TYPED['a database URL']}@db/app and https://api.test/me?access_token="
        f"{TYPED['a token in a URL']}, and my passphrase is {TYPED['a passphrase']}"
    )
    assert (await h.say("@react join my wifi"))[-1].startswith("❓ What is the wifi password?")
    assert (await h.say(f"{WIFI} is it"))[-1] == "Joined."
    assert model.requests[2].messages[-1].tool_results[0].content == f"{WIFI} is it", "the run reads the answer"
    assert joined == [WIFI], "and passes it on"
    assert any("Answered by" in t and "‹redacted: password›" in t for t in h.channel.texts()), h.channel.texts()
    await h.say("@react remind me of the wifi password")
    assert "‹redacted: password›" in model.requests[5].messages[-1].tool_results[0].content
    await h.say("@react make my jobs")

    gateway = h.gateway
    [(resolution,)] = await gateway.store.read("SELECT resolution FROM interrupts WHERE kind = 'ask_user'")
    assert resolution == '{"answer":"‹redacted: password›"}'
    [pending] = await gateway.scheduled.pending()
    assert pending["text"] == "the wifi password is ‹redacted: password›"
    jobs = {job.name: job.text for job in await gateway.jobs.jobs.of_chat(str(h.chat()))}
    assert jobs == {
        "garage": "the garage PIN is ‹redacted: PIN›",
        "mail": "log in with password: ‹redacted: password› and read my mail",
    }
    await gateway.tracing.flush()
    await gateway.stop(timeout=5)  # its WAL goes into the database file
    dump, blob = database_bytes(gateway.settings)
    for what, secret in [*TYPED.items(), ("the wifi password", WIFI)]:
        assert secret not in dump and secret.encode() not in blob, what
    await gateway.start()  # the harness stops it at teardown
