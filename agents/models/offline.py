"""The offline model: lets a person try the bot without an API key.

It never pretends to be an LLM: every answer starts with a label.  It still
exercises the whole pipeline: it answers structured-output requests with a
minimal valid object (a one-step plan), and calls a tool when the user names
it, so routing, plans and confirmations can be tried end to end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agents.messages import Message, ToolCall
from agents.models.base import Model, ModelResponse, ToolDeclaration, Usage

LABEL = "[offline model]"
HINT = "Set GEMINI_API_KEY for real answers."


def _last_user_text(messages: Sequence[Message]) -> str:
    for m in reversed(messages):
        if m.role == "user" and m.text:
            return m.text
    return ""


def example_for(schema: dict[str, Any], text: str) -> Any:
    """A minimal instance of a JSON schema, filling strings with ``text``."""
    kind = schema.get("type")
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema and schema[key]:
            return example_for(schema[key][0], text)
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = schema.get("required", list(props))
        return {k: example_for(props[k], text) for k in required if k in props}
    if kind == "array":
        return [example_for(schema.get("items", {"type": "string"}), text)]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return text


def _overlap(text: str, about: str) -> int:
    """Words of ``about`` found in ``text``: the offline model's stand-in for understanding."""
    words = {w for w in re.findall(r"\w+", about.lower()) if len(w) > 3}
    return sum(1 for w in words if w in text)


class OfflineModel(Model):
    """A labelled stand-in used when no model key is configured."""

    name = "offline"
    understands = False

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        text = _last_user_text(messages)
        usage = Usage(input_tokens=sum(m.size() for m in messages) // 4, output_tokens=16)
        if response_schema is not None:
            parsed = example_for(response_schema, text)
            return ModelResponse(
                text=json.dumps(parsed, ensure_ascii=False), parsed=parsed, usage=usage, model=self.name
            )
        last = messages[-1] if messages else None
        if last is not None and last.role == "tool":
            shown = "; ".join(f"{r.name} → {str(r.content)[:200]}" for r in last.tool_results)
            return ModelResponse(text=f"{LABEL} Tool results: {shown}", usage=usage, model=self.name)
        lowered = text.lower()
        transfers = [t for t in tools if t.name.startswith("transfer_to_")]
        if transfers and len(transfers) == len(tools):
            choice = max(transfers, key=lambda t: _overlap(lowered, f"{t.name} {t.description}"))
            call = ToolCall(id=f"offline-route-{len(messages)}", name=choice.name, args={"reason": "offline guess"})
            return ModelResponse(tool_calls=(call,), usage=usage, model=self.name)
        for tool in tools:
            if tool.name.lower() in lowered and not tool.name.startswith("transfer_to_"):
                args = example_for(tool.parameters, "") if tool.parameters.get("required") else {}
                call = ToolCall(id=f"offline-{len(messages)}", name=tool.name, args=args)
                return ModelResponse(tool_calls=(call,), usage=usage, model=self.name)
        files = [m.label() for m in (last.media if last is not None and last.role == "user" else ())]
        if files:
            got = ", ".join(files)
            reply = f"{LABEL} I received {got} but cannot look inside files without a model. {HINT}"
        else:
            reply = f"{LABEL} You said: {text!r}. I am not a language model, so I can only echo. {HINT}"
        return ModelResponse(text=reply, usage=usage, model=self.name)
