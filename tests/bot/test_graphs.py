"""Agent graphs (``runner: graph``): the seed's debug flow (analyzer → fixer → reviewer, END when a human is
needed) with a scripted model: both branches, a confirmation inside the fixer across a restart, the step cap,
the replay of the finished request, and the errors a broken graph file gets at load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel, call
from agents.spec import SpecFileError, parse_agent_text
from agents.tools.base import Tool, tool
from bot.runs.catalog import AgentCatalog
from bot.tracing.replay import replay
from tests.helpers.graphs import ANALYZER, FLOW, REVIEWER, files
from tests.helpers.handoffs import write_agents


def toolbox(ran: list[str]) -> list[Tool]:
    @tool(risk="safe")
    async def inspect(path: str) -> str:
        """Look at a file."""
        return "line 3: foo = None; foo.bar()"

    @tool(risk="medium", confirm=True)
    async def patch(path: str, change: str) -> str:
        """Change a file."""
        ran.append(f"patch {path}")
        return "patched"

    return [inspect, patch]


def verdict(**fields: Any) -> str:
    return json.dumps({"cause": "foo is None", **fields})


async def test_a_failure_that_needs_a_human_ends_after_the_analysis(make_harness: Any, tmp_path: Path) -> None:
    model = ScriptedModel([verdict(can_auto_fix=False, needs_human=True)])
    h = await make_harness(model, agents={"dirs": [str(files(tmp_path))]}, tools=toolbox([]))
    replies = await h.say("@debug-flow the import job fails every night")
    assert replies == [verdict(can_auto_fix=False, needs_human=True)], "the last node's answer ends the graph"
    assert "## Graph debug-flow" in (model.requests[0].system or "") and "node 'analyze'" in (
        model.requests[0].system or ""
    )
    await h.gateway.tracing.flush()
    [events] = await h.gateway.tracing.runs(str(h.chat()))
    [step] = [e for e in events if e.type == "graph"]
    assert (step.data["node"], step.data["to"], step.data["when"]) == ("analyze", "END", "analyze.needs_human")


async def test_the_fix_branch_confirms_inside_the_fixer_across_a_restart(make_harness: Any, tmp_path: Path) -> None:
    ran: list[str] = []

    def fixer_sees_the_analysis(request: ModelRequest) -> Any:
        assert '"analyze": {"cause": "foo is None", "can_auto_fix": true, "needs_human": false}' in (
            request.system or ""
        ), request.system
        return call("patch", {"path": "app.py", "change": "guard foo"}, id="p1")

    def reviewer_sees_the_fix(request: ModelRequest) -> str:
        assert '"fix": {"applied": true}' in (request.system or "")
        return "The guard is right; ship it."

    script = [
        call("inspect", {"path": "app.py"}, id="i1"),
        verdict(can_auto_fix=True, needs_human=False),
        fixer_sees_the_analysis,
    ]
    model = ScriptedModel(script)
    tools = toolbox(ran)
    h = await make_harness(model, agents={"dirs": [str(files(tmp_path))]}, tools=tools)
    replies = await h.say("@debug-flow the import job crashes on foo.bar()")
    assert "🧭 debug-flow: analyze → fix" in replies and ran == []
    assert "patch" in h.prompt().text, "the fixer's confirmation waits for the user"
    approve = h.payload("Approve")

    after = ScriptedModel(['{"applied": true}', reviewer_sees_the_fix])
    await h.restart(after, tools)
    replies = await h.send(h.press(approve))
    assert ran == ["patch app.py"], "approved once, run once, after the restart"
    assert "🧭 debug-flow: fix → review" in replies and replies[-1] == "The guard is right; ship it."
    after.assert_complete()
    model.assert_complete()

    history = await h.gateway.store.history(str(h.chat()))
    agents = [m.agent for m in history if m.role == "assistant" and m.text]
    assert agents == ["analyzer", "fixer", "reviewer"], "every node's turns are kept, in order"

    await h.gateway.tracing.flush()
    [events] = await h.gateway.tracing.runs(str(h.chat()))
    shown = replay(events)
    assert "🧭 debug-flow: analyze → fix (analyze.can_auto_fix)" in shown
    assert "🧭 debug-flow: fix → review (fix.applied)" in shown
    assert "Agents: analyzer → fixer → reviewer" in shown and "Status: done" in shown


async def test_a_cycle_stops_at_max_steps(make_harness: Any, tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            verdict(can_auto_fix=True, needs_human=False),
            '{"applied": true}',
            "again",
            '{"applied": true}',
        ]
    )
    h = await make_harness(model, agents={"dirs": [str(files(tmp_path, steps=4))]}, tools=toolbox([]))
    replies = await h.say("@debug-flow fix it until it is right")
    assert "⚠️ debug-flow stopped after 4 steps (its max_steps); this is the last answer." in replies
    assert replies[-1] == '{"applied": true}'


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (("entry: analyze", "entry: analyse"), "graph: entry: 'analyse' is not a node; did you mean 'analyze'?"),
        (
            ("to: review, when", "to: reveiw, when"),
            "edges[2].to: 'reveiw' is not a node or END; did you mean 'review'?",
        ),
        (("when: fix.applied", "when: fix.applied ="), "edges[2].when: unexpected '=' at character 13"),
        (("when: fix.applied", "when: fixx.applied"), "reads 'fixx', which is not a node; did you mean 'fix'?"),
        (("{from: fix, to: review, when: fix.applied}", "{from: fix, to: END}"), "review cannot be reached"),
        (("runner: graph", "runner: react"), "graph: is run by runner: graph, not react"),
    ],
)
def test_a_broken_graph_is_refused_at_load_saying_where(change: tuple[str, str], problem: str) -> None:
    text = FLOW.format(steps=6).replace(*change)
    with pytest.raises(SpecFileError) as caught:
        parse_agent_text(text, source="debug-flow.md")
    assert problem in str(caught.value), str(caught.value)


def test_a_graph_whose_node_agent_is_missing_is_skipped_with_the_reason(make_settings: Any, tmp_path: Path) -> None:
    folder = write_agents(tmp_path / "agents", {"analyzer": ANALYZER, "debug-flow": FLOW.format(steps=6)})
    settings = make_settings(agents={"dirs": [str(folder)]})
    catalog = AgentCatalog.load(settings.agents, settings.plan)
    assert "debug-flow" not in catalog.agents and "analyzer" in catalog.agents
    assert any("graph.nodes.fix: unknown agent 'fixer'" in e for e in catalog.errors), catalog.errors


def test_a_confirmation_inside_a_node_survives_a_sigkill(tmp_path: Path) -> None:
    """The gateway in a subprocess SIGKILLs itself as it sends the fixer's confirmation (checkpoint committed);
    the next one sends it, resumes inside the fixer on Approve, runs the tool once and finishes the graph."""
    from tests.helpers.crash_gateway import Gateway, approve_payload, count_lines

    flow = """---
