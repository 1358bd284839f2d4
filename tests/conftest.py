"""Shared fixtures: settings in a temp dir, a scripted model that must be used up,
and a gateway harness with a recording channel (our code runs unmodified)."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.settings import Settings, load_settings
from bot.events import Action, ChatKey, InboundEvent, InboundMessage, OutboundMessage, Sender
from bot.gateway.app import Gateway
from bot.inbox import Inbox, Receipt
from channels.registry import PLUGINS  # noqa: F401  (installs the channels: the settings' sections)
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.servers import PostgresServer, RedisServer, postgres_server, redis_server
from tests.waiting import CEILING_S


def need_bwrap() -> None:
    """These tests need bubblewrap: installed from Debian's packages when missing (as root), else they fail."""
    from agents.tools.sandbox import SandboxUnavailable, bubblewrap

    try:
        bubblewrap(network=False, hidden=())
        return
    except SandboxUnavailable:
        pass
    if shutil.which("apt-get") and os.geteuid() == 0:
        for command in (["apt-get", "install", "-y", "-q", "bubblewrap"], ["apt-get", "update", "-q"]):
            subprocess.run(command, capture_output=True, timeout=300, check=False)
        subprocess.run(["apt-get", "install", "-y", "-q", "bubblewrap"], capture_output=True, timeout=300, check=False)
    try:
        bubblewrap(network=False, hidden=())
    except SandboxUnavailable as exc:
        pytest.fail(f"bubblewrap is needed for the sandbox tests (apt install bubblewrap): {exc}")


LONGEST_FIRST = ("tests/scale/test_scaleout.py::test_a_burst_survives_a_killed_worker",)
"""Tests that take minutes: started first, so the other test process works through the rest meanwhile instead
of waiting for them at the end."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not any(item.nodeid.endswith(name) for name in LONGEST_FIRST))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's ~/.config/bot or real API keys."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("GEMINI_API_KEY", "GEMINI_BASE_URL", "DATABASE_URL", "REDIS_URL", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """PostgreSQL on 127.0.0.1, once per session; ``create_database()`` gives each test its own database."""
    yield from postgres_server()


@pytest.fixture(scope="session")
def redis() -> Iterator[RedisServer]:
    """redis-server on 127.0.0.1, once per session (``flush()`` between tests that need it empty)."""
    yield from redis_server()


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite database the migrations brought to the newest revision, once per test process."""
    from bot.store.sql.migrate import migrate_url

    path = tmp_path_factory.mktemp("template") / "bot.db"
    asyncio.run(migrate_url(f"sqlite:///{path}"))
    return path


