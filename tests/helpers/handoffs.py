"""Agent files that hand off to each other, their tools and a transfer call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.models.scripted import call
from agents.tools.base import Tool, tool

AGENTS = {
    "debugger": """---
kind: agent
name: debugger
description: Finds the cause of an error.
runner: react
contextMode: isolated
tools: {allow: [inspect]}
handoffs:
  - {to: fixer, when: the cause is found, include_context: true}
---
You debug.
""",
    "fixer": """---
kind: agent
name: fixer
description: Writes the fix.
runner: react
tools: {allow: [patch]}
handoffs:
  - {to: reviewer, when: a change was written}
  - {to: debugger, when: the diagnosis is wrong}
---
You fix code.
""",
    "reviewer": """---
kind: agent
name: reviewer
description: Reviews a change.
runner: react
tools: {allow: [inspect]}
guardrails:
  - name: review-shape
    policy: repair
    max_repairs: 1
    output_schema:
      type: object
      required: [verdict]
      properties: {verdict: {enum: [ok, changes]}}
---
You review code. Answer in JSON.
""",
}


def write_agents(folder: Path, texts: dict[str, str]) -> Path:
    folder.mkdir()
    for name, text in texts.items():
        (folder / f"{name}.md").write_text(text)
    return folder


def toolbox(ran: list[str]) -> list[Tool]:
    @tool(risk="safe")
    async def inspect(path: str) -> str:
        """Look at a file."""
        ran.append(f"inspect {path}")
        return "line 3: foo = None; foo.bar()"

    @tool(risk="medium", confirm=True)
    async def patch(path: str, change: str) -> str:
        """Change a file."""
        ran.append(f"patch {path}")
        return "patched"

    return [inspect, patch]


def transfer(target: str, reason: str, id: str, **extra: str) -> Any:
    return call(f"transfer_to_{target}", {"reason": reason, **extra}, id=id)
