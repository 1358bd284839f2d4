"""The web console's Chat page over HTTP (an aiohttp client with a cookie jar, as a browser), against a real
gateway whose ``web`` channel is built from the settings like any channel: signed-out requests refused, a
message in and a streamed answer out through the inbox, the supervisor and delivery, a forged press refused and
the real one resolving the request once, files kept to their owner, a pending prompt surviving a restart."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel, Streamed, call
from bot.config.settings import Settings
from tests.helpers.web_chat import ChatEnv
from tests.waiting import CEILING_S
from tests.web.harness import VIEWER_PASSWORD, Browserless


@pytest.fixture
async def chat_env(make_settings: Callable[..., Settings]) -> AsyncIterator[ChatEnv]:
    env = ChatEnv(make_settings)
    try:
        yield env
    finally:
        for web in env.clients:
            await web.close()
        for gateway in list(env.running):
            await env.stop(gateway)


class Stream:
    """The page's event stream, read as the browser's EventSource reads it."""

    def __init__(self, web: Browserless, since: str = "") -> None:
        self.web = web
        self.since = since
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.last_id = ""
        self._response: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> Stream:
        headers = {"Last-Event-ID": self.since} if self.since else {}
        self._response = await self.web.session.get(self.web.base + "/web/talk/events", headers=headers)
        assert self._response.status == 200, self._response.status
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._response is not None
        self._response.close()

    def items(self) -> dict[str, dict[str, Any]]:
        """Each message as shown now (by ref, in order of appearance; ``reset`` clears)."""
        shown: dict[str, dict[str, Any]] = {}
        for kind, data in self.events:
            if kind == "reset":
                shown.clear()
            elif kind == "item":
                shown[data["ref"]] = data
            elif kind == "gone":
                shown.pop(data["ref"], None)
        return shown

    async def until(self, check: Callable[[Stream], Any], what: str) -> Any:
        """Read events until ``check`` holds (bounded by the tests' ceiling)."""
        assert self._response is not None

        async def read() -> Any:
            kind, data, ident = "message", "", ""
            while not (found := check(self)):
                line = (await self._response.content.readline()).decode()  # type: ignore[union-attr]
                if not line:
                    raise AssertionError(f"the stream ended while waiting for {what}")
                line = line.rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif line.startswith("id: "):
                    ident = line[4:]
                elif line == "" and data:
                    self.events.append((kind, json.loads(data)))
                    self.last_id = ident or self.last_id
                    kind, data, ident = "message", "", ""
            return found

        try:
            return await asyncio.wait_for(read(), CEILING_S)
        except TimeoutError:
            raise AssertionError(f"no {what} after {CEILING_S:g} s; shown: {list(self.items().values())}") from None

    def bot_says(self, text: str) -> Callable[[Stream], dict[str, Any] | None]:
        return lambda s: next((i for i in s.items().values() if i["role"] != "user" and text in i["text"]), None)

    def with_buttons(self) -> Callable[[Stream], dict[str, Any] | None]:
        return lambda s: next((i for i in s.items().values() if i["buttons"]), None)


async def send(web: Browserless, text: str, file: tuple[str, bytes, str] | None = None) -> tuple[int, dict[str, Any]]:
    form = aiohttp.FormData()
    form.add_field("csrf", web.csrf)
    form.add_field("text", text)
    if file is not None:
        form.add_field("file", file[1], filename=file[0], content_type=file[2])
    async with web.session.post(web.base + "/web/talk/send", data=form) as response:
        return response.status, await response.json()


async def press(web: Browserless, payload: str, ref: str = "") -> tuple[int, dict[str, Any]]:
    data = {"csrf": web.csrf, "payload": payload, "ref": ref}
    async with web.session.post(web.base + "/web/talk/press", data=data) as response:
        return response.status, await response.json()


def payload_of(item: dict[str, Any], label: str) -> str:
    return next(b["payload"] for row in item["buttons"] for b in row if label in b["label"])


async def test_signed_out_gets_the_sign_in_page_or_401(chat_env: ChatEnv) -> None:
    gateway = await chat_env.start(ScriptedModel([]))
    web = await chat_env.client(gateway, name="")
    status, _text, response = await web.get("/web/talk")
    assert status == 303 and response.headers["Location"].startswith("/web/login?next=")
    for path in ("/web/talk/events", "/web/talk/talk.js"):
        assert (await web.get(path))[0] == 401, path
    assert (await send(web, "hello"))[0] == 401
    async with web.session.post(web.base + "/web/talk/press", data={"payload": "v1:x:y:a"}) as response:
        assert response.status == 401
    assert [c.name for c in gateway.channels] == ["web"]
    assert await gateway.repos.console.conversation("web:token", 10) == []


async def test_a_message_in_and_a_streamed_answer_out(chat_env: ChatEnv) -> None:
    seen_partial = asyncio.Event()

    async def gate(k: int) -> None:
        await asyncio.wait_for(seen_partial.wait(), CEILING_S)

    model = ScriptedModel([Streamed(("Hello ", "from ", "the bot."), gate=gate)])
    gateway = await chat_env.start(model)
    web = await chat_env.client(gateway)
    status, text, _r = await web.get("/web/")
    assert 'href="/web/talk"' in text  # the nav links to the Chat page
    async with Stream(web) as stream:
        await stream.until(lambda s: any(k == "sync" for k, _ in s.events), "the stream's first sync")
        status, answer = await send(web, "hi there")
        assert (status, answer["ok"]) == (202, True), answer
        await stream.until(
            lambda s: any(i["role"] == "user" and i["text"] == "hi there" for i in s.items().values()), "echo"
        )
        draft = await stream.until(
            lambda s: next((d for k, d in s.events if k == "item" and d["draft"] and d["role"] == "bot"), None),
            "a partial answer",
        )
        assert draft["text"].startswith("Hello") and draft["text"] != "Hello from the bot."
        seen_partial.set()
        final = await stream.until(
            lambda s: next(
                (i for i in s.items().values() if i["text"] == "Hello from the bot." and not i["draft"]), None
            ),
            "the final answer",
        )
        assert final["ref"] == draft["ref"]  # the preview became the answer (edited in place)
    model.assert_complete()
    request = model.requests[0]
    assert request.messages[-1].text == "hi there"
    rows = await gateway.repos.console.conversation("web:alice", 10)
    assert [r[0] for r in rows] == ["user", "assistant"]


async def test_a_forged_press_is_refused_and_the_real_one_runs_the_tool_once(chat_env: ChatEnv) -> None:
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}), "Deleted /tmp/build."])
    gateway = await chat_env.start(model)
    alice, victor = await chat_env.client(gateway), await chat_env.client(gateway, "victor", VIEWER_PASSWORD)
    async with Stream(alice) as stream:
        assert (await send(alice, "@react delete the build cache"))[0] == 202
        prompt = await stream.until(stream.with_buttons(), "the confirmation")
        real = payload_of(prompt, "Approve")
        version, interrupt, nonce, choice = real.split(":")
        forged = f"{version}:{interrupt}:{'0' * len(nonce)}:{choice}"
        status, answer = await press(alice, forged, prompt["ref"])
        assert status == 409 and answer["ok"] is False and answer["error"]
        status, answer = await press(victor, real, prompt["ref"])  # a button of someone else's chat
        assert status == 409 and answer["ok"] is False
        async with victor.session.post(
            victor.base + "/web/talk/press", data={"csrf": "wrong", "payload": real}
        ) as response:
            assert response.status == 403
        await gateway.settled()
        assert chat_env.ran == [] and len(await gateway.runs.all_pending()) == 1
        assert (await press(alice, real, prompt["ref"]))[0] == 202
        await stream.until(stream.bot_says("Deleted /tmp/build."), "the tool's result")
        edited = stream.items()[prompt["ref"]]
        assert not edited["buttons"] and "Approved" in edited["text"]
        status, answer = await press(alice, real, prompt["ref"])  # used: refused, nothing runs again
        assert status == 409
    await gateway.settled()
    assert chat_env.ran == ["/tmp/build"]


