"""What ``bot agents create`` writes (the templates) and what ``validate`` and ``create`` warn about (how routing can
reach an agent): split from :mod:`bot.cli.agents` to keep each module to one concept."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

import yaml

from bot.cli.wizard import PLACEHOLDER_DESCRIPTION, title_of

if TYPE_CHECKING:
    from agents.spec import AgentSpec
    from bot.config.settings import RuleRouting


@dataclass(frozen=True)
class AgentTemplate:
    """A starting point for ``bot agents create``: front matter (YAML with comments) and a prompt."""

    description: str
    front: str
    prompt: str
    examples: tuple[str, ...] = ()
    """Sample requests, written after ``description:``."""


_GENERAL_FRONT = """\
runner: react            # chat (one model call) | react (model and tools) | plan (plan, approve, execute)
contextMode: isolated    # isolated: its own turns + the handoff context | shared: the chat's recent history
tools:
  allow: []              # tool names or globs (mcp.github.*); empty = every low- or medium-risk tool
  deny: [run_command]    # deny wins over allow
triggers:
  keywords: []           # words that route a message here (+10 each); or address it as @name
  patterns: []           # regular expressions, case-insensitive (+20 each)
  priority: 50           # 0-100: when two agents fit a message about equally, the higher wins
"""

TEMPLATES: dict[str, AgentTemplate] = {
    "general": AgentTemplate(
        "A general assistant with the built-in tools.",
        _GENERAL_FRONT,
        "You are a helpful assistant. Use the tools when they help, never invent their results, and answer "
        "briefly in the user's language.",
    ),
    "debugging": AgentTemplate(
        "Finds the cause of errors from stack traces, logs and files.",
        """\
runner: react
contextMode: isolated
tools:
  allow: [read_file, list_dir, get_current_time, run_command]
triggers:
  keywords: [debug, error, exception, traceback, crash, 调试, 报错, 异常]
  patterns: ['Traceback \\(most recent call last\\)', '\\b\\w+(Error|Exception)\\b']
  priority: 60
confirmation:
  require_confirmation: [run_command]   # ask before every command
  timeout: 600                          # seconds; no answer counts as denied
""",
        "You are a debugging expert. Read the error, form hypotheses and check them with the tools (files, "
        "logs, commands). Report the most likely cause with the evidence for it, and the smallest fix.",
        (
            "Why does this crash with a KeyError?",
            "Here is a traceback, what went wrong?",
            "The tests fail since yesterday's change, can you find out why?",
            "This script hangs after a minute, help me debug it",
            "What does this error in the log mean?",
        ),
    ),
    "code-review": AgentTemplate(
        "Reviews code or a change for bugs, security problems and readability.",
        """\
runner: react
contextMode: isolated
tools:
  allow: [read_file, list_dir]
  deny: [write_file, run_command]   # a reviewer reads; it does not change code
triggers:
  keywords: [review, "code review", 审查, 代码评审]
  patterns: ['\\breview (this|my|the) (code|change|diff|pr)\\b']
  priority: 60
""",
        "You are a careful code reviewer. Read the code in question, then list concrete problems (bugs first, "
        "then security, then readability) with file and line, and a suggested change for each.",
        (
            "Can you review this change?",
            "Look over my pull request for bugs",
            "Is this function safe against SQL injection?",
            "Anything wrong with this diff?",
            "How would you make this module more readable?",
        ),
    ),
    "documentation": AgentTemplate(
        "Writes and improves documentation: READMEs, guides, docstrings.",
        """\
runner: react
contextMode: shared
tools:
  allow: [read_file, list_dir, write_file]
triggers:
  keywords: [documentation, docs, readme, docstring, 文档]
  priority: 60
confirmation:
  require_confirmation: [write_file]    # show every file write to the user first
