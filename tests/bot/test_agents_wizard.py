"""`bot agents create --extended` writes every P2 field — trigger priority, a handoff's condition with its payload
schema, a guardrail's schema and policy, session keys, a graph with its state keys, traced events — and every file it
writes loads beside the other agents; at a terminal a part that would not load is asked again with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agents.spec import load_agents, parse_agent_text
from bot.cli.agents import agents_app

runner = CliRunner()
DESIGN = Path(__file__).resolve().parents[1] / "data" / "p2-design"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose agents dir holds the design's fixer and reviewer."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "config" / "agents"
    folder.mkdir(parents=True)
    for name in ("code-fixer", "code-reviewer"):
        shutil.copy(DESIGN / f"{name}.md", folder / f"{name}.md")
    return tmp_path


def loads(project: Path) -> dict[str, object]:
    registry = load_agents(None, None, [project / "config" / "agents"])
    assert not registry.errors, registry.errors
    return dict(registry.specs)


def test_the_design_analyzer_from_flags(project: Path) -> None:
    args = ["create", "debug-analyzer", "--extended", "--yes", "--description", "Finds the cause of a bug"]
    args += ["--keyword", "bug", "--keyword", "error", "--keyword", "crash", "--pattern", "fix.*test"]
    args += ["--priority", "90", "--handoff", "code-fixer:analysis.can_auto_fix"]
    args += ["--payload", 'code-fixer={"analysis": {"can_auto_fix": true, "file": "", "line": 1}}']
    args += ["--guardrail-schema", '{"analysis": "", "confidence": 0.5, "suggestions": []}']
    args += ["--guardrail-field", "analysis", "--guardrail-policy", "reject"]
    args += ["--session-key", "current_task", "--session-key", "analyzed_files", "--no-long-term"]
    args += ["--trace-event", "llm_call", "--trace-event", "tool_call", "--trace-event", "handoff"]
    created = runner.invoke(agents_app, args)
    assert created.exit_code == 0, created.output
    spec = parse_agent_text((project / "config" / "agents" / "debug-analyzer.md").read_text())
    assert spec.triggers.priority == 90 and spec.triggers.patterns == ("fix.*test",)
    [handoff] = spec.handoffs
    assert handoff.when == "analysis.can_auto_fix" and handoff.payload is not None
    analysis = handoff.payload.schema_["properties"]["analysis"]
    assert analysis["properties"]["can_auto_fix"] == {"type": "boolean"}, "an example value becomes its type"
    [guardrail] = spec.guardrails
    assert guardrail.policy == "reject" and guardrail.output_schema["required"] == ["analysis"]
    assert guardrail.output_schema["properties"]["suggestions"] == {"type": "array"}
    assert spec.memory.session == ("current_task", "analyzed_files") and spec.memory.long_term is False
    assert spec.tracing.events == ("llm_call", "tool_call", "handoff")
    assert "debug-analyzer" in loads(project)


def test_the_design_graph_from_flags_with_its_state_keys(project: Path) -> None:
    shutil.copy(DESIGN / "debug-analyzer.md", project / "config" / "agents" / "debug-analyzer.md")
    args = ["create", "debug-flow", "--extended", "--yes", "--runner", "graph"]
    args += ["--node", "analyzer=debug-analyzer", "--node", "fixer=code-fixer", "--node", "reviewer=code-reviewer"]
    args += ["--output", "analyzer=analysis", "--output", "fixer=fix", "--edge", "analyzer>fixer:analysis.can_auto_fix"]
    args += ["--edge", "fixer>reviewer:fix.applied", "--edge", "analyzer>END:analysis.needs_human"]
    created = runner.invoke(agents_app, args)
    assert created.exit_code == 0, created.output
    graph = loads(project)["debug-flow"].graph  # type: ignore[attr-defined]
    assert graph.outputs == {"analyzer": "analysis", "fixer": "fix"} and len(graph.edges) == 3

    typo = [*args[:-4], "--edge", "fixer>reviewer:fix.aplied", "--force"]
    refused = runner.invoke(agents_app, typo)
    assert refused.exit_code == 2 and "nothing written" in refused.output
    assert "the state's 'fix' has no 'aplied'" in refused.output and "did you mean 'applied'?" in refused.output


def test_a_handoff_to_an_agent_that_is_not_there_is_not_written(project: Path) -> None:
    args = ["create", "triage", "--extended", "--yes", "--handoff", "code-fixr"]
    refused = runner.invoke(agents_app, args)
    assert refused.exit_code == 2 and "unknown agent 'code-fixr' (did you mean 'code-fixer'?)" in refused.output
    assert not (project / "config" / "agents" / "triage.md").exists()


def test_the_design_dialogue_at_a_terminal_asks_again_until_the_file_loads(project: Path) -> None:
    answers = [
        "Finds the cause of bugs",  # what it is for
        "Why does the login test crash?; What causes this KeyError?",  # sample requests
        "react",
        "bug,error,crash",  # 🎯 triggers
        "fix.*test",
        "8",  # the design's priority on its 0-10 scale: taken as is here (0-100)
        "code-reviewer",  # 🔄 handoffs
        "task.status == 'need-review'",
        '{ "files": [], "changes": "" }',  # the design's payload: it has no `task`, so this is asked again
        "task.status == 'need-review'",
        '{"task": {"status": ""}, "files": [], "changes": ""}',
        "",  # no more handoffs
        '{ "type": "object", "properties": { "analysis": { "type": "string" } } }',  # 🛡️ guardrail
        "reject",
        "current_task,analyzed_files",  # 💾 memory
        "n",
        "1",  # 🔍 tracing
        "llm,tool",  # the design's names: asked again with ours
        "llm_call,tool_call,handoff",
    ]
    created = runner.invoke(agents_app, ["create", "debug-analyzer", "--extended"], input="\n".join(answers) + "\n")
    assert created.exit_code == 0, created.output
    assert "✗ when: `task.status == 'need-review'` reads 'task', which is not among the payload's properties" in (
        created.output
    )
    assert "✗ unknown events llm, tool" in created.output
    spec = parse_agent_text((project / "config" / "agents" / "debug-analyzer.md").read_text())
    assert spec.triggers.priority == 8 and spec.triggers.keywords == ("bug", "error", "crash")
    [handoff] = spec.handoffs
    assert handoff.payload is not None and set(handoff.payload.schema_["properties"]) == {"task", "files", "changes"}
    assert spec.guardrails[0].policy == "reject"
    assert spec.guardrails[0].output_schema == json.loads(answers[12])
    assert spec.examples == ("Why does the login test crash?", "What causes this KeyError?")
    assert spec.memory.session == ("current_task", "analyzed_files") and not spec.memory.long_term
    assert spec.tracing.events == ("llm_call", "tool_call", "handoff")
    assert "debug-analyzer" in loads(project)
