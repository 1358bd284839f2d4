"""Conditions are checked to the leaf at load: a handoff's ``when`` against its payload schema, a graph's edge against
what the node writing that state key answers (its agent's guardrail schema), each with a did-you-mean; a typo deep in
a path (``analysis.can_autofix``) no longer loads only to refuse every handoff at run time (``… is not set``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agents.spec import SpecFileError, load_agents, parse_agent_text

DESIGN = Path(__file__).resolve().parents[1] / "data" / "p2-design"


def design_copy(tmp_path: Path, name: str, change: tuple[str, str]) -> Path:
    folder = tmp_path / "agents"
    shutil.copytree(DESIGN, folder)
    path = folder / f"{name}.md"
    text = path.read_text()
    assert change[0] in text
    path.write_text(text.replace(*change))
    return folder


def test_the_design_files_load() -> None:
    registry = load_agents(None, None, [DESIGN])
    assert not registry.errors, registry.errors
    graph = registry.specs["debug-flow"].graph
    assert graph is not None and graph.key_of("analyzer") == "analysis" and graph.key_of("reviewer") == "reviewer"


@pytest.mark.parametrize(
    ("when", "problem"),
    [
        (
            "analysis.can_autofix",
            "reads 'analysis.can_autofix', but the payload's 'analysis' has no 'can_autofix' "
            "(it has can_auto_fix, cause, file, line, needs_human); did you mean 'can_auto_fix'?",
        ),
        ("analysis.line.number > 3", "the payload's 'analysis.line' is integer: it has no field 'number'"),
        ("analyses.can_auto_fix", "reads 'analyses', which is not among the payload's properties (analysis)"),
    ],
)
def test_a_handoff_condition_is_checked_against_its_payload_schema_to_the_leaf(when: str, problem: str) -> None:
    text = (DESIGN / "debug-analyzer.md").read_text()
    text = text.replace("when: analysis.can_auto_fix and not analysis.needs_human", f"when: {when}")
    with pytest.raises(SpecFileError) as refused:
        parse_agent_text(text, source="debug-analyzer.md")
    assert f"debug-analyzer.md: handoffs[0]: when: `{when}` " in str(refused.value)
    assert problem in str(refused.value), str(refused.value)


def test_a_graph_condition_is_checked_against_the_node_agents_answers(tmp_path: Path) -> None:
    folder = design_copy(tmp_path, "debug-flow", ("when: analysis.can_auto_fix}", "when: analysis.can_autofix}"))
    registry = load_agents(None, None, [folder])
    assert "debug-flow" not in registry.specs and "debug-analyzer" in registry.specs, "the others load"
    [error] = registry.errors
    assert error.field == "graph.edges[0].when", error
    assert (
        "`analysis.can_autofix` reads 'analysis.can_autofix', but the state's 'analysis' has no 'can_autofix' "
        "(it has can_auto_fix, cause, file, line, needs_human); did you mean 'can_auto_fix'? "
        "(what debug-analyzer's guardrails let it answer)"
    ) in error.reason


def test_a_graph_condition_naming_the_node_instead_of_its_state_key_says_where_the_answer_went() -> None:
    text = (DESIGN / "debug-flow.md").read_text().replace("when: fix.applied", "when: fixer.applied")
    with pytest.raises(SpecFileError) as refused:
        parse_agent_text(text, source="debug-flow.md")
    expected = (
        "edges[1].when: `fixer.applied` reads 'fixer', which is not in the state (analysis, fix, reviewer) "
        "('fixer' keeps its answer as 'fix'); did you mean 'fix'?"
    )
    assert expected in str(refused.value), str(refused.value)


def test_a_node_whose_agent_answers_anything_is_not_checked_deeper(tmp_path: Path) -> None:
    folder = design_copy(tmp_path, "code-reviewer", ("guardrails:", "old_guardrails:"))
    text = (folder / "code-reviewer.md").read_text()
    head, body = text.split("old_guardrails:", 1)
    (folder / "code-reviewer.md").write_text(head + "---" + body.split("---", 1)[1])
    flow = (
        (folder / "debug-flow.md")
        .read_text()
        .replace(
            "    - {from: analyzer, to: END",
            "    - {from: reviewer, to: fixer, when: reviewer.anything.at_all}\n    - {from: analyzer, to: END",
        )
    )
    (folder / "debug-flow.md").write_text(flow)
    registry = load_agents(None, None, [folder])
    assert not registry.errors and "debug-flow" in registry.specs, registry.errors