""",
        "You write clear documentation. Read the code or notes you are given, then write concise, accurate "
        "documentation with short sections and examples. Show the text before writing any file.",
        (
            "Write a README for this project",
            "Add docstrings to the functions in utils.py",
            "Turn these notes into a setup guide",
            "Our install docs are out of date, update them",
            "Explain this module in a short doc page",
        ),
    ),
}


class TemplateName(StrEnum):
    """The choices of ``--template`` (the keys of :data:`TEMPLATES`)."""

    general = "general"
    debugging = "debugging"
    code_review = "code-review"
    documentation = "documentation"


_EXAMPLES_COMMENT = "# 5-10 requests in your users' words; routing compares every message with them by meaning"


def _scalar(text: str) -> str:
    """``text`` as a YAML value: as written when YAML reads it back as that text, else quoted."""
    try:
        plain = yaml.safe_load(text) == text and "#" not in text
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text, ensure_ascii=False)


def render_template(template: str, name: str) -> str:
    """The text of a new agent file called ``name`` from one of :data:`TEMPLATES`."""
    t = TEMPLATES[template]
    header = f"kind: agent\nname: {_scalar(name)}\ntitle: {_scalar(title_of(name))}\n"
    header += f"description: {json.dumps(t.description)}\n"
    if t.examples:
        header += f"{'examples:':<25}{_EXAMPLES_COMMENT}\n"
        header += "".join(f"  - {json.dumps(example, ensure_ascii=False)}\n" for example in t.examples)
    else:
        header += f"{'examples: []':<25}{_EXAMPLES_COMMENT}\n"
    return f"---\n{header}version: '1'\n{t.front}---\n{t.prompt}\n"


KEYWORD_POINTS = 10
"""What a matching keyword scores (bot.routing.rule's KEYWORD_SCORE; not imported: bot.routing is slow to load)."""
PATTERN_POINTS = 20
"""What a matching pattern scores (bot.routing.rule's PATTERN_SCORE)."""
CLASSIFIED = frozenset({"chat", "react", "plan"})
"""The agents the router's classifier picks by itself, whatever their files say."""


def _count(n: int, what: str) -> str:
    return f"one {what}" if n == 1 else f"{n} {what}s"


def reach_warnings(spec: AgentSpec, rule: RuleRouting) -> list[str]:
    """Why routing can hardly send a message to ``spec`` (empty: it can), under the settings ``rule``.

    By meaning (the sentence encoder) an agent is found through its description, examples and triggers; without
    it (``rule.meaning: false``, or while it loads) only through triggers scoring ``rule.agent_min_score``
    (10 a keyword, 20 a pattern), or one matching trigger at ``rule.strong_priority``.
    """
    if spec.name in CLASSIFIED:
        return []
    keywords = len({keyword.casefold() for keyword in spec.triggers.keywords})
    patterns = len(set(spec.triggers.patterns))
    described = spec.description.strip() not in ("", PLACEHOLDER_DESCRIPTION)
    meaning = described or bool(spec.examples)
    if not keywords and not patterns:
        if not meaning:
            return [f"reached only as @{spec.name}: give it a description and examples: so routing can find it"]
        if not rule.meaning:
            return [
                f"no keywords or patterns, and routing.rule.meaning is false: reached only as @{spec.name} "
                "(or by the llm router)"
            ]
        return []
    warnings = []
    if not meaning:
        warnings.append(
            "routed by its trigger words only: a description and 5-10 examples: let routing find it by meaning, "
            "in any language"
        )
    most = KEYWORD_POINTS * keywords + PATTERN_POINTS * patterns
    if most < rule.agent_min_score and spec.triggers.priority < rule.strong_priority:
        what = " and ".join(
            [*([_count(keywords, "keyword")] if keywords else []), *([_count(patterns, "pattern")] if patterns else [])]
        )
        fix = "add a pattern or a second keyword" if (keywords, patterns) == (1, 0) else "add keywords or patterns"
        if rule.meaning and not spec.examples:
            fix += ", or examples:"
        warnings.append(
            f"its triggers score at most {most} ({what}), below rule.agent_min_score {rule.agent_min_score:g}: "
            f"without the sentence encoder they never win; {fix}"
        )
    return warnings
