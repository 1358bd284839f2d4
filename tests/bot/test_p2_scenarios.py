"""The design's four P2 acceptance scenarios, run as written with the project's files (``tests/data/p2-design``: the
design's debug-analyzer → code-fixer → code-reviewer, its analyzer, and its ``debug-flow`` graph), through the real
gateway, the built-in file tools on a real workspace, and a scripted model:

1. auto-routing: "There's a bug in the login flow" → ``🤖 Auto-routing to: debug-analyzer (matched: bug)``;
2. handoffs: ``bot agents run debug-analyzer -p "Fix this bug"`` prints ``[debug-analyzer] …``, ``✓ …``,
   ``🔄 Handoff: debug-analyzer → code-fixer`` … ``✓`` the reviewer's verdict;
3. guardrails: ``bot agents run analyzer -p "Analyze this"`` prints the violation, the policy, the repair;
4. tracing: ``--trace`` prints the model, tokens, tool input and output, the handoff's reason and payload — and
   ``/trace``, ``bot trace``, the replay and the web console's timeline show the same steps;
and the debug-flow graph takes both of its branches.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel, call
from bot.cli.run import run_once
from bot.cli.traces import print_trace
from bot.tracing.replay import replay
from bot.web.data import timeline as web_timeline
from tests.helpers.p2_chain import ANALYSIS, AUTH_TS, FIX, FIXED_TS, VERDICT, the_chain

DESIGN = Path(__file__).resolve().parents[1] / "data" / "p2-design"


@pytest.fixture
def design(tmp_path: Path) -> dict[str, Any]:
    """Settings overrides: the design's agents; the file tools' workspace (the data dir's) holds auth.ts."""
    shutil.copytree(DESIGN, tmp_path / "agents")
    workspace = tmp_path / "data" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "auth.ts").write_text(AUTH_TS)
    return {"agents": {"dirs": [str(tmp_path / "agents")]}}


def workspace_file(design: dict[str, Any]) -> Path:
    return Path(design["agents"]["dirs"][0]).parent / "data" / "workspace" / "auth.ts"


def in_order(text: str, *parts: str) -> None:
    at = 0
    for part in parts:
        found = text.find(part, at)
        assert found >= 0, f"{part!r} not after position {at} in:\n{text}"
        at = found + len(part)


async def run(make_settings: Any, design: dict[str, Any], model: ScriptedModel, *args: str, **kw: Any) -> str:
    settings = make_settings(channels={"console": {"enabled": True, "streaming": False}}, **design)
    out = io.StringIO()
    code = await run_once(settings, *args, stdout=out, stdin=io.StringIO(), model=model, **kw)
    model.assert_complete()
    assert code == 0, out.getvalue()
    return out.getvalue()


async def test_scenario_1_auto_routing_names_the_trigger(make_harness: Any, design: dict[str, Any]) -> None:
    model = ScriptedModel(['{"can_auto_fix": false, "needs_human": true, "cause": "the session store is down"}'])
    # The defaults (the classifier, hybrid) without the sentence encoder: the design's strong-priority trigger rule.
    routing = {"strategy": "hybrid", "rule": {"learned": True, "meaning": False}}
    h = await make_harness(model, admins=["u1"], routing=routing, **design)
    replies = await h.say("There's a bug in the login flow")
    assert replies[0] == "🤖 Auto-routing to: debug-analyzer (matched: bug)", replies
    assert "the session store is down" in replies[-1]
    assert len(model.requests) == 1, "hybrid took the strong trigger without asking the model to route"
    shown = (await h.say("/routing"))[0]
    assert "Last message here: debug-analyzer (rule, matched: bug)" in shown
    assert "rule.strong_priority = 80" in shown and "rule.classifier_sure = 0.99" in shown
    dry = (await h.say("/route There's a bug in the login flow"))[0]
    assert "agent: debug-analyzer" in dry and "matched: bug (strong priority)" in dry
    plain = await h.say("Show me the last 10 lines of error.log.")
    assert not plain[0].startswith("🤖"), "a prototypical tool request stays with the built-in react agent"


async def test_scenario_2_the_handoff_chain_from_the_terminal(make_settings: Any, design: dict[str, Any]) -> None:
    out = await run(make_settings, design, ScriptedModel(the_chain()), "debug-analyzer", "Fix this bug")
    in_order(
        out,
        '[debug-analyzer] read_file {"path": "auth.ts"}',
        "  → export function login(user) { return user.name.trim(); }",
        "✓ Found issue: null pointer in auth.ts:45",
        "[debug-analyzer] Calling transfer_to_code_fixer",
        "🔄 Handoff: debug-analyzer → code-fixer",
        '  Payload: {"analysis": {"can_auto_fix": true',
        "[code-fixer] write_file",
        "✓ Added null check",
        "[code-fixer] Calling transfer_to_code_reviewer",
        "🔄 Handoff: code-fixer → code-reviewer",
        "✓ Guardrail valid-json-output passed",
        f"✓ {VERDICT}",
    )
    assert "🔀" not in out, "the chat's handoff notices are said once, as step lines"
    assert workspace_file(design).read_text() == FIXED_TS, "the fix was really written"


async def test_scenario_3_a_guardrail_violation_is_repaired(make_settings: Any, design: dict[str, Any]) -> None:
    first = '{"analysis": "login dereferences user", "suggestions": "add a guard"}'
    model = ScriptedModel([first, '{"analysis": "x", "confidence": 0.8}'])
    out = await run(make_settings, design, model, "analyzer", "Analyze this")
    in_order(
        out,
        "✗ Guardrail violation: valid-json-output",
        "  - missing required field: confidence",
        "  - invalid type for suggestions: expected array, got string",
        "Policy: repair",
        "🔧 Repairing output with the model…",
        "✓ Repaired output passes validation",
        '✓ {"analysis": "x", "confidence": 0.8}',
    )
    repair = model.requests[1].messages[-1].text or ""
    assert "missing required field: confidence" in repair, "the model is told what the design says"


