"""The web console over HTTP (an aiohttp client with a cookie jar, as a browser): access, CSRF, roles, audit,
answering requests raised in a loopback Telegram chat exactly once, edited arguments, plans, questions, routing."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import aiohttp

from agents.models.scripted import ScriptedModel, call, calls
from bot.events import ChatKey
from tests.helpers.graphs import files
from tests.helpers.plans import plan, respond
from tests.helpers.telegram import ALICE, approve
from tests.waiting import CEILING_S
from tests.web.harness import NONCE, Browserless, WebEnv, next_pending, pending_id


async def test_approve_in_the_console_runs_the_tool_once_and_edits_the_telegram_prompt(
    env: WebEnv, client_for: Callable[..., Browserless]
) -> None:
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}), "Deleted /tmp/build."])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@react delete the build cache"))
    ref, buttons = await env.prompt()
    web = client_for(gateway)
    assert await web.login() == 303
    status, text, _r = await web.get("/web/")
    assert "delete_cache" in text and "/tmp/build" in text and f"telegram:{ALICE}" in text
    interrupt = await pending_id(env)
    nonce = NONCE.search(text)
    assert nonce is not None
    status, _text, response = await web.post(f"/web/inbox/{interrupt}", {"nonce": nonce.group(1), "choice": "a"})
    assert status == 303 and response.headers["Location"] == f"/web/?done={interrupt}", re.findall(r"flash.*", _text)
    await env.reply("Deleted /tmp/build.")
    assert env.runs == ["/tmp/build"]
    assert any("Approved by alice (web)" in t for t in env.edited_texts())
    # The chat's button now is stale: pressing it runs nothing again.
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await gateway.settled()
    assert env.runs == ["/tmp/build"]
    done = await gateway.runs.get_interrupt(interrupt)
    assert done is not None and done.resolved_by == "web:alice"
    audit = await gateway.runs.audit_log()
    assert any(a["name"] == "web.tool_confirm" and a["new"] == "done" and a["actor"] == "web:alice" for a in audit)
    model.assert_complete()


async def test_a_press_in_telegram_first_refuses_the_console(
    env: WebEnv, client_for: Callable[..., Browserless]
) -> None:
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}), "Deleted."])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@react delete the build cache"))
    ref, buttons = await env.prompt()
    web = client_for(gateway)
    await web.login()
    text = (await web.get("/web/"))[1]
    nonce = NONCE.search(text)
    assert nonce is not None
    interrupt = await pending_id(env)
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await env.reply("Deleted.")
    status, text, _r = await web.post(f"/web/inbox/{interrupt}", {"nonce": nonce.group(1), "choice": "d"})
    assert status == 409 and f"already answered by {ALICE} in telegram" in text
    assert env.runs == ["/tmp/build"]
    audit = await gateway.runs.audit_log()
    assert any(a["name"] == "web.tool_confirm" and str(a["new"]).startswith("refused") for a in audit)


async def test_both_at_once_one_wins(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    """The console's press and the chat's arrive together: the chat's turn takes them one after the other."""
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/x"}), "Done."])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@react delete it"))
    ref, buttons = await env.prompt()
    web = client_for(gateway)
    await web.login()
    nonce = NONCE.search((await web.get("/web/"))[1])
    assert nonce is not None
    interrupt = await pending_id(env)
    env.fake.push(env.fake.press(ref, approve(buttons)))
    status, text, _r = await web.post(f"/web/inbox/{interrupt}", {"nonce": nonce.group(1), "choice": "a"})
    await env.reply("Done.")
    await gateway.settled()
    assert env.runs == ["/tmp/x"]
    row = await gateway.runs.get_interrupt(interrupt)
    assert row is not None
    if row.resolved_by == "web:alice":
        assert status == 303
    else:
        assert status == 409 and "already answered" in text