async def test_files_go_in_and_out_and_only_to_their_owner(chat_env: ChatEnv) -> None:
    chat_env.configure(max_upload_mb=0.01)

    def acknowledge(request: ModelRequest) -> str:
        media = request.messages[-1].media
        return f"Got {media[0].name} ({media[0].size} bytes)." if media else "No file?"

    model = ScriptedModel([acknowledge, call("send_file", {"path": "report.txt"}), "Sent the report."])
    gateway = await chat_env.start(model)
    (chat_env.workspace() / "report.txt").write_text("quarterly numbers\n")
    alice, victor = await chat_env.client(gateway), await chat_env.client(gateway, "victor", VIEWER_PASSWORD)
    async with Stream(alice) as stream:
        status, answer = await send(alice, "here are my notes", ("notes.txt", b"remember the milk\n", "text/plain"))
        assert status == 202, answer
        await stream.until(stream.bot_says("Got notes.txt (18 bytes)."), "the bot's acknowledgement")
        upload = next(i for i in stream.items().values() if i["role"] == "user")
        uploaded = upload["files"][0]["id"]
        assert (await send(alice, "too big", ("big.bin", b"x" * 20_000, "application/octet-stream")))[0] == 413
        assert (await send(alice, "@react send me the report"))[0] == 202
        prompt = await stream.until(stream.with_buttons(), "send_file's confirmation")
        assert (await press(alice, payload_of(prompt, "Approve"), prompt["ref"]))[0] == 202
        sent = await stream.until(
            lambda s: next((i for i in s.items().values() if i["files"] and i["role"] == "bot"), None), "the file"
        )
    report = sent["files"][0]
    assert report["name"] == "report.txt"
    for file_id, content in ((uploaded, b"remember the milk\n"), (report["id"], b"quarterly numbers\n")):
        async with alice.session.get(f"{alice.base}/web/talk/files/{file_id}") as response:
            assert response.status == 200 and await response.read() == content
            assert response.headers["Content-Type"] == "application/octet-stream"
            assert response.headers["Content-Disposition"].startswith("attachment;")
        async with victor.session.get(f"{victor.base}/web/talk/files/{file_id}") as response:
            assert response.status == 404
    stranger = await chat_env.client(gateway, name="")
    status, _text, _r = await stranger.get(f"/web/talk/files/{uploaded}")
    assert status == 303  # to the sign-in page
    model.assert_complete()


