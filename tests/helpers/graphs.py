"""A graph agent and its three nodes as agent files."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.handoffs import write_agents

ANALYZER = """---
name: analyzer
description: Finds the cause of a failure.
runner: react
tools: {allow: [inspect]}
guardrails:
  - name: verdict
    policy: repair
    output_schema:
      type: object
      required: [can_auto_fix, needs_human, cause]
      properties: {can_auto_fix: {type: boolean}, needs_human: {type: boolean}, cause: {type: string}}
---
You analyse failures and answer in JSON.
"""


FIXER = """---
name: fixer
description: Writes the fix.
runner: react
tools: {allow: [patch]}
---
You fix code and answer in JSON: {"applied": true|false}.
"""


REVIEWER = """---
name: reviewer
description: Reviews a change.
runner: chat
---
You review the change.
"""


FLOW = """---
name: debug-flow
description: Diagnose, fix and review a failure.
runner: graph
graph:
  entry: analyze
  max_steps: {steps}
  nodes: {{analyze: analyzer, fix: fixer, review: reviewer}}
  edges:
    - {{from: analyze, to: END, when: analyze.needs_human}}
    - {{from: analyze, to: fix, when: analyze.can_auto_fix}}
    - {{from: fix, to: review, when: fix.applied}}
    - {{from: review, to: fix, when: "review.answer == 'again'"}}
---
Diagnose a failure, fix it when that is safe, and review the fix.
"""


def files(tmp_path: Path, steps: int = 6) -> Path:
    texts = {"analyzer": ANALYZER, "fixer": FIXER, "reviewer": REVIEWER, "debug-flow": FLOW.format(steps=steps)}
    return write_agents(tmp_path / "agents", texts)
