"""`bot agents`: list, show, validate, create, schema — through typer's CliRunner in a temp project."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from agents.spec import parse_agent_text
from bot.cli.agent_templates import TEMPLATES, TemplateName
from bot.cli.agents import agents_app
from bot.runs.tool_names import known_tool_names

runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config" / "agents").mkdir(parents=True)
    return tmp_path


def agent_file(project: Path, name: str, text: str) -> Path:
    path = project / "config" / "agents" / name
    path.write_text(text, encoding="utf-8")
    return path


def test_known_tool_names_are_the_builtin_tools() -> None:
    assert known_tool_names() >= {
        "get_current_time",
        "http_get",
        "read_file",
        "write_file",
        "list_dir",
        "run_command",
        "schedule_message",
        "ask_user",
    }


def test_list_shows_builtins_and_overrides(project: Path) -> None:
    agent_file(project, "chat.md", "---\nname: chat\ntitle: My chat\nrunner: chat\n---\nmine\n")
    result = runner.invoke(agents_app, ["list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["NAME", "RUNNER", "SOURCE", "TITLE"]
    assert [line.split()[0] for line in lines[1:]] == ["chat", "plan", "react"]
    assert "config/agents/chat.md (overrides <builtin>/chat.md)" in lines[1] and "My chat" in lines[1]
    assert "<builtin>/react.md" in result.output


def test_list_reports_skipped_files_and_exits_1(project: Path) -> None:
    agent_file(project, "good.md", "---\nname: good\n---\nx\n")
    agent_file(project, "bad.md", "---\nname: bad\ncolour: red\n---\nx\n")
    result = runner.invoke(agents_app, ["list"])
    assert result.exit_code == 1
    assert "good" in result.output and "config/agents/bad.md: colour: unknown field" in result.output


@pytest.mark.parametrize("template", [t.value for t in TemplateName])
def test_create_then_validate(project: Path, template: str) -> None:
    created = runner.invoke(agents_app, ["create", f"my-{template}", "--template", template])
    assert created.exit_code == 0, created.output
    path = project / "config" / "agents" / f"my-{template}.md"
    assert f"created {Path('config/agents') / path.name}" in created.output
    validated = runner.invoke(agents_app, ["validate"])
    assert validated.exit_code == 0, validated.output
    assert validated.output.strip() == "1 agent(s) valid."
    shown = runner.invoke(agents_app, ["show", f"my-{template}"])
    assert shown.exit_code == 0 and f"name: my-{template}" in shown.output


def test_every_template_has_a_choice() -> None:
    assert sorted(TEMPLATES) == sorted(t.value for t in TemplateName)


def test_create_refuses_bad_names_overwrites_and_unknown_templates(project: Path) -> None:
    bad = runner.invoke(agents_app, ["create", "Bad_Name"])
    assert bad.exit_code == 2 and "kebab-case" in bad.output
    assert runner.invoke(agents_app, ["create", "a" * 49]).exit_code == 2
    assert runner.invoke(agents_app, ["create", "ok-name"]).exit_code == 0
    again = runner.invoke(agents_app, ["create", "ok-name"])
    assert again.exit_code == 1 and "--force" in again.output
    assert runner.invoke(agents_app, ["create", "ok-name", "--force", "--template", "debugging"]).exit_code == 0
    assert "Traceback" in (project / "config" / "agents" / "ok-name.md").read_text()
    assert runner.invoke(agents_app, ["create", "x", "--template", "nope"]).exit_code == 2
    assert not (project / "config" / "agents" / "x.md").exists()


def test_create_refuses_a_name_another_file_in_the_dir_defines(project: Path) -> None:
    agent_file(project, "other.md", "---\nname: taken\n---\nx\n")
    result = runner.invoke(agents_app, ["create", "taken"])
    assert result.exit_code == 1 and "already defined in" in result.output


def test_create_into_dir_and_note_on_override(project: Path) -> None:
    result = runner.invoke(agents_app, ["create", "chat", "--dir", "elsewhere"])
    assert result.exit_code == 0, result.output
    assert (project / "elsewhere" / "chat.md").is_file()
    assert "also defined in <builtin>/chat.md" in result.output


def test_validate_flags_unknown_tools_servers_and_broken_files(project: Path) -> None:
    agent_file(
        project, "a.md", "---\nname: a\ntools: {allow: [read_file, teleport]}\nmcp: {servers: [ghost]}\n---\nx\n"
    )
    agent_file(project, "b.md", "---\nname: b\ncolour: red\n---\nx\n")
    agent_file(
        project, "c.md", "---\nname: c\ndescription: Passes on\nhandoffs: [{to: chat}]\n---\nhands off to a built-in\n"
    )
    result = runner.invoke(agents_app, ["validate"])
    assert result.exit_code == 1
    assert "config/agents/a.md: tools.allow[1]: unknown tool 'teleport'" in result.output
    assert "config/agents/a.md: mcp.servers[0]: unknown MCP server 'ghost'" in result.output
    assert "config/agents/b.md: colour: unknown field" in result.output
    assert "c.md" not in result.output, "a handoff to a built-in agent is fine"
    assert "3 problem(s) in 2 file(s); 1 agent(s) valid." in result.output


def test_validate_knows_configured_mcp_servers(project: Path) -> None:
    (project / "config" / "bot.yaml").write_text(
        "mcp:\n  servers:\n    github: {command: github-mcp}\n", encoding="utf-8"
    )
    agent_file(project, "a.md", "---\nname: a\ntools: {allow: ['mcp.github.*']}\nmcp: {servers: [github]}\n---\nx\n")
    result = runner.invoke(agents_app, ["validate"])
    assert result.exit_code == 0, result.output


def test_validate_without_all_ignores_user_files(project: Path) -> None:
    user_dir = Path.home() / ".config" / "bot" / "agents"
    user_dir.mkdir(parents=True)
    (user_dir / "broken.md").write_text("---\nname: broken\ncolour: red\n---\nx\n", encoding="utf-8")
    assert runner.invoke(agents_app, ["validate"]).exit_code == 0
    everything = runner.invoke(agents_app, ["validate", "--all"])
    assert everything.exit_code == 1 and "~/.config/bot/agents/broken.md: colour: unknown field" in everything.output


def test_validate_all_includes_builtins(project: Path) -> None:
    result = runner.invoke(agents_app, ["validate", "--all"])
    assert result.exit_code == 0, result.output
    assert "3 agent(s) valid" in result.output


def test_validate_with_config_option(project: Path) -> None:
    (project / "other.yaml").write_text("agents:\n  dirs: [more-agents]\n", encoding="utf-8")
    (project / "more-agents").mkdir()
    (project / "more-agents" / "x.md").write_text("---\nname: x\nrunner: magic\n---\nx\n", encoding="utf-8")
    result = runner.invoke(agents_app, ["validate", "--config", "other.yaml"])
    assert result.exit_code == 1 and "more-agents/x.md: runner:" in result.output
    missing = runner.invoke(agents_app, ["validate", "--config", "nope.yaml"])
    assert missing.exit_code == 2 and "config error" in missing.output and "Traceback" not in missing.output


def test_show_is_a_loadable_agent_file(project: Path) -> None:
    original = agent_file(
        project,
        "full.md",
        "---\nname: full\ndescription: 'Has: colons'\ntriggers: {keywords: [部署], patterns: ['\\bship\\b']}\n"
        "guardrails: [{name: g, output_schema: {type: object}}]\n---\nThe prompt.\n",
    )
    result = runner.invoke(agents_app, ["show", "full"])
    assert result.exit_code == 0, result.output
    assert "# project file: config/agents/full.md" in result.output
    again = parse_agent_text(result.output, source=str(original))
    assert again == parse_agent_text(original.read_text(encoding="utf-8"), source=str(original))


def test_show_unknown_and_broken(project: Path) -> None:
    result = runner.invoke(agents_app, ["show", "ghost"])
    assert result.exit_code == 1 and "no agent named 'ghost'" in result.output
    agent_file(project, "broken.md", "---\nname: broken\nrunner: magic\n---\nx\n")
    broken = runner.invoke(agents_app, ["show", "broken"])
    assert broken.exit_code == 1 and "broken.md: runner:" in broken.output


def test_schema_validates_a_created_file(project: Path) -> None:
    result = runner.invoke(agents_app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert "name" in schema["properties"] and "contextMode" in schema["properties"]
    runner.invoke(agents_app, ["create", "doc", "--template", "documentation"])
    text = (project / "config" / "agents" / "doc.md").read_text(encoding="utf-8")
    jsonschema.validate(yaml.safe_load(text.split("---\n")[1]), schema)


def test_graph_show_lists_nodes_and_edges_and_draws_mermaid(project: Path) -> None:
    from tests.helpers.graphs import ANALYZER, FIXER, FLOW, REVIEWER

    for name, text in {"analyzer": ANALYZER, "fixer": FIXER, "reviewer": REVIEWER}.items():
        agent_file(project, f"{name}.md", text)
    agent_file(project, "debug-flow.md", FLOW.format(steps=6))
    shown = runner.invoke(agents_app, ["graph", "show", "debug-flow"])
    assert shown.exit_code == 0, shown.output
    assert "debug-flow: starts at analyze, at most 6 steps" in shown.output
    assert "  fix → agent fixer" in shown.output
    assert "  analyze → END  when analyze.needs_human" in shown.output
    drawn = runner.invoke(agents_app, ["graph", "show", "debug-flow", "--mermaid"])
    assert drawn.output.startswith("flowchart TD\n    START((start)) --> analyze")
    assert "    fix -->|fix.applied| review" in drawn.output and "analyze -->|analyze.needs_human| END((end))" in (
        drawn.output
    )
    assert runner.invoke(agents_app, ["graph", "show", "chat"]).exit_code == 1
    (project / "config" / "agents" / "reviewer.md").unlink()
    missing = runner.invoke(agents_app, ["graph", "show", "debug-flow"])
    assert missing.exit_code == 1 and "graph.nodes.review: unknown agent 'reviewer'" in missing.output


def test_create_extended_from_flags_writes_an_agent_that_loads(project: Path) -> None:
    from tests.helpers.graphs import ANALYZER, FIXER

    agent_file(project, "analyzer.md", ANALYZER)
    agent_file(project, "fixer.md", FIXER)
    args = ["create", "triage", "--extended", "--yes", "--description", "Triage incoming bugs"]
    args += ["--keyword", "bug", "--keyword", "crash", "--pattern", r"\bfails?\b"]
    args += ["--handoff", "fixer:the cause is found", "--guardrail-field", "severity", "--session-key", "ticket"]
    created = runner.invoke(agents_app, args)
    assert created.exit_code == 0, created.output
    text = (project / "config" / "agents" / "triage.md").read_text()
    spec = parse_agent_text(text)
    assert spec.triggers.keywords == ("bug", "crash") and spec.memory.session == ("ticket",)
    assert spec.handoffs[0].to == "fixer" and spec.handoffs[0].when == "the cause is found"
    assert spec.guardrails[0].output_schema == {"type": "object", "required": ["severity"]}

    graph = ["create", "flow", "--extended", "--yes", "--runner", "graph", "--node", "a=analyzer", "--node", "f=fixer"]
    graph += ["--edge", "a>f:a.can_auto_fix", "--edge", "f>END", "--no-long-term"]
    assert runner.invoke(agents_app, graph).exit_code == 0
    assert runner.invoke(agents_app, ["graph", "replay", "--help"]).exit_code == 0, "the seed's name for replay"
    assert runner.invoke(agents_app, ["graph", "show", "flow"]).exit_code == 0

    broken = runner.invoke(agents_app, [*graph, "--force", "--edge", "a>nowhere"])
    assert broken.exit_code == 2 and "'nowhere' is not a node or END" in broken.output


def test_create_extended_asks_at_a_terminal(project: Path) -> None:
    answers = "\n".join(
        ["Summarises releases", "", "react", "release, changelog", "", "", "", "", "current_release", "n", "0.5", ""]
    )
    created = runner.invoke(agents_app, ["create", "notes", "--extended"], input=answers + "\n")
    assert created.exit_code == 0, created.output
    spec = parse_agent_text((project / "config" / "agents" / "notes.md").read_text())
    assert spec.description == "Summarises releases" and spec.triggers.keywords == ("release", "changelog")
    assert spec.memory.session == ("current_release",) and spec.memory.long_term is False
    assert spec.tracing.sample_rate == 0.5
