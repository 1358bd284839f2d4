"""The inbound pipeline: its stages listed in one place, what each one ends, the one access policy, the console's
answer awaited through a future the handling commit resolves, and a forged press refused once."""

from __future__ import annotations

import asyncio
from typing import Any

from agents.models.scripted import ScriptedModel
from bot.access import AccessPolicy
from bot.events import Action, Attachment, ChatKey, ConsoleInput, InboundMessage, Sender, event_key
from bot.gateway.pipeline import Arrival, AsRequest
from bot.gateway.settled import HandledEvents
from bot.gateway.stages import Media
from bot.inbox import Receipt
from bot.interrupts.text import encode_payload
from tests.helpers.confirm import DELETE, Counter, confirm_harness
from tests.waiting import CEILING_S

WEB = {"enabled": True, "token": "console-admin-token-0123456789"}


async def test_the_stages_are_listed_in_one_place_in_the_order_events_meet_them(
    make_harness: Any, scripted: Any
) -> None:
    h = await make_harness(scripted())
    pipeline = h.gateway.supervisor.pipeline
    assert pipeline.names == ["identify", "access", "addressed", "command", "media", "pending", "route", "run"]
    # The last three run as the chat's request (/cancel stops them): one wrapping stage holds them.
    request = pipeline.stages[-1]
    assert isinstance(request, AsRequest)
    assert [stage.name for stage in request.stages] == ["pending", "route", "run"]


async def test_each_stage_ends_the_events_it_is_for_one_way(make_harness: Any, scripted: Any) -> None:
    counter = Counter()
    model = ScriptedModel([DELETE, "Deleted."])
    h = await confirm_harness(make_harness, model, counter, allow=["u1", "u2"])
    supervisor = h.gateway.supervisor
    group = ChatKey(channel="console", chat_id="group")
    # Strangers and bots are refused at the door; the supervisor meets them only after a configuration change.
    await supervisor.handle(h.message("hello", user="stranger"))
    await supervisor.handle(h.message("  "))
    await h.say("chatter in a group", chat=group, is_direct=False)
    assert await h.say("/whoami") != []
    assert await h.say("@reakt hi") == ["There is no agent @reakt. Did you mean @react? (/agents lists them)"]
    await h.say("@react delete the build cache")  # routed and run: it pauses for a confirmation
    assert "waiting for an answer" in (await h.say("me too", user="u2"))[-1]
    await h.click("Approve")
    assert counter.runs == ["delete /tmp/build"]
    assert supervisor.pipeline.outcomes == {
        "access:ignored": 1,
        "addressed:ignored": 2,
        "command:answered": 1,
        "route:answered": 1,
        "run:handled": 1,
        "pending:answered": 1,
        "pending:handled": 1,
    }
    for key in ("console:m1", "console:m2"):  # what the stages ignored is marked handled all the same
        assert await h.gateway.store.event_status(key) == "done"


async def test_media_off_a_file_without_text_says_what_arrived() -> None:
    location = Attachment(kind="location", ref="52.5,13.4")
    event = InboundMessage(
        id="m1", chat=ChatKey(channel="console", chat_id="c"), sender=Sender(id="u"), text="", attachments=(location,)
    )
    turn = Arrival.of(event)
    assert await Media(None, desk=None)(turn) is None  # type: ignore[arg-type]
    assert isinstance(turn.event, InboundMessage)
    assert turn.event.text == "(sent location without text; location: 52.5,13.4)"