async def test_edit_arguments_rechecked_and_shown_in_the_chat_as_what_ran(
    env: WebEnv, client_for: Callable[..., Browserless]
) -> None:
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}, id="c1"), "Deleted the old cache."])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@react delete the build cache"))
    await env.prompt()
    web = client_for(gateway)
    await web.login()
    nonce = NONCE.search((await web.get("/web/"))[1])
    assert nonce is not None
    interrupt = await pending_id(env)
    form = {"nonce": nonce.group(1), "choice": "e"}
    status, text, _r = await web.post(f"/web/inbox/{interrupt}", {**form, "args:c1": "{not json"})
    assert status == 422 and "not JSON" in text
    status, text, _r = await web.post(f"/web/inbox/{interrupt}", {**form, "args:c1": '{"path": 7}'})
    assert status == 422 and "invalid arguments for delete_cache" in text and "7 is not of type" in text
    status, text, _r = await web.post(f"/web/inbox/{interrupt}", {**form, "args:c1": '{"path": "/tmp/x", "rm": 1}'})
    assert status == 422 and "Additional properties" in text
    assert (await gateway.runs.get_interrupt(interrupt)).status == "pending"  # type: ignore[union-attr]
    assert env.runs == []
    edited = json.dumps({"path": "/tmp/build/old", "keep_days": 7})
    status, _text, _r = await web.post(f"/web/inbox/{interrupt}", {**form, "args:c1": edited})
    assert status == 303
    await env.reply("Deleted the old cache.")
    assert env.runs == ["/tmp/build/old (keep 7 days)"]
    shown = "\n".join(env.edited_texts())
    assert "Approved by alice (web) with edited arguments" in shown
    assert 'delete_cache(path="/tmp/build/old", keep_days=7)' in shown, shown
    # The model is told the call it made is the edited one (and its result).
    last = model.requests[-1].messages
    made = [c for m in last for c in m.tool_calls]
    assert made[-1].args == {"path": "/tmp/build/old", "keep_days": 7}
    model.assert_complete()


async def test_the_console_offers_what_the_chat_does_one_call_of_two_and_always_allow(
    env: WebEnv, client_for: Callable[..., Browserless]
) -> None:
    model = ScriptedModel(
        [
            calls(("delete_cache", {"path": "/tmp/a"}, "c1"), ("delete_cache", {"path": "/tmp/b"}, "c2")),
            "Deleted b only.",
            call("delete_cache", {"path": "/tmp/c"}, id="c3"),
            "Deleted c.",
            call("delete_cache", {"path": "/tmp/d"}, id="c4"),
            "Deleted d without asking.",
        ]
    )
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@react delete a and b"))
    await env.prompt()
    web = client_for(gateway)
    await web.login()
    text = (await web.get("/web/"))[1]
    assert "Only 1: delete_cache" in text and "Only 2: delete_cache" in text and "Always allow delete_cache" in text
    [row] = await gateway.runs.all_pending()
    assert (await web.post(f"/web/inbox/{row.id}", {"nonce": row.nonce, "choice": "o2"}))[0] == 303
    await env.reply("Deleted b only.")
    assert env.runs == ["/tmp/b"]
    env.fake.push(env.fake.message("@react delete c"))
    row = await next_pending(gateway)
    assert (await web.post(f"/web/inbox/{row.id}", {"nonce": row.nonce, "choice": "g"}))[0] == 303
    await env.reply("Deleted c.")
    assert (await gateway.store.chat_settings(f"telegram:{ALICE}"))["grants"] == ["delete_cache"]
    assert any(a["name"] == "grants" and a["actor"] == "web:alice" for a in await gateway.runs.audit_log())
    env.fake.push(env.fake.message("@react delete d"))
    await env.reply("Deleted d without asking.")
    assert env.runs == ["/tmp/b", "/tmp/c", "/tmp/d"]
    model.assert_complete()


