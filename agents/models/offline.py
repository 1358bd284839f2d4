"""The offline model: lets a person try the bot without an API key.

It never pretends to be an LLM: every answer starts with a label.  It understands a few plain requests
(:mod:`agents.models.offline_intents`) and answers them the way a model would, through the pipeline:
"what time is it in Tokyo?" calls ``get_current_time``, "remind me in 2 minutes to stretch" (or "tomorrow at 9
to call mom") schedules a message, "write hello to notes.txt" asks for confirmation and writes, "plan a weekend
in Paris" makes a three-step plan to approve, "help me choose a laptop" asks back, a request matching a file
agent hands off to it.  Anything else gets a labelled answer saying what to try.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from agents.clock import SYSTEM_CLOCK
from agents.messages import Message, ToolCall
from agents.models import offline_intents as intents
from agents.models.base import Model, ModelResponse, ToolDeclaration, Usage

LABEL = "[offline model]"
HINT = "Set GEMINI_API_KEY (or configure an OpenAI-compatible model) for real answers."


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


class OfflineModel(Model):
    """A labelled stand-in used when no model key is configured."""

    name = "offline"
    understands = False

    def __init__(self, *, now: Callable[[], datetime] | None = None, timezone: str = "UTC") -> None:
        """``now``: the clock (an aware datetime; the gateway's, so a test's clock moves it); ``timezone``: where
        a reminder's wall-clock time ("tomorrow at 9", "at 5 pm") is read (``jobs.timezone``)."""
        self.now = now or SYSTEM_CLOCK.now
        self.timezone = timezone

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

        def answer(reply: str) -> ModelResponse:
            return ModelResponse(text=f"{LABEL} {reply}", usage=usage, model=self.name)

        def calling(name: str, args: dict[str, Any]) -> ModelResponse:
            call = ToolCall(id=f"offline-{len(messages)}", name=name, args=args)
            return ModelResponse(tool_calls=(call,), usage=usage, model=self.name)

        if response_schema is not None:
            parsed = self._structured(response_schema, text)
            return ModelResponse(
                text=json.dumps(parsed, ensure_ascii=False), parsed=parsed, usage=usage, model=self.name
            )
        last = messages[-1] if messages else None
        if last is not None and last.role == "tool":
            return answer(_results(last))
        by_name = {t.name: t for t in tools}
        if by_name and all(name.startswith("transfer_to_") for name in by_name):  # routing by "LLM"
            chosen = intents.handoff(text, by_name) or (next(iter(by_name)), {"reason": "offline guess"})
            return calling(*chosen)
        step = intents.step_of(text)
        request = step or text
        found = (
            intents.tool_call(request, by_name, self.now, self.timezone)
            or intents.handoff(request, by_name)
            or _named_tool(request, by_name)
        )
        if found is not None:
            return calling(*found)
        if step is not None:
            return answer(f"Done: {step}.")
        files = [m.label() for m in (last.media if last is not None and last.role == "user" else ())]
        if files:
            return answer(f"I received {', '.join(files)} but cannot look inside files without a model. {HINT}")
        return answer(f"{intents.chat_reply(text)} {HINT}")

    @staticmethod
    def _structured(schema: dict[str, Any], text: str) -> Any:
        props = schema.get("properties", {})
        if "steps" in props and "action" not in props:
            return {"steps": intents.plan_steps(text)}
        if "action" in props and "steps" in props:
            decision = intents.replan(text)
            if decision.get("answer"):
                decision["answer"] = f"{LABEL} {decision['answer']}"
            return decision
        return example_for(schema, text)


def _results(message: Message) -> str:
    parts = []
    for result in message.tool_results:
        content = result.content if isinstance(result.content, str) else json.dumps(result.content, ensure_ascii=False)
        if result.is_error:
            parts.append(f"{result.name} was not run: {content}")
        elif result.name == "ask_user":
            parts.append(f"You chose “{content}”. A language model would now suggest what fits; offline, I stop here.")
        else:
            parts.append(content)
    return "; ".join(parts) or "Done."


def _named_tool(text: str, tools: dict[str, ToolDeclaration]) -> tuple[str, dict[str, Any]] | None:
    """A tool the user named outright ("run get_current_time")."""
    lowered = text.lower()
    for name, tool in tools.items():
        if name.lower() in lowered and not name.startswith("transfer_to_"):
            return name, example_for(tool.parameters, "") if tool.parameters.get("required") else {}
    return None