name: flow
description: analyse, fix, review
runner: graph
graph:
  entry: analyze
  nodes: {analyze: analyzer, fix: fixer, review: reviewer}
  edges:
    - {from: analyze, to: fix, when: analyze.can_auto_fix}
    - {from: fix, to: review, when: fix.applied}
---
Analyse, fix, review.
"""
    fixer = "---\nname: fixer\nrunner: react\ntools: {allow: [delete_cache]}\n---\nYou fix.\n"
    analyzer = "---\nname: analyzer\nrunner: react\ntools: {allow: []}\n---\nYou analyse.\n"
    folder = write_agents(
        tmp_path / "agents", {"flow": flow, "fixer": fixer, "analyzer": analyzer, "reviewer": REVIEWER}
    )
    first = Gateway(tmp_path, CRASH_ON="prompt", AGENTS_DIR=str(folder))
    first.send(text="@flow the build cache is corrupt")
    assert first.killed() == -9
    second = Gateway(tmp_path, AGENTS_DIR=str(folder))
    try:
        prompt = second.expect(lambda m: bool(m.get("buttons")))
        assert "delete_cache" in prompt["text"]
        second.send(press=approve_payload(prompt))
        done = second.expect(lambda m: str(m.get("text", "")).startswith("reviewed: "))
        assert '"fix": {"applied": true}' in done["text"] and '"analyze": {"can_auto_fix": true' in done["text"]
        assert count_lines(tmp_path) == ["deleted /cache"], "run once, after the restart"
    finally:
        second.stop()