async def test_one_access_policy_decides_who_may_act(make_settings: Any) -> None:
    settings = make_settings(
        channels={"console": {"enabled": True, "allow_from": ["ann"], "admins": ["root"]}},
        web={**WEB, "users": []},
    )
    policy = AccessPolicy(settings.channels, settings.web)
    chat = ChatKey(channel="console", chat_id="c")

    def said(user: str, *, admin: bool = False) -> InboundMessage:
        return InboundMessage(id="m", chat=chat, sender=Sender(id=user, is_admin=admin), text="hi")

    ann, claimed = await policy.admit(said("ann")), await policy.admit(said("bob", admin=True))
    assert ann.allowed and not ann.sender.is_admin
    assert not claimed.allowed and not claimed.sender.is_admin, "admin rights never come from the platform"
    root = await policy.admit(said("root"))
    assert root.allowed and root.sender.is_admin
    assert policy.is_admin_account("console:root") and not policy.is_admin_account("slack:root")
    unknown = ChatKey(channel="nowhere", chat_id="c")
    assert not (await policy.admit(said("ann").model_copy(update={"chat": unknown}))).allowed
    web = Action(id="w", chat=chat, sender=Sender(id="x"), payload="p", console=ConsoleInput(user="token"))
    admitted = await policy.admit(web)
    assert admitted.allowed and admitted.sender.id == "web:token" and admitted.sender.is_admin
    nobody = web.model_copy(update={"console": ConsoleInput(user="mallory")})
    assert not (await policy.admit(nobody)).allowed
    for event in (said("ann"), said("root"), said("bob", admin=True), web, nobody):  # the intake's question
        assert await policy.allows_event(event) == (await policy.admit(event)).allowed
    assert policy.may_answer("ann", ann.sender) and policy.may_answer("ann", root.sender)
    assert not policy.may_answer("ann", Sender(id="bob"))


async def test_handled_events_resolve_only_what_is_awaited() -> None:
    handled = HandledEvents()
    handled.handled("nobody-waits")  # nothing kept
    future = handled.expect("k")
    assert not await handled.wait(future, "k", 0.01)
    future = handled.expect("k")
    handled.handled("k")
    assert await handled.wait(future, "k", CEILING_S)
    assert handled._waiting == {}


async def test_a_console_answer_goes_through_the_inbox_and_its_future_resolves_at_the_handling_commit(
    make_harness: Any,
) -> None:
    counter = Counter()
    release = asyncio.Event()

    async def after_the_tool(_request: Any) -> str:
        await release.wait()
        return "Deleted."

    h = await confirm_harness(
        make_harness, ScriptedModel([DELETE, after_the_tool]), counter, web=WEB, http={"enabled": True, "port": 0}
    )
    await h.say("@react delete the build cache")
    row = await h.gateway.runs.pending(str(h.chat()))
    assert row is not None
    action = Action(
        id="web-1",
        chat=h.chat(),
        sender=Sender(id="web:token"),
        payload=encode_payload(row.id, row.nonce, "a"),
        console=ConsoleInput(user="token"),
    )
    accepted = h.gateway.inbox.stats.accepted
    assert h.gateway.handled is not None
    future = h.gateway.handled.expect(event_key(action))
    assert await h.gateway.inbox.submit(action) is Receipt.ACCEPTED
    assert h.gateway.inbox.stats.accepted == accepted + 1, "through the inbox like any press"
    await asyncio.wait_for(asyncio.shield(future), CEILING_S)
    # Resolved by the commit, before the run it resumed has finished (its model call still waits).
    answered = await h.gateway.runs.get_interrupt(row.id)
    assert answered is not None and answered.status == "resolved" and answered.resolved_by == "web:token"
    assert await h.gateway.store.event_status("console:web-1") == "done"
    assert "Deleted." not in h.channel.texts()
    release.set()
    await asyncio.wait_for(h.gateway.bus.join(), CEILING_S)
    assert h.channel.texts()[-1] == "Deleted." and counter.runs == ["delete /tmp/build"]


async def test_a_forged_press_is_refused_once(make_harness: Any) -> None:
    counter = Counter()
    h = await confirm_harness(make_harness, ScriptedModel([DELETE, "Deleted."]), counter)
    await h.say("@react delete the build cache")
    row = await h.gateway.runs.pending(str(h.chat()))
    assert row is not None
    forged = h.press(encode_payload(row.id, "forged-nonce", "a"), id="f1")
    assert await h.gateway.inbox.check_press(forged) == "This request is no longer pending."  # the toast
    assert await h.send(forged) == ["This request is no longer pending."]
    assert await h.send(forged) == [], "a redelivery is a duplicate: refused once"
    assert counter.runs == [] and (await h.gateway.runs.pending(str(h.chat()))) is not None
    assert await h.click("Approve") and counter.runs == ["delete /tmp/build"]