async def test_history_and_a_pending_prompt_survive_a_restart(chat_env: ChatEnv) -> None:
    model = ScriptedModel(["Hi Alice.", call("delete_cache", {"path": "/tmp/old"}), "Deleted /tmp/old."])
    gateway = await chat_env.start(model)
    alice = await chat_env.client(gateway)
    async with Stream(alice) as stream:
        assert (await send(alice, "hello"))[0] == 202
        await stream.until(stream.bot_says("Hi Alice."), "the greeting")
        assert (await send(alice, "@react delete the old cache"))[0] == 202
        await stream.until(stream.with_buttons(), "the confirmation")
        before = stream.last_id
    await chat_env.stop(gateway)

    gateway = await chat_env.start(model)
    alice = await chat_env.client(gateway)
    async with Stream(alice, since=before) as stream:  # an id of the old process: the whole chat again
        prompt = await stream.until(stream.with_buttons(), "the confirmation, shown again")
        assert stream.events[0][0] == "reset"
        texts = [i["text"] for i in stream.items().values()]
        assert texts[:3] == ["hello", "Hi Alice.", "@react delete the old cache"], texts
        assert (await press(alice, payload_of(prompt, "Approve"), prompt["ref"]))[0] == 202
        await stream.until(stream.bot_says("Deleted /tmp/old."), "the tool's result")
    assert chat_env.ran == ["/tmp/old"]
    model.assert_complete()


async def test_console_admins_are_admins_in_their_chat_viewers_are_not(chat_env: ChatEnv) -> None:
    gateway = await chat_env.start(ScriptedModel([]))
    alice, victor = await chat_env.client(gateway), await chat_env.client(gateway, "victor", VIEWER_PASSWORD)
    async with Stream(alice) as mine, Stream(victor) as theirs:
        assert (await send(alice, "/routing"))[0] == 202
        assert (await send(victor, "/routing"))[0] == 202
        await theirs.until(theirs.bot_says("/routing is for admins only"), "the viewer's refusal")
        shown = await mine.until(lambda s: next((i for i in s.items().values() if i["role"] == "bot"), None), "routing")
        assert "admins only" not in shown["text"]
        assert all("/routing is for admins only" not in i["text"] for i in mine.items().values())
