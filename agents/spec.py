"""File-defined agents: Markdown files with YAML front matter.

An agent file looks like this (every field but ``name`` is optional)::

    ---
    kind: agent
    name: debugger                  # kebab-case, at most 48 characters, unique
    title: Debugger
    description: Finds the cause of errors.   # the LLM router reads this
    model: gemini-2.5-pro           # overrides the gateway's model
    version: "1"
    runner: react                   # chat | react | plan (default react)
    contextMode: isolated           # isolated (default) | shared; context_mode works too
    tools: {allow: [read_file, "mcp.github.*"], deny: [run_command]}   # deny wins
    mcp: {servers: [github]}
    triggers: {keywords: [error, 报错], patterns: ['Traceback'], priority: 70}
    handoffs: [{to: code-fixer, when: a fix is needed, include_context: true}]
    guardrails: [{name: shape, output_schema: {type: object}, policy: repair, max_repairs: 1}]
    confirmation: {require_confirmation: [write_file], timeout: 600}
    ---
    The Markdown body is the system prompt.

Files load from three layers, later ones overriding earlier ones by name:
built-in (``bot/defaults/agents``) < user (``~/.config/bot/agents``) < project
(``config/agents``).  ``scope`` records the layer.  A broken file is reported
as ``file: field: reason`` and skipped; the others load.  ``AgentSpec.json_schema()``
describes the front matter for editors.
"""

from agents.specs.files import SpecError, SpecFileError, parse_agent_file, parse_agent_text
from agents.specs.model import (
    MAX_NAME_LENGTH,
    NAME_PATTERN,
    AgentSpec,
    Confirmation,
    ContextMode,
    Guardrail,
    GuardrailPolicy,
    Handoff,
    McpPolicy,
    Scope,
    ToolsPolicy,
    Triggers,
    agent_json_schema,
    name_problem,
)
from agents.specs.registry import AgentRegistry, check_references, is_pattern, load_agents

__all__ = [
    "MAX_NAME_LENGTH",
    "NAME_PATTERN",
    "AgentRegistry",
    "AgentSpec",
    "Confirmation",
    "ContextMode",
    "Guardrail",
    "GuardrailPolicy",
    "Handoff",
    "McpPolicy",
    "Scope",
    "SpecError",
    "SpecFileError",
    "ToolsPolicy",
    "Triggers",
    "agent_json_schema",
    "check_references",
    "is_pattern",
    "load_agents",
    "name_problem",
    "parse_agent_file",
    "parse_agent_text",
]
