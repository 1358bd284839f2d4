"""Routing in the gateway and the admin commands: /strategy, /routing, /route, /reload, /agents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agents.models.scripted import ScriptedModel, call

DEV = Path(__file__).resolve().parents[1] / "data" / "routing-dev.tsv"  # a copy of shared/routing-dev.tsv


async def test_explicit_agent_and_auto(make_harness: Any) -> None:
    model = ScriptedModel(["chat answer", call("transfer_to_plan"), "not a plan", "still not a plan"])
    h = await make_harness(model, routing={"strategy": "rule"}, plan={"approval": "never"})
    assert await h.say("@chat what time is it") == ["chat answer"], "@chat wins over the rules"
    assert model.requests[0].messages[-1].text == "what time is it", "the @name prefix is stripped"
    # @auto --strategy=llm asks the model which agent; here it picks plan, whose planner then fails clearly.
    out = await h.say("@auto --strategy=llm organise things")
    assert model.requests[1].tools and model.requests[1].tools[0].name.startswith("transfer_to_")
    assert "could not make a plan" in out[-1]


async def test_unknown_at_word_is_plain_text(make_harness: Any) -> None:
    model = ScriptedModel(["hello alice"])
    h = await make_harness(model)
    assert await h.say("@alice says hi") == ["hello alice"]
    assert model.requests[0].messages[-1].text == "@alice says hi"


async def test_notify_line_and_prompt_user_fallback(make_harness: Any) -> None:
    model = ScriptedModel(["it is noon"])
    h = await make_harness(model, routing={"strategy": "rule", "notify": True, "fallback": "prompt_user"})
    out = await h.say("what time is it")
    assert out[0] == "🤖 Auto-routing to: react (matched: time)" and out[-1] == "it is noon"
    listed = await h.say("zzz qqq")
    assert "@react" in listed[0] and "@plan" in listed[0]


async def test_fallback_none_stays_silent(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), routing={"strategy": "rule", "fallback": "none"})
    assert await h.say("zzz qqq") == []


async def test_strategy_per_chat_and_global_persist_and_audit(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), admins=["boss"])
    assert "rule" in (await h.say("/strategy", user="boss"))[0]
    assert "for admins only" in (await h.say("/strategy llm", user="u1"))[0]
    assert "this chat set to llm" in (await h.say("/strategy llm", user="boss"))[0]
    assert "set to hybrid" in (await h.say("/strategy hybrid --global", user="boss"))[0]
    other = h.chat("other")
    assert "hybrid (from admin (global))" in (await h.say("/strategy", user="boss", chat=other))[0]
    assert "llm (from this chat (admin))" in (await h.say("/strategy", user="boss"))[0]
    assert "Usage" in (await h.say("/strategy magic", user="boss"))[0]
    await h.restart(ScriptedModel([]), None)
    assert "llm (from this chat (admin))" in (await h.say("/strategy", user="boss"))[0]
    assert "now hybrid" in (await h.say("/strategy reset", user="boss"))[0]
    audit = await h.gateway.runs.audit_log()
    assert [(a["actor"], a["scope"], a["name"], a["old"], a["new"]) for a in reversed(audit)] == [
        ("boss", "console:c1", "strategy", None, "llm"),
        ("boss", "*", "strategy", None, "hybrid"),
        ("boss", "console:c1", "strategy", "llm", None),
    ]


async def test_routing_show_set_validate(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), admins=["boss"])
    shown = (await h.say("/routing", user="boss"))[0]
    assert "rule.confidence_threshold = 0.8 - default" in shown
    assert "strategy = rule - override" in shown
    assert "Invalid value" in (await h.say("/routing set rule.confidence_threshold 300", user="boss"))[0]
    assert "Unknown routing key" in (await h.say("/routing set colour blue", user="boss"))[0]
    assert "Unknown agent" in (await h.say("/routing set default_agent ghost", user="boss"))[0]
    assert "set to 0.55" in (await h.say("/routing set rule.confidence_threshold 55", user="boss"))[0], "a percentage"
    assert "set to 0.6" in (await h.say("/routing set rule.confidence_threshold 0.6", user="boss"))[0]
    assert "set to on" in (await h.say("/routing set notify true", user="boss"))[0]
    shown = (await h.say("/routing", user="boss"))[0]
    assert "rule.confidence_threshold = 0.6 - admin (global)" in shown and "notify = on - admin (global)" in shown
    assert "for admins only" in (await h.say("/routing", user="u1"))[0]
    assert "back to its configured value" in (await h.say("/routing reset notify", user="boss"))[0]


async def test_routing_speaks_people_s_words_not_python_s(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), admins=["boss"])
    shown = (await h.say("/routing", user="boss"))[0]
    assert "True" not in shown and "False" not in shown and "''" not in shown, shown
    assert "enabled = on - " in shown and "rule.meaning = off - " in shown  # the harness routes without the encoder
    assert "llm.model = (none: the main model) - " in shown and "llm.timeout_ms = 5000 - " in shown
    assert "rule.strong_priority = 80 - " in shown and "default_agent = chat - " in shown
    assert "notify set to off" in (await h.say("/routing set notify off", user="boss"))[0]
    assert (
        "llm.timeout_ms set to 2500 for every chat" in (await h.say("/routing set llm.timeout_ms 2500", user="boss"))[0]
    )
    assert "notify = off - admin (global)" in (await h.say("/routing", user="boss"))[0]


async def test_route_dry_run(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), admins=["boss"])
    out = (await h.say("/route read notes.txt please", user="boss"))[0]
    assert "agent: react" in out and "method: rule" in out and "keywords: read" in out and "patterns:" in out
    assert "latency:" in out
    assert await h.gateway.store.history(str(h.chat())) == [], "nothing ran"


async def test_reload_and_agents(make_harness: Any, tmp_path: Path) -> None:
    agents_dir = tmp_path / "agents"
    agents_dir.mkdir()
    h = await make_harness(ScriptedModel([]), admins=["boss"], agents={"dirs": [str(agents_dir)]})
    (agents_dir / "helper.md").write_text("---\nname: helper\ndescription: helps\n---\nI help.\n")
    (agents_dir / "broken.md").write_text("---\nname: broken\ncolour: red\n---\nx\n")
    out = (await h.say("/reload", user="boss"))[0]
    assert "helper" in out and "broken.md: colour: unknown field" in out
    listed = (await h.say("/agents"))[0]
    assert "@helper (react) - helps" in listed and "@chat" in listed


def test_route_cli_stdin_json_on_the_dev_file(tmp_path: Path) -> None:
    rows = [line.split("\t", 1) for line in DEV.read_text(encoding="utf-8").splitlines() if "\t" in line]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_"))}
    env["HOME"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "bot", "route", "--stdin", "--json", "--strategy", "rule"],
        input="\n".join(text for _, text in rows) + "\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == len(rows)
    assert {"text", "agent", "method", "strategy", "confidence", "matched_keywords", "matched_patterns"} <= set(out[0])
    assert {"latency_ms", "factors"} <= set(out[0]) and 0 <= out[0]["confidence"] <= 1
    assert {"classifier", "encoder"} <= set(out[0]["factors"]), out[0]["factors"]
    correct = sum(o["agent"] == label for o, (label, _) in zip(out, rows, strict=True))
    assert correct / len(rows) >= 0.9