async def test_plans_and_questions_answered_in_the_console(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    model = ScriptedModel(
        [
            plan("Pick a date", "Book a venue"),
            plan("Pick a date", "Book a bigger venue"),
            call("ask_user", {"question": "Which city?", "choices": ["Paris", "Rome"]}, id="q1"),
            "Rome it is.",
            "Booked.",
            respond("Offsite: Rome, booked."),
        ]
    )
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@plan Plan my team offsite"))
    await env.prompt()
    web = client_for(gateway)
    await web.login()
    text = (await web.get("/web/"))[1]
    assert "Book a venue" in text and "Approve" in text
    nonce = NONCE.search(text)
    assert nonce is not None
    interrupt = await pending_id(env)
    assert (await web.post(f"/web/inbox/{interrupt}", {"nonce": nonce.group(1), "choice": "edit"}))[0] == 422
    status, _t, _r = await web.post(
        f"/web/inbox/{interrupt}", {"nonce": nonce.group(1), "choice": "edit", "text": "a bigger venue please"}
    )
    assert status == 303
    # The revised plan waits again; approve it.
    for _ in range(100):
        rows = await gateway.runs.all_pending()
        if rows and rows[0].id != interrupt:
            break
        await asyncio.sleep(0.05)
    text = (await web.get("/web/"))[1]
    assert "Book a bigger venue" in text
    interrupt = await pending_id(env)
    nonce = NONCE.search(text)
    assert nonce is not None
    assert (await web.post(f"/web/inbox/{interrupt}", {"nonce": nonce.group(1), "choice": "approve"}))[0] == 303
    for _ in range(100):
        rows = await gateway.runs.all_pending()
        if rows and rows[0].kind == "ask_user":
            break
        await asyncio.sleep(0.05)
    text = (await web.get("/web/"))[1]
    assert "Which city?" in text and "Paris" in text
    interrupt = await pending_id(env)
    nonce = NONCE.search(text)
    assert nonce is not None
    status, _t, _r = await web.post(
        f"/web/inbox/{interrupt}", {"nonce": nonce.group(1), "choice": "answer", "text": "Rome"}
    )
    assert status == 303
    await env.reply("Offsite: Rome, booked.")
    answered = [m for r in model.requests for m in r.messages for res in m.tool_results if res.content == "Rome"]
    assert answered
    model.assert_complete()


async def test_routing_switch_audited_and_the_dry_run(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    gateway = await env.start(ScriptedModel([]))
    web = client_for(gateway)
    await web.login()
    status, text, _r = await web.get("/web/routing")
    assert status == 200 and "strategy" in text and "rule.confidence_threshold" in text
    status, text, _r = await web.post("/web/routing/strategy", {"scope": "*", "strategy": "hybrid"})
    assert status == 200 and "Strategy globally: hybrid" in text
    chat = f"telegram:{ALICE}"
    status, text, _r = await web.post("/web/routing/strategy", {"scope": chat, "strategy": "llm"})
    assert status == 200 and f"{chat}</code>: llm" in text
    assert (await web.post("/web/routing/strategy", {"scope": chat, "strategy": "magic"}))[0] == 422
    assert (await web.post("/web/routing/strategy", {"scope": "nonsense", "strategy": "llm"}))[0] == 422
    assert (await gateway.store.chat_settings("*"))["strategy"] == "hybrid"
    assert (await gateway.store.chat_settings(chat))["strategy"] == "llm"
    audit = await gateway.runs.audit_log()
    assert [(a["scope"], a["new"]) for a in audit if a["name"] == "strategy"] == [(chat, "llm"), ("*", "hybrid")]
    assert all(a["actor"] == "web:alice" for a in audit if a["name"] == "strategy")
    status, text, _r = await web.post("/web/routing/dry-run", {"text": "@plan organise a trip", "chat": chat})
    assert status == 200 and "→ plan" in text and "method explicit" in text
    assert (await web.post("/web/routing/dry-run", {"text": ""}))[0] == 422


async def test_chats_conversation_trace_agents_and_health(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}), "Deleted /tmp/build."])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@react delete the build cache"))
    ref, buttons = await env.prompt()
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await env.reply("Deleted /tmp/build.")
    await gateway.settled()
    web = client_for(gateway)
    await web.login()
    chat = f"telegram:{ALICE}"
    status, text, _r = await web.get("/web/chats")
    assert status == 200 and chat in text
    assert chat in (await web.get("/web/chats?q=build+cache"))[1]
    assert "No chat matches" in (await web.get("/web/chats?q=nothing-like-this"))[1]
    status, text, _r = await web.get(f"/web/chats/{chat}")
    assert status == 200 and "delete the build cache" in text and "Deleted /tmp/build." in text
    run_id = re.search(r'/web/runs/([A-Za-z0-9]+)"', text)
    assert run_id is not None
    status, text, _r = await web.get(f"/web/runs/{run_id.group(1)}")
    assert status == 200
    for kind in ("route", "llm_call", "interrupt", "tool_call", "run"):
        assert f'data-type="{kind}"' in text, kind
    assert "/tmp/build" in text
    assert (await web.get("/web/runs/nosuchrun"))[0] == 404
    status, text, _r = await web.get("/web/agents")
    assert status == 200 and "@react" in text and "delete_cache" in text and "defaults/agents/react.md" in text
    status, text, _r = await web.get("/web/health")
    assert status == 200 and "telegram" in text and "Requests waiting on a person" in text
    assert "injected" in text  # the model's calls by provider
    model.assert_complete()


