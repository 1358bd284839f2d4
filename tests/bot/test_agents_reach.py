"""How reachable an agent file is: `bot agents validate` and `create` warn (exit code unchanged) when routing can
hardly find an agent; `create` writes a proper title and no double period; `show` warns about a second file of the
same directory with the same name, naming the one used, as validate and list do."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agents.spec import AgentSpec, load_agents, parse_agent_text
from bot.cli.agent_templates import TEMPLATES, reach_warnings, render_template
from bot.cli.agents import agents_app
from bot.cli.wizard import title_of
from bot.config.settings import RuleRouting

runner = CliRunner()

UNREACHABLE = "reached only as @{name}: give it a description and examples: so routing can find it"
WORDS_ONLY = (
    "routed by its trigger words only: a description and 5-10 examples: let routing find it by meaning, in any language"
)
ONE_KEYWORD = (
    "its triggers score at most 10 (one keyword), below rule.agent_min_score 20: without the sentence encoder "
    "they never win; add a pattern or a second keyword, or examples:"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config" / "agents").mkdir(parents=True)
    return tmp_path


def agent_file(project: Path, name: str, text: str) -> Path:
    path = project / "config" / "agents" / name
    path.write_text(text, encoding="utf-8")
    return path


def spec(front: str) -> AgentSpec:
    return parse_agent_text(f"---\n{front}\n---\nx\n", source="a.md")


# -- reach_warnings ------------------------------------------------------------------------------------------------


def test_nothing_to_route_by_is_reached_only_by_its_name() -> None:
    assert reach_warnings(spec("name: lonely"), RuleRouting()) == [UNREACHABLE.format(name="lonely")]


def test_triggers_without_description_or_examples() -> None:
    two = spec("name: a\ntriggers: {keywords: [deploy, release]}")
    assert reach_warnings(two, RuleRouting()) == [WORDS_ONLY]


def test_one_keyword_never_reaches_the_minimum_score() -> None:
    one = spec("name: a\ndescription: Finds slow queries\ntriggers: {keywords: [slow]}")
    assert reach_warnings(one, RuleRouting()) == [ONE_KEYWORD]
    bare = spec("name: a\ntriggers: {keywords: slow}")
    assert reach_warnings(bare, RuleRouting()) == [WORDS_ONLY, ONE_KEYWORD], "both at once"


@pytest.mark.parametrize(
    "triggers",
    [
        "{keywords: [slow, query]}",
        "{keywords: 'slow, query'}",  # a comma-separated string is two keywords
        "{patterns: ['\\bslow quer(y|ies)\\b']}",
        "{keywords: [slow], priority: 80}",  # at strong_priority one match is enough
    ],
)
def test_triggers_that_can_win_are_not_warned_about(triggers: str) -> None:
    assert reach_warnings(spec(f"name: a\ndescription: Finds slow queries\ntriggers: {triggers}"), RuleRouting()) == []


def test_examples_alone_reach_it_by_meaning() -> None:
    assert reach_warnings(spec("name: a\nexamples: [Why is this query slow?]"), RuleRouting()) == []
    assert reach_warnings(spec("name: a\ndescription: Finds slow queries"), RuleRouting()) == []


def test_the_thresholds_come_from_the_settings() -> None:
    one = spec("name: a\ndescription: Finds slow queries\nexamples: [Why so slow?]\ntriggers: {keywords: [slow]}")
    assert reach_warnings(one, RuleRouting(agent_min_score=10)) == []
    assert reach_warnings(one, RuleRouting(strong_priority=50)) == [], "priority 50 is strong here"
    [warning] = reach_warnings(one, RuleRouting())
    assert warning.endswith("add a pattern or a second keyword"), "it has examples: not suggested again"
    pattern = spec("name: a\ndescription: d\ntriggers: {patterns: [slow]}")
    assert reach_warnings(pattern, RuleRouting(agent_min_score=30)) == [
        "its triggers score at most 20 (one pattern), below rule.agent_min_score 30: without the sentence "
        "encoder they never win; add keywords or patterns, or examples:"
    ]


def test_without_routing_by_meaning() -> None:
    offline = RuleRouting(meaning=False)
    [warning] = reach_warnings(spec("name: a\ndescription: d\ntriggers: {keywords: [slow]}"), offline)
    assert warning.endswith("add a pattern or a second keyword"), "examples do not help without the encoder"
    assert reach_warnings(spec("name: quiet\ndescription: Finds slow queries"), offline) == [
        "no keywords or patterns, and routing.rule.meaning is false: reached only as @quiet (or by the llm router)"
    ]


def test_the_placeholder_description_is_no_description() -> None:
    assert reach_warnings(spec("name: a\ndescription: An assistant."), RuleRouting()) == [UNREACHABLE.format(name="a")]


def test_the_builtins_are_picked_by_the_classifier() -> None:
    assert reach_warnings(spec("name: chat\nrunner: chat"), RuleRouting()) == []


# -- validate and create -------------------------------------------------------------------------------------------


def test_validate_warns_and_keeps_its_exit_code(project: Path) -> None:
    agent_file(project, "lonely.md", "---\nname: lonely\n---\nx\n")
    agent_file(
        project, "slow.md", "---\nname: slow\ndescription: Finds slow queries\ntriggers: {keywords: slow}\n---\nx\n"
    )
    agent_file(
        project, "fine.md", "---\nname: fine\ndescription: Plans releases\nexamples: [Plan the release]\n---\nx\n"
    )
    result = runner.invoke(agents_app, ["validate"])
    assert result.exit_code == 0, result.output
    assert f"config/agents/lonely.md: warning: {UNREACHABLE.format(name='lonely')}" in result.output
    assert f"config/agents/slow.md: warning: {ONE_KEYWORD}" in result.output
    assert "fine.md" not in result.output
    assert result.output.splitlines()[-1] == "3 agent(s) valid; 2 warning(s)."

    agent_file(project, "bad.md", "---\nname: bad\ncolour: red\n---\nx\n")
    broken = runner.invoke(agents_app, ["validate"])
    assert broken.exit_code == 1 and "1 problem(s) in 1 file(s); 3 agent(s) valid; 2 warning(s)." in broken.output


def test_validate_reads_the_thresholds_from_the_config(project: Path) -> None:
    agent_file(
        project, "slow.md", "---\nname: slow\ndescription: Finds slow queries\ntriggers: {keywords: slow}\n---\nx\n"
    )
    (project / "config" / "bot.yaml").write_text("routing:\n  rule:\n    agent_min_score: 10\n", encoding="utf-8")
    result = runner.invoke(agents_app, ["validate"])
    assert result.exit_code == 0 and result.output.strip() == "1 agent(s) valid.", result.output


def test_create_warns_but_writes_the_file(project: Path) -> None:
    args = ["create", "slow", "--extended", "--yes", "--description", "Finds slow queries", "--keyword", "slow"]
    created = runner.invoke(agents_app, args)
    assert created.exit_code == 0, created.output
    assert (project / "config" / "agents" / "slow.md").is_file()
    assert created.stderr.strip() == f"warning: {ONE_KEYWORD}"

    bare = runner.invoke(agents_app, ["create", "bare", "--extended", "--yes"])
    assert bare.exit_code == 0 and f"warning: {UNREACHABLE.format(name='bare')}" in bare.stderr

    examples = ["--example", "Why is this query slow?", "--example", "Speed up this SELECT"]
    reached = runner.invoke(agents_app, [*args[:-2], *examples, "--keyword", "slow", "--pattern", "slow", "--force"])
    assert reached.exit_code == 0 and "warning" not in reached.output, reached.output
    written = parse_agent_text((project / "config" / "agents" / "slow.md").read_text(encoding="utf-8"))
    assert written.examples == ("Why is this query slow?", "Speed up this SELECT")


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_the_templates_are_reachable(project: Path, template: str) -> None:
    created = runner.invoke(agents_app, ["create", f"my-{template}", "--template", template])
    assert created.exit_code == 0 and "warning" not in created.output, created.output


# -- titles, descriptions and the template's comments --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("sql-helper", "SQL helper"),
        ("release-manager", "Release manager"),
        ("api-db-sync", "API DB sync"),
        ("k8s-ci-cd", "K8S CI CD"),
        ("my-pr-reviewer", "My PR reviewer"),
        ("http2-json-aws", "Http2 JSON AWS"),
        ("debugger", "Debugger"),
    ],
)
def test_a_title_from_the_name(name: str, title: str) -> None:
    assert title_of(name) == title


def test_create_writes_the_title(project: Path) -> None:
    assert runner.invoke(agents_app, ["create", "sql-helper"]).exit_code == 0
    assert parse_agent_text((project / "config" / "agents" / "sql-helper.md").read_text()).title == "SQL helper"
    args = ["create", "release-manager", "--extended", "--yes", "--description", "Plans releases"]
    assert runner.invoke(agents_app, args).exit_code == 0
    assert parse_agent_text((project / "config" / "agents" / "release-manager.md").read_text()).title == (
        "Release manager"
    )


def test_names_yaml_would_read_as_something_else_are_quoted(project: Path) -> None:
    created = runner.invoke(agents_app, ["create", "on"])
    assert created.exit_code == 0, created.output
    written = parse_agent_text((project / "config" / "agents" / "on.md").read_text())
    assert written.name == "on" and written.title == "On"


@pytest.mark.parametrize("description", ["Finds slow queries.", "Finds slow queries", "Finds slow queries.. "])
def test_no_double_period_in_the_prompt(project: Path, description: str) -> None:
    args = ["create", "slow", "--extended", "--yes", "--force", "--description", description]
    assert runner.invoke(agents_app, args).exit_code == 0
    text = (project / "config" / "agents" / "slow.md").read_text()
    assert "You are slow: Finds slow queries. Answer in the user's language." in text
    assert ".." not in text.split("---\n")[2]


def test_the_template_says_what_priority_does_and_asks_for_examples() -> None:
    text = render_template("general", "helper")
    assert "the weight of the score" not in text
    assert "priority: 50" in text and "# 0-100: when two agents fit a message about equally, the higher wins" in text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("description:"))
    assert lines[at + 1].startswith("examples: []") and lines[at + 1].endswith(
        "# 5-10 requests in your users' words; routing compares every message with them by meaning"
    )
    debugging = parse_agent_text(render_template("debugging", "helper"))
    assert 5 <= len(debugging.examples) <= 10
    help_text = runner.invoke(agents_app, ["create", "--help"]).output
    assert "weight" not in help_text and "--example" in help_text


# -- two files of one directory with one name ----------------------------------------------------------------------


def test_show_warns_about_a_second_file_with_the_same_name(project: Path) -> None:
    # Written in the other order on purpose: the first by file name wins, not the first written.
    agent_file(project, "b-first-written.md", "---\nname: same\ndescription: B\n---\nfrom b\n")
    agent_file(project, "a-second-written.md", "---\nname: same\ndescription: A\n---\nfrom a\n")
    why = (
        "config/agents/b-first-written.md: name: 'same' is already defined in config/agents/a-second-written.md "
        "(same directory: the first file by name is used, this one is skipped)"
    )
    shown = runner.invoke(agents_app, ["show", "same"])
    assert shown.exit_code == 0, shown.output
    assert shown.stderr.strip() == f"warning: {why}"
    assert "# project file: config/agents/a-second-written.md" in shown.stdout and "from a" in shown.stdout
    assert "warning" not in shown.stdout, "the agent file on stdout still loads"

    validated = runner.invoke(agents_app, ["validate"])
    assert validated.exit_code == 1 and why in validated.output
    listed = runner.invoke(agents_app, ["list"])
    assert why in listed.output and "config/agents/a-second-written.md" in listed.stdout
    registry = load_agents(None, None, [project / "config" / "agents"])
    assert registry.specs["same"].description == "A"
    [duplicate] = registry.duplicates
    assert duplicate.kept.endswith("a-second-written.md") and duplicate.skipped.endswith("b-first-written.md")


def test_show_of_another_agent_says_nothing_about_them(project: Path) -> None:
    agent_file(project, "a.md", "---\nname: same\ndescription: A\n---\nx\n")
    agent_file(project, "b.md", "---\nname: same\ndescription: B\n---\nx\n")
    agent_file(project, "other.md", "---\nname: other\ndescription: O\n---\nx\n")
    shown = runner.invoke(agents_app, ["show", "other"])
    assert shown.exit_code == 0 and shown.stderr == ""


def test_show_says_why_the_file_used_for_a_name_did_not_load(project: Path) -> None:
    agent_file(project, "a.md", "---\nname: same\ndescription: A\nhandoffs: [{to: nowhere}]\n---\nx\n")
    agent_file(project, "b.md", "---\nname: same\ndescription: B\n---\nx\n")
    shown = runner.invoke(agents_app, ["show", "same"])
    assert shown.exit_code == 1, "neither file is in force: the first is broken, the second skipped"
    assert "b.md: name: 'same' is already defined in config/agents/a.md" in shown.output
    assert "a.md: handoffs[0].to: unknown agent 'nowhere'" in shown.output
