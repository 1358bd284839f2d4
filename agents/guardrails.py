"""JSON-schema guardrails on an agent's final answer.

The answer is parsed as JSON (a fenced ```json block is accepted) and
validated with ``jsonschema``.  Per guardrail policy:

* ``repair``: the model is asked again with the errors, at most
  ``max_repairs`` times; still invalid, it is rejected;
* ``reject``: the user is told the answer failed its check, without seeing it;
* ``warn``: the answer passes, the errors are recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema

from agents.context import RunContext
from agents.messages import Message

Policy = Literal["reject", "repair", "warn"]
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL | re.IGNORECASE)
MAX_ERRORS = 5


@dataclass(frozen=True)
class GuardrailRule:
    name: str
    schema: dict[str, Any]
    policy: Policy = "reject"
    max_repairs: int = 1


@dataclass
class GuardrailOutcome:
    """What became of an answer: ``passed``, ``repaired``, ``warned`` or ``rejected``."""

    status: Literal["passed", "repaired", "warned", "rejected"]
    text: str
    """The text to send: the (repaired) answer, or the rejection notice."""
    errors: list[str] = field(default_factory=list)
    guardrail: str = ""
    repairs: int = 0


def validate(text: str, schema: dict[str, Any]) -> list[str]:
    """The reasons ``text`` does not satisfy ``schema`` (empty when it does)."""
    match = _FENCE.match(text)
    raw = match.group(1) if match else text
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return [f"the answer is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"]
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    return [_said(error) for error in errors[:MAX_ERRORS]]


_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def _said(error: jsonschema.ValidationError) -> str:
    """One error as a person (and the model asked to repair) reads it: ``missing required field: confidence``,
    ``invalid type for suggestions: expected array, got string``; others as jsonschema says them, with the path."""
    where = "/".join(str(p) for p in error.absolute_path)
    if error.validator == "required" and isinstance(error.validator_value, list):
        present = error.instance if isinstance(error.instance, dict) else {}
        missing = [name for name in error.validator_value if name not in present]
        inside = f" in {where}" if where else ""
        return f"missing required field{'s' if len(missing) > 1 else ''}{inside}: {', '.join(missing)}"
    if error.validator == "type" and where:
        expected = error.validator_value
        wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
        got = "null" if error.instance is None else _JSON_TYPES.get(type(error.instance), type(error.instance).__name__)
        return f"invalid type for {where}: expected {wanted}, got {got}"
    return f"{where or '(root)'}: {error.message}"


def rejection(agent: str, rule: str) -> str:
    return f"⚠️ The {agent} agent's answer did not pass its check “{rule}”, so I did not send it. Please try again."


async def enforce(
    ctx: RunContext,
    rules: Sequence[GuardrailRule],
    *,
    agent: str,
    system: str,
    conversation: Sequence[Message],
    answer: str,
) -> GuardrailOutcome:
    """Check ``answer`` against every rule in turn, repairing through ``ctx.model`` where allowed.

    ``conversation`` is what the model saw (history, the user's message and the
    run's turns); repairs are asked on top of it without tools.
    """
    text = answer
    repaired = 0
    warned: list[str] = []
    warned_rule = ""
    for rule in rules:
        errors = validate(text, rule.schema)
        attempts = rule.max_repairs if rule.policy == "repair" else 0
        tries: list[Message] = []
        # The trace says what was wrong before any repair, and how it ended.
        seen = {"guardrail": rule.name, "policy": rule.policy, "violations": list(errors) or None}
        before = repaired
        while errors and attempts > 0:
            attempts -= 1
            repaired += 1
            tries += [
                Message.assistant(text, agent=agent),
                Message.user(
                    f"Your answer does not satisfy the required JSON schema “{rule.name}”: "
                    + "; ".join(errors)
                    + ". Reply again with only the corrected JSON, nothing else.\nSchema: "
                    + json.dumps(rule.schema, ensure_ascii=False)
                ),
            ]
            started = ctx.clock()
            response = await (ctx.repair_model or ctx.model).request([*conversation, *tries], system=system)
            ctx.model_called(agent, response, started, purpose="guardrail_repair")
            text = response.text or ""
            errors = validate(text, rule.schema)
        repairs = repaired - before
        if not errors:
            status = "repaired" if repairs else "passed"
            ctx.tracer.event("guardrail", agent=agent, status=status, repairs=repairs, **seen)
            continue
        if rule.policy == "warn":
            warned += errors
            warned_rule = warned_rule or rule.name
            ctx.tracer.event("guardrail", agent=agent, status="warned", errors=errors, **seen)
            continue
        ctx.tracer.event("guardrail", agent=agent, status="rejected", errors=errors, repairs=repairs, **seen)
        return GuardrailOutcome("rejected", rejection(agent, rule.name), errors, rule.name, repaired)
    if warned:
        return GuardrailOutcome("warned", text, warned, warned_rule, repaired)
    return GuardrailOutcome("repaired" if repaired else "passed", text, [], "", repaired)
