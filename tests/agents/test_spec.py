"""Agent files: every field, broken files next to good ones, override order, references, the JSON schema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from agents.spec import (
    AgentSpec,
    SpecFileError,
    agent_json_schema,
    check_references,
    load_agents,
    parse_agent_file,
    parse_agent_text,
)

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ROOT / "bot" / "defaults" / "agents"
EXAMPLES = ROOT / "config" / "agents"

FULL = """---
kind: agent
name: full-agent
title: Full
description: Uses every field.
model: gemini-2.5-pro
scope: project
version: "2"
runner: plan
contextMode: shared
tools: {allow: [read_file, "mcp.github.*"], deny: [write_file]}
mcp: {servers: [github]}
triggers: {keywords: [deploy, 部署], patterns: ['\\bship\\s+it\\b'], priority: 80}
handoffs:
  - {to: helper, when: stuck, description: ask the helper, include_context: true}
guardrails:
  - name: shape
    output_schema: {type: object, required: [answer]}
    policy: repair
    max_repairs: 2
confirmation: {require_confirmation: ["write_*"], prompt_template: "Allow it?", timeout: 120}
---
You are the full agent.
"""
HELPER = "---\nname: helper\n---\nI help.\n"


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def front_matter(path: Path) -> dict[str, object]:
    data = yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])
    assert isinstance(data, dict)
    return data


def test_every_field(tmp_path: Path) -> None:
    write(tmp_path, "full.md", FULL)
    write(tmp_path, "helper.md", HELPER)
    registry = load_agents(None, None, [tmp_path])
    assert registry.errors == []
    spec = registry.specs["full-agent"]
    assert (spec.kind, spec.title, spec.description) == ("agent", "Full", "Uses every field.")
    assert (spec.model, spec.scope, spec.version) == ("gemini-2.5-pro", "project", "2")
    assert (spec.runner, spec.context_mode) == ("plan", "shared")
    assert spec.tools.allow == ("read_file", "mcp.github.*") and spec.tools.deny == ("write_file",)
    assert spec.mcp.servers == ("github",)
    assert spec.triggers.keywords == ("deploy", "部署") and spec.triggers.priority == 80
    assert spec.triggers.patterns == (r"\bship\s+it\b",)
    assert spec.triggers.compiled[0].search("Ship  IT now")  # compiled case-insensitively, as the router does
    handoff = spec.handoffs[0]
    assert (handoff.to, handoff.when, handoff.description, handoff.include_context) == (
        "helper",
        "stuck",
        "ask the helper",
        True,
    )
    guardrail = spec.guardrails[0]
    assert (guardrail.name, guardrail.policy, guardrail.max_repairs) == ("shape", "repair", 2)
    assert guardrail.output_schema == {"type": "object", "required": ["answer"]}
    assert spec.confirmation.require_confirmation == ("write_*",)
    assert (spec.confirmation.prompt_template, spec.confirmation.timeout) == ("Allow it?", 120)
    assert spec.prompt == "You are the full agent." and spec.source == str(tmp_path / "full.md")


def test_defaults_for_file_agents(tmp_path: Path) -> None:
    spec = parse_agent_file(write(tmp_path, "helper.md", HELPER))
    assert (spec.kind, spec.runner, spec.context_mode, spec.version, spec.model) == (
        "agent",
        "react",
        "isolated",
        "1",
        None,
    )
    assert spec.triggers.priority == 50 and spec.handoffs == () and spec.guardrails == ()
    assert spec.confirmation.timeout is None and spec.tools.allow == ()
    assert spec.model_config["frozen"] is True


def test_snake_case_alias_numeric_version_and_bom() -> None:
    spec = parse_agent_text("\ufeff---\nname: a\ncontext_mode: shared\nversion: 1.5\n---\nx\n")
    assert (spec.context_mode, spec.version) == ("shared", "1.5")
    with pytest.raises(SpecFileError, match="not both"):
        parse_agent_text("---\nname: a\ncontext_mode: shared\ncontextMode: shared\n---\nx\n")


def test_scope_is_the_layer_the_file_was_found_in() -> None:
    spec = parse_agent_text("---\nname: a\nscope: builtin\n---\nx\n", scope="user")
    assert spec.scope == "user"


BROKEN = {
    "bad-yaml.md": ("---\nname: [unclosed\n---\nbody\n", "front matter", "invalid YAML at line 2"),
    "dup-key.md": ("---\nname: a\nname: b\n---\nbody\n", "front matter", "duplicate key 'name'"),
    "no-front.md": ("just text\n", "front matter", "missing"),
    "not-mapping.md": ("---\n- a\n- b\n---\nbody\n", "front matter", "mapping"),
    "unknown.md": ("---\nname: unknown-field\ncolour: blue\n---\nbody\n", "colour", "unknown field"),
    "typo.md": ("---\nname: typo\ndescripton: x\n---\nbody\n", "descripton", "did you mean 'description'"),
    "nested.md": ("---\nname: nested\ntools: {alow: [x]}\n---\nbody\n", "tools.alow", "did you mean 'allow'"),
    "prompt.md": ("---\nname: has-prompt\nprompt: hi\n---\nbody\n", "prompt", "the Markdown body is the prompt"),
    "wrong-type.md": ("---\nname: wrong-type\ntriggers: {priority: high}\n---\nbody\n", "triggers.priority", "integer"),
    "yaml-bool.md": (
        "---\nname: yaml-bool\ntriggers: {keywords: [yes]}\n---\nbody\n",
        "triggers.keywords[0]",
        "quotes",
    ),
    "range.md": ("---\nname: out-of-range\ntriggers: {priority: 101}\n---\nbody\n", "triggers.priority", "100"),
    "runner.md": ("---\nname: bad-runner\nrunner: magic\n---\nbody\n", "runner", "'chat', 'react', 'plan' or 'graph'"),
    "context.md": ("---\nname: bad-context\ncontextMode: global\n---\nbody\n", "contextMode", "isolated"),
    "regex.md": (
        "---\nname: bad-regex\ntriggers: {patterns: [ok, '(unclosed']}\n---\nbody\n",
        "triggers.patterns[1]",
        "regex",
    ),
    "nested-repeat.md": (
        "---\nname: slow-regex\ntriggers: {patterns: ['(\\w+\\s?)*$']}\n---\nbody\n",
        "triggers.patterns[0]",
        "exponential time",
    ),
    "overlap.md": (
        "---\nname: overlap-regex\ntriggers: {patterns: ['(a|ab)*c']}\n---\nbody\n",
        "triggers.patterns[0]",
        "exponential time",
    ),
    "quartic.md": (
        "---\nname: quartic-regex\ntriggers: {patterns: ['fix.*test.*done.*now']}\n---\nbody\n",
        "triggers.patterns[0]",
        "too slow even on the first 1,024 characters",
    ),
    "schema.md": (
        "---\nname: bad-schema\nguardrails: [{name: g, output_schema: {type: 12}}]\n---\nbody\n",
        "guardrails[0].output_schema",
        "not a valid JSON schema",
    ),
    "policy.md": (
        "---\nname: bad-policy\nguardrails: [{name: g, output_schema: {}, policy: ignore}]\n---\nbody\n",
        "guardrails[0].policy",
        "reject",
    ),
    "guard-dup.md": (
        "---\nname: guard-dup\nguardrails: [{name: g, output_schema: {}}, {name: g, output_schema: {}}]\n---\nb\n",
        "guardrails",
        "used twice",
    ),
    "timeout.md": ("---\nname: bad-timeout\nconfirmation: {timeout: 0}\n---\nbody\n", "confirmation.timeout", "0"),
    "handoff.md": ("---\nname: lonely\nhandoffs: [{to: nobody}]\n---\nbody\n", "handoffs[0].to", "unknown agent"),
    "self.md": ("---\nname: narcissus\nhandoffs: [{to: narcissus}]\n---\nbody\n", "handoffs", "itself"),
    "twice.md": ("---\nname: twice\nhandoffs: [{to: good}, {to: good}]\n---\nbody\n", "handoffs", "listed twice"),
    "empty.md": ("---\nname: empty-body\n---\n\n", "body", "empty"),
    "no-name.md": ("---\ntitle: Nameless\n---\nbody\n", "name", "required"),
    "name.md": ("---\nname: Bad_Name\n---\nbody\n", "name", "kebab-case"),
    "long.md": (f"---\nname: {'a' * 49}\n---\nbody\n", "name", "48"),
    "kind.md": ("---\nname: wrong-kind\nkind: tool\n---\nbody\n", "kind", "agent"),
}


@pytest.mark.parametrize("filename", sorted(BROKEN))
def test_broken_file_reported_and_good_ones_load(tmp_path: Path, filename: str) -> None:
    text, field, reason = BROKEN[filename]
    write(tmp_path, filename, text)
    write(tmp_path, "good.md", "---\nname: good\n---\nI am fine.\n")
    registry = load_agents(None, None, [tmp_path])
    assert list(registry.specs) == ["good"]
    assert len(registry.errors) == 1, registry.errors
    error = registry.errors[0]
    assert error.file == str(tmp_path / filename) and error.field == field and reason in error.reason, error


def test_every_problem_of_a_file_is_reported_at_once() -> None:
    with pytest.raises(SpecFileError) as caught:
        parse_agent_text("---\nname: Bad\ncolour: x\ntriggers: {priority: -1}\n---\n", source="f.md")
    fields = sorted(e.field for e in caught.value.errors)
    assert fields == ["body", "colour", "name", "triggers.priority"]
    assert caught.value.name == "Bad"
    assert str(caught.value.errors[0]).startswith("f.md: ")


def test_duplicate_name_in_one_dir(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "---\nname: same\n---\nfirst\n")
    write(tmp_path, "b.md", "---\nname: same\n---\nsecond\n")
    registry = load_agents(None, None, [tmp_path])
    assert registry.specs["same"].prompt == "first"
    [error] = registry.errors
    assert error.file.endswith("b.md") and error.field == "name" and "already defined" in error.reason


def test_readme_dotfiles_and_missing_dirs_are_ignored(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "# My agents\n")
    write(tmp_path, ".#lock.md", "junk")
    write(tmp_path, "notes.txt", "junk")
    write(tmp_path, "a.md", "---\nname: a\n---\nx\n")
    registry = load_agents(tmp_path / "nope", tmp_path / "nope-either", [tmp_path])
    assert registry.names() == ["a"] and registry.errors == []


def test_override_order_builtin_user_project(tmp_path: Path) -> None:
    builtin, user, project = tmp_path / "b", tmp_path / "u", tmp_path / "p"
    for directory, who in ((builtin, "builtin"), (user, "user"), (project, "project")):
        write(directory, "x.md", f"---\nname: shared\n---\n{who}\n")
    write(builtin, "a-first.md", "---\nname: only-builtin\n---\nb\n")
    write(user, "u.md", "---\nname: only-user\n---\nu\n")
    registry = load_agents(builtin, user, [project])
    winner = registry.specs["shared"]
    assert (winner.prompt, winner.scope, winner.source) == ("project", "project", str(project / "x.md"))
    assert registry.overridden["shared"] == (str(builtin / "x.md"), str(user / "x.md"))
    # Deterministic order: where a name first appeared; an override keeps that place.
    assert registry.names() == ["only-builtin", "shared", "only-user"]
    user_wins = load_agents(builtin, user, [])
    assert user_wins.specs["shared"].prompt == "user" and user_wins.specs["shared"].scope == "user"
    assert load_agents(builtin, None, []).specs["shared"].scope == "builtin"


def test_later_project_dir_wins(tmp_path: Path) -> None:
    write(tmp_path / "one", "x.md", "---\nname: x\n---\none\n")
    write(tmp_path / "two", "x.md", "---\nname: x\n---\ntwo\n")
    assert load_agents(None, None, [tmp_path / "one", tmp_path / "two"]).specs["x"].prompt == "two"


def test_a_broken_override_leaves_the_builtin_in_force(tmp_path: Path) -> None:
    write(tmp_path / "b", "chat.md", "---\nname: chat\n---\nbuilt in\n")
    write(tmp_path / "p", "chat.md", "---\nname: chat\nrunner: nope\n---\noverride\n")
    registry = load_agents(tmp_path / "b", None, [tmp_path / "p"])
    assert registry.specs["chat"].prompt == "built in" and "chat" not in registry.overridden
    assert [e.field for e in registry.errors] == ["runner"]


def test_handoffs_are_checked_after_every_layer_loaded(tmp_path: Path) -> None:
    write(tmp_path / "b", "target.md", "---\nname: target\n---\nbuilt in\n")
    write(tmp_path / "p", "a.md", "---\nname: a\nhandoffs: [{to: target}, {to: later}]\n---\nx\n")
    write(tmp_path / "p", "z.md", "---\nname: later\n---\nloaded after a\n")
    registry = load_agents(tmp_path / "b", None, [tmp_path / "p"])
    assert registry.errors == [] and [h.to for h in registry.specs["a"].handoffs] == ["target", "later"]


def test_dropping_a_spec_breaks_handoffs_to_it(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "---\nname: a\nhandoffs: [{to: b}]\n---\nx\n")
    write(tmp_path, "b.md", "---\nname: b\nhandoffs: [{to: ghost}]\n---\nx\n")
    write(tmp_path, "c.md", "---\nname: c\nhandoffs: [{to: d}]\n---\nx\n")
    write(tmp_path, "d.md", "---\nname: d\ncolour: red\n---\nx\n")
    registry = load_agents(None, None, [tmp_path])
    assert registry.specs == {}
    reasons = {Path(e.file).name: e.reason for e in registry.errors}
    assert reasons["b.md"] == "unknown agent 'ghost'"
    assert "'b' did not load" in reasons["a.md"] and "'d' did not load" in reasons["c.md"]


def test_validate_mode_checks_tools_and_servers(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.md",
        "---\nname: a\ntools: {allow: [read_file, red_file, 'get_*', mcp.gitlab.x, 'mcp.github.*'], deny: [nope]}\n"
        "mcp: {servers: [ghost, github]}\nconfirmation: {require_confirmation: [zap]}\n---\nx\n",
    )
    write(tmp_path, "b.md", "---\nname: b\ntools: {allow: [read_file]}\n---\nx\n")
    lenient = load_agents(None, None, [tmp_path])
    assert lenient.errors == [] and len(lenient) == 2
    registry = load_agents(None, None, [tmp_path], known_tools={"read_file"}, known_mcp_servers={"github"})
    assert registry.names() == ["b"]
    assert sorted((e.field, e.reason) for e in registry.errors) == [
        ("confirmation.require_confirmation[0]", "unknown tool 'zap'"),
        ("mcp.servers[0]", "unknown MCP server 'ghost'"),
        ("tools.allow[1]", "unknown tool 'red_file' (did you mean 'read_file'?)"),
        ("tools.allow[3]", "unknown MCP server 'gitlab' in 'mcp.gitlab.x' (did you mean 'github'?)"),
        ("tools.deny[0]", "unknown tool 'nope'"),
    ]


def test_check_references_on_its_own() -> None:
    spec = parse_agent_text("---\nname: a\nhandoffs: [{to: b}]\n---\nx\n", source="a.md")
    assert check_references(spec, {"a", "b"}) == []
    [error] = check_references(spec, {"a"})
    assert str(error) == "a.md: handoffs[0].to: unknown agent 'b'"


def test_json_schema_is_valid_and_strict() -> None:
    schema = AgentSpec.json_schema()
    assert schema == agent_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "prompt" not in schema["properties"] and "source" not in schema["properties"]
    assert schema["required"] == ["name"]
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"name": "x", "context_mode": "shared", "version": 2})
    for bad in (
        {"name": "x", "colour": "blue"},
        {"name": "Bad_Name"},
        {"name": "x", "runner": "magic"},
        {"name": "x", "triggers": {"priority": 101}},
        {"name": "x", "contextMode": "shared", "context_mode": "shared"},
        {"name": "x", "handoffs": [{"to": "y", "extra": 1}]},
        {"title": "no name"},
    ):
        assert not validator.is_valid(bad), bad


def test_json_schema_validates_examples_and_builtins() -> None:
    validator = jsonschema.Draft202012Validator(agent_json_schema())
    files = sorted(EXAMPLES.glob("*.md")) + sorted(BUILTIN.glob("*.md"))
    assert len(files) >= 7
    for path in files:
        errors = [e.message for e in validator.iter_errors(front_matter(path))]
        assert errors == [], (path, errors)


def test_builtins_and_examples_load_cleanly() -> None:
    known_tools = {"get_current_time", "http_get", "read_file", "write_file", "list_dir", "run_command", "send_file"}
    registry = load_agents(BUILTIN, None, [EXAMPLES], known_tools=known_tools, known_mcp_servers=set())
    assert registry.errors == []
    assert {"chat", "react", "plan", "debugger", "code-fixer", "code-reviewer", "docs-writer"} <= set(registry.specs)
    for name in ("chat", "react", "plan"):
        spec = registry.specs[name]
        assert spec.runner == name and spec.triggers.priority == 100 and spec.scope == "builtin"
        assert spec.context_mode == "shared" and len(spec.prompt) > 100
        assert len(spec.triggers.keywords) <= 60 and len(spec.triggers.patterns) <= 15
        assert any(ord(ch) > 0x3000 for kw in spec.triggers.keywords for ch in kw), "Chinese triggers too"
        assert any(kw.isascii() for kw in spec.triggers.keywords), "English triggers too"
    examples = [registry.specs[n] for n in ("debugger", "code-fixer", "code-reviewer", "docs-writer")]
    assert any(h.to == "code-fixer" for h in registry.specs["debugger"].handoffs)
    assert any(s.guardrails for s in examples) and any(s.confirmation.require_confirmation for s in examples)


@pytest.mark.parametrize(
    ("name", "message", "expected"),
    [
        ("react", "现在几点了？", True),
        ("react", "please read notes.txt", True),
        ("react", "fetch https://example.com", True),
        ("plan", "Plan my week step by step", True),
        ("plan", "帮我规划一下项目的步骤", True),
        ("chat", "hello there", True),
    ],
)
def test_builtin_triggers_match_their_kind(name: str, message: str, expected: bool) -> None:
    triggers = load_agents(BUILTIN, None).specs[name].triggers
    words = message.casefold()
    hit = any(p.search(message) for p in triggers.compiled) or any(k.casefold() in words for k in triggers.keywords)
    assert hit is expected


def test_the_spec_module_does_not_import_the_gateway() -> None:
    code = (
        "import sys, agents.spec; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('bot', 'channels')]; "
        "assert not bad, bad"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_every_builtin_pattern_stays_fast_on_a_long_near_miss() -> None:
    """Each pattern searched in 16 KB of its own words (the worst case routing meets) stays linear and short."""
    import re
    import time

    from agents.specs.patterns import pattern_problem

    specs = load_agents(BUILTIN, None, [EXAMPLES]).specs
    patterns = [p for spec in specs.values() for p in spec.triggers.patterns]
    assert patterns and all(pattern_problem(p) is None for p in patterns)
    words = {w for p in patterns for w in re.findall(r"[^\W\d_]{2,}|[\u3400-\u9fff]+", p)}
    slowest = 0.0
    for unit in [*(w + " " for w in words), *words, "a", "1 ", "a:", "a-", "、", "`"]:
        text = (unit * (16384 // len(unit) + 1))[:16384]
        for pattern in patterns:
            compiled = re.compile(pattern, re.IGNORECASE)
            started = time.thread_time()  # CPU time of this thread: what other processes do does not count
            compiled.search(text)
            slowest = max(slowest, time.thread_time() - started)
    # Linear patterns take a few ms of CPU here at most; a quadratic one takes seconds.
    assert slowest < 0.25, slowest