def _merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` on top, section by section (``routing={"rule": {"learned": True}}`` keeps the
    other ``routing.rule`` defaults of the tests)."""
    out = dict(base)
    for key, value in overrides.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@pytest.fixture
def make_settings(tmp_path: Path, migrated_db: Path) -> Callable[..., Settings]:
    """Settings from the built-in defaults with the data dir in ``tmp_path`` plus overrides.

    The data dir starts with a copy of a migrated database (what a gateway's first start makes, and the
    start then finds at the newest revision): migrating a new file costs about 0.1 s per gateway, and the
    migrations themselves are tested on new databases in tests/store.
    """

    def make(**overrides: Any) -> Settings:
        # Routing by trigger keywords: most tests send arbitrary text and script one kind of agent; the tests of
        # routing turn the classifier on (routing.rule.learned) themselves. Summaries without a model call, so
        # scripts hold only the calls they are about (the tests of summaries choose their summariser).
        # Routing by meaning off: its encoder loads on a thread, and a test must not route one way before it is
        # ready and another after; the tests of meaning turn it on and wait for it (Router.prepare).
        base: dict[str, Any] = {
            "store": {"data_dir": str(tmp_path / "data")},
            "agents": {"dirs": []},
            "routing": {"rule": {"learned": False, "meaning": False}},
            "memory": {"summary": {"model": "extractive"}},
        }
        base = _merged(base, overrides)
        settings = load_settings(None, env={}, user_config=tmp_path / "no-user.yaml", overrides=base)
        database = Path(settings.store.data_dir) / "bot.db"
        if settings.store.url is None and not database.exists():
            database.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(migrated_db, database)
        return settings

    return make


@pytest.fixture
def scripted() -> Any:
    """A scripted model; the test fails if a step is left over or missing."""
    models: list[ScriptedModel] = []

    def make(*steps: Any) -> ScriptedModel:
        model = ScriptedModel(steps)
        models.append(model)
        return model

    yield make
    for model in models:
        model.assert_complete()


class RecordingChannel:
    """A channel adapter at the network seam: it records what the gateway sends."""

    text_limit: int | None = None
    """As a platform adapter: the longest text one message holds (None: no limit)."""

    def __init__(self, name: str = "console") -> None:
        self.name = name
        self.sent: list[OutboundMessage] = []
        self.inbox: Inbox | None = None
        self._refs = itertools.count(1)
        self.received = asyncio.Condition()

    async def start(self, inbox: Inbox) -> None:
        self.inbox = inbox

    async def stop(self) -> None:
        return None

    async def send(self, message: OutboundMessage) -> str | None:
        async with self.received:
            self.sent.append(message)
            self.received.notify_all()
        return None if message.kind == "typing" else f"{self.name}-msg-{next(self._refs)}"

    def texts(self, chat: ChatKey | None = None) -> list[str]:
        return [m.text for m in self.sent if m.kind != "typing" and (chat is None or m.chat == chat)]

    async def wait_for(self, count: int, timeout: float = CEILING_S) -> list[str]:
        async def enough() -> None:
            async with self.received:
                await self.received.wait_for(lambda: len(self.texts()) >= count)

        await asyncio.wait_for(enough(), timeout)
        return self.texts()


class RecordingInbox:
    """Where an adapter hands its events, for looking at the events themselves (every one accepted)."""

    def __init__(self) -> None:
        self.events: list[InboundEvent] = []
        self._published = asyncio.Condition()

    async def wait_for(self, count: int) -> None:
        async def enough() -> None:
            async with self._published:
                await self._published.wait_for(lambda: len(self.events) >= count)

        await asyncio.wait_for(enough(), CEILING_S)

    async def submit(self, event: InboundEvent) -> Receipt:
        async with self._published:
            self.events.append(event)
            self._published.notify_all()
        return Receipt.ACCEPTED

    async def submit_many(self, events: Any) -> list[Receipt]:
        return [await self.submit(event) for event in events]

    async def check_press(self, action: Any) -> str | None:
        return None


class Harness:
    """A started gateway whose only channel is a :class:`RecordingChannel`."""

    def __init__(self, gateway: Gateway, channel: RecordingChannel) -> None:
        self.gateway = gateway
        self.channel = channel
        self._ids = itertools.count(1)
        self.chats: set[ChatKey] = set()

    def chat(self, chat_id: str = "c1", thread_id: str | None = None) -> ChatKey:
        return ChatKey(channel="console", chat_id=chat_id, thread_id=thread_id)

    def message(self, text: str, *, chat: ChatKey | None = None, user: str = "u1", **kw: Any) -> InboundMessage:
        kw.setdefault("is_direct", True)
        self.chats.add(chat or self.chat())
        return InboundMessage(
            id=kw.pop("id", f"m{next(self._ids)}"),
            chat=chat or self.chat(),
            sender=Sender(id=user, name=user),
            text=text,
            **kw,
        )

    def press(self, payload: str, *, chat: ChatKey | None = None, user: str = "u1", **kw: Any) -> Action:
        return Action(
            id=kw.pop("id", f"a{next(self._ids)}"),
            chat=chat or self.chat(),
            sender=Sender(id=user),
            payload=payload,
            **kw,
        )

    async def send(self, event: InboundMessage | Action) -> list[str]:
        """Publish one event and wait until it was handled; returns the texts sent for it."""
        before = len(self.channel.texts())
        await self.gateway.inbox.submit(event)
        await asyncio.wait_for(self.gateway.bus.join(), CEILING_S)
        await asyncio.wait_for(self.gateway.inbox.settled(), CEILING_S)
        return self.channel.texts()[before:]

    async def say(self, text: str, **kw: Any) -> list[str]:
        return await self.send(self.message(text, **kw))

    def prompt(self) -> OutboundMessage:
        """The newest message that carries buttons."""
        for message in reversed(self.channel.sent):
            if message.buttons:
                return message
        raise AssertionError("no prompt with buttons was sent")

    def payload(self, label_start: str, prompt: OutboundMessage | None = None) -> str:
        prompt = prompt or self.prompt()
        for row in prompt.buttons:
            for button in row:
                words = button.label.split(" ", 1)
                if button.label.startswith(label_start) or (len(words) == 2 and words[1].startswith(label_start)):
                    return button.payload
        raise AssertionError(f"no button {label_start!r} in {prompt.buttons!r}")

    async def click(self, label_start: str, *, user: str = "u1", **kw: Any) -> list[str]:
        return await self.send(self.press(self.payload(label_start), user=user, **kw))

    async def restart(self, model: Any, tools: Any = None, *, before_stop: Any = None, down: Any = None) -> None:
        """Stop the gateway and start a new one on the same database, settings and clock (a new channel too).

        ``down``: awaited while no gateway runs (e.g. the fake clock moving past a deadline).
        """
        settings = self.gateway.settings
        if before_stop is not None:
            before_stop(self.gateway)
        await self.gateway.stop(timeout=5)
        if down is not None:
            await down()
        self.channel = RecordingChannel("console")
        self.gateway = Gateway(settings, model=model, channels=[self.channel], tools=tools, clock=self.gateway.clock)
        await self.gateway.start()

    def edits(self) -> list[OutboundMessage]:
        return [m for m in self.channel.sent if m.edit_of is not None]


@pytest.fixture
async def make_harness(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Callable[..., Any]]:
    """``await make_harness(model, **settings_overrides)`` → a started :class:`Harness`.

    The recording channel stands in for the console adapter (channel ``console``);
    ``allow``/``admins``/``mention_policy`` configure its section.
    """
    started: list[Harness] = []

    async def make(
        model: Any,
        /,
        *,
        allow: list[str] | None = None,
        admins: list[str] | None = None,
        mention_policy: str = "mention",
        tools: Any = None,
        clock: Clock = SYSTEM_CLOCK,
        **overrides: Any,
    ) -> Harness:
        channels = overrides.pop("channels", {})
        # Deterministic by default: rules, then the chat agent; tests of routing set their own.
        overrides.setdefault("routing", {"strategy": "rule"})
        console = {
            "enabled": True,
            "allow_from": ["*"] if allow is None else allow,
            "admins": ["admin"] if admins is None else admins,
            "mention_policy": mention_policy,
            **channels.pop("console", {}),
        }
        settings = make_settings(channels={"console": console, **channels}, **overrides)
        channel = RecordingChannel("console")
        gateway = Gateway(settings, model=model, channels=[channel], tools=tools, clock=clock)
        await gateway.start()
        harness = Harness(gateway, channel)
        started.append(harness)
        return harness

    yield make
    for harness in started:
        try:
            await check_histories(harness)
        finally:
            await harness.gateway.stop(timeout=5)


async def check_histories(harness: Harness) -> None:
    """Every stored history: each tool call has exactly one result, and each result answers a call."""
    for chat in harness.chats:
        messages = await harness.gateway.store.history(str(chat))
        calls = [c.id for m in messages for c in m.tool_calls]
        results = [r.call_id for m in messages for r in m.tool_results]
        assert sorted(calls) == sorted(results), f"{chat}: calls {calls} vs results {results}"
        assert len(set(calls)) == len(calls), f"{chat}: a call id appears twice"


@pytest.fixture
async def gemini_server() -> AsyncIterator[FakeGemini]:
    """A started fake Gemini server; unused or missing scripted responses fail the test."""
    server = FakeGemini()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
    server.assert_complete()


@pytest.fixture
async def openai_server() -> AsyncIterator[FakeOpenAI]:
    """A started fake OpenAI-compatible endpoint; unused or missing scripted steps fail the test."""
    server = FakeOpenAI()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
    server.assert_complete()