async def test_agents_page_draws_a_graph_and_names_broken_files(
    env: WebEnv, client_for: Callable[..., Browserless], tmp_path: Path
) -> None:
    folder = files(tmp_path)
    (folder / "broken.md").write_text("---\nname: broken\nrunner: react\ntools: {allow: 5}\n---\nx\n")
    env.configure_web(agents_dir=str(folder))
    gateway = await env.start(ScriptedModel([]))
    web = client_for(gateway)
    await web.login()
    status, text, _r = await web.get("/web/agents")
    assert status == 200 and "@debug-flow" in text and "broken.md" in text
    graph = text[text.index('id="agent-debug-flow"') :]
    assert "<svg" in graph and "analyze: analyzer" in graph and "review.answer == &#39;again&#39;" in graph
    assert "flowchart TD" in graph  # the Mermaid text beside the drawing
    assert "Finds the cause of a failure." in text and "inspect" in text


async def test_live_updates_over_server_sent_events(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}), "Deleted."])
    gateway = await env.start(model)
    web = client_for(gateway)
    await web.login()
    async with web.session.get(web.base + "/web/events", timeout=aiohttp.ClientTimeout(total=20)) as stream:
        assert stream.status == 200 and stream.headers["Content-Type"].startswith("text/event-stream")
        env.fake.push(env.fake.message("@react delete the build cache"))
        seen = b""
        async with asyncio.timeout(CEILING_S):
            while b"event: inbox" not in seen:
                seen += await stream.content.readany()
    ref, buttons = await env.prompt()
    status, text, _r = await web.get("/web/inbox/items")
    assert status == 200 and 'class="card pending"' in text
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await env.reply("Deleted.")


def test_the_console_benchmark_runs_and_prints_one_json_line() -> None:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "bench/console.py", "--pending", "5", "--answers", "3"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["pending"] == 5 and figures["answers"]["count"] == 3


async def test_a_run_s_message_re_routed_from_its_trace(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    """The run page's *Re-route* button makes the routed message an example of another agent (as /route AGENT)."""
    model = ScriptedModel(["some answer", "the planner's answer"])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("sort out the offsite for the team"))
    await env.reply("some answer")
    await gateway.settled()
    web = client_for(gateway)
    await web.login()
    chat = f"telegram:{ALICE}"
    _s, text, _r = await web.get(f"/web/chats/{chat}")
    run_id = re.search(r'/web/runs/([A-Za-z0-9]+)"', text)
    assert run_id is not None
    status, text, _r = await web.get(f"/web/runs/{run_id.group(1)}")
    assert status == 200 and "sort out the offsite for the team" in text and "Re-route" in text
    assert (await web.post(f"/web/runs/{run_id.group(1)}/reroute", {"agent": "ghost"}))[0] == 422
    status, text, _r = await web.post(f"/web/runs/{run_id.group(1)}/reroute", {"agent": "plan"})
    assert status == 200 and "now an example of @plan" in text, text
    [stored] = await gateway.routes.corrections()
    assert (stored.agent, stored.text) == ("plan", "sort out the offsite for the team")
    audit = await gateway.runs.audit_log()
    assert (audit[0]["scope"], audit[0]["name"]) == ("routing:corrections", stored.id)
    decision = await gateway.routes.decide(ChatKey(channel="telegram", chat_id=str(ALICE)), "sort out the offsite")
    assert decision.agent != "plan", "not this message: the correction is of the routed one"
    decision = await gateway.routes.decide(ChatKey(channel="telegram", chat_id=str(ALICE)), stored.text)
    assert decision.agent == "plan" and decision.factors["correction"]["id"] == stored.id