async def test_scenario_4_the_trace_shows_model_tokens_tools_and_payloads(
    make_settings: Any, design: dict[str, Any]
) -> None:
    out = await run(make_settings, design, ScriptedModel(the_chain()), "debug-analyzer", "Fix bug", trace=True)
    in_order(
        out,
        "[Trace] llm (debug-analyzer) - ",
        "  Model: scripted",
        "  Tokens: 1,234 → 567",
        "[Trace] tool (debug-analyzer) - ",
        "  Tool: read_file",
        '  Input: {"path": "auth.ts"}',
        "  Output: export function login(user) { return user.name.trim(); }",
        "[Trace] handoff (debug-analyzer → code-fixer)",
        "  Reason: Found issue: null pointer in auth.ts:45",
        '  Payload: {"analysis": {"can_auto_fix": true, "needs_human": false, "file": "auth.ts", "line": 45',
        "[Trace] tool (code-fixer)",
        "  Tool: write_file",
        "[Trace] handoff (code-fixer → code-reviewer)",
        '  Payload: {"fix": {"applied": true, "files": ["auth.ts"], "summary": "null check"}}',
        "[Trace] guardrail (code-reviewer)",
        f"✓ {VERDICT}",
    )


async def test_one_presentation_in_chat_shell_replay_and_console(
    make_harness: Any, design: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The chain of scenario 2 in a chat, with a repaired guardrail at the end: /trace (one line per step, tool input
    and output, payloads, the repair), ``bot trace`` and the replay (every field), the web console's timeline."""
    script = [*the_chain()[:-1], '{"verdict": "approve"}', VERDICT]
    h = await make_harness(ScriptedModel(script), **design)
    await h.say("@debug-analyzer Fix this bug")
    compact = (await h.say("/trace"))[0]
    in_order(
        compact,
        "🔧 debug-analyzer: read_file (",
        'input {"path": "auth.ts"}; output export function login(user) { return user.name.trim(); }',
        '🔀 debug-analyzer → code-fixer: Found issue: null pointer in auth.ts:45 — payload {"analysis"',
        "🛡 code-reviewer: valid-json-output repaired — violations missing required field: summary; repair 1 attempt",
    )
    events = (await h.gateway.tracing.runs(str(h.chat())))[0]
    full = replay(events)
    in_order(
        full,
        "🔧 debug-analyzer: read_file",
        '  Input: {"path": "auth.ts"}',
        "  Output: export function login(user)",
        "🔀 debug-analyzer → code-fixer",
        '  Payload: {"analysis": {"can_auto_fix": true',
        "🛡 code-reviewer: valid-json-output repaired",
        "  Policy: repair",
        "  Violations: missing required field: summary",
        "  Repair: 1 attempt",
        "Tools: 2 tool calls",
    )
    assert await print_trace(h.gateway.settings, str(h.chat()), 1, as_json=False) == 0
    shell = capsys.readouterr().out
    assert '  Input: {"path": "auth.ts"}' in shell and "  Violations: missing required field: summary" in shell
    page = web_timeline(events)
    tool = next(row for row in page if row["type"] == "tool_call")
    assert 'Input: {"path": "auth.ts"}' in tool["detail"] and "Output: export function login" in tool["detail"]


async def test_the_debug_flow_graph_takes_both_branches(make_harness: Any, design: dict[str, Any]) -> None:
    """The design's edges as written: analyzer → fixer [if analysis.can_auto_fix], fixer → reviewer [if fix.applied],
    analyzer → END [if analysis.needs_human]; a node's answer lands under its state key (analysis, fix)."""
    fixing = ScriptedModel(
        [
            call("read_file", {"path": "auth.ts"}, id="r1"),
            json.dumps(ANALYSIS),
            call("write_file", {"path": "auth.ts", "content": FIXED_TS}, id="w1"),
            json.dumps(FIX),
            lambda request: VERDICT if '"fix": {"applied": true' in (request.system or "") else "no fix in the state",
        ]
    )
    h = await make_harness(fixing, **design)
    replies = await h.say("@debug-flow the login crashes with a null user")
    assert "🧭 debug-flow: analyzer → fixer" in replies and "🧭 debug-flow: fixer → reviewer" in replies
    assert replies[-1] == VERDICT
    events = (await h.gateway.tracing.runs(str(h.chat())))[0]
    steps = [(e.data["node"], e.data["to"], e.data.get("when")) for e in events if e.type == "graph"]
    assert steps == [
        ("analyzer", "fixer", "analysis.can_auto_fix"),
        ("fixer", "reviewer", "fix.applied"),
        ("reviewer", "END", ""),
    ]
    assert "🧭 debug-flow: analyzer → fixer (analysis.can_auto_fix)" in replay(events)

    human = ScriptedModel(['{"can_auto_fix": false, "needs_human": true, "cause": "needs a schema migration"}'])
    await h.restart(human)
    replies = await h.say("@debug-flow the nightly import fails")
    assert replies == ['{"can_auto_fix": false, "needs_human": true, "cause": "needs a schema migration"}']
    events = (await h.gateway.tracing.runs(str(h.chat())))[0]
    assert [(e.data["node"], e.data["to"]) for e in events if e.type == "graph"] == [("analyzer", "END")]
