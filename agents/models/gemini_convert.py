"""Our messages to Gemini's and back: the request (contents, tool declarations, the config), tool results,
thought signatures, and the answer as a :class:`~agents.models.base.ModelResponse` with its usage.

Thought signatures (opaque bytes Gemini needs back on the next request) are kept
base64-encoded in ``provider_meta["gemini"]["thought_signature"]`` of the
:class:`ToolCall` (function-call parts) or the message (text parts), so a history
that went through JSON is accepted again.  The client and its retries are :mod:`agents.models.gemini`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from google.genai import types

from agents.messages import Message, ToolCall, ToolResult
from agents.models.base import Generation, ModelError, ModelResponse, ToolDeclaration, Usage
from agents.models.gemini_media import with_media
from agents.models.gemini_schema import SchemaError, ToolNames, sanitize_schema

log = logging.getLogger(__name__)

META_KEY = "gemini"
_BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE"}


# -- request ---------------------------------------------------------------


def build_request(
    messages: Sequence[Message],
    tools: Sequence[ToolDeclaration],
    system: str | None,
    response_schema: dict[str, Any] | None,
    media: dict[str, types.Part] | None,
    generation: Generation,
) -> tuple[ToolNames, types.GenerateContentConfig, list[types.Content]]:
    """The tool names, config and contents of one call; a schema Gemini cannot take raises :class:`SchemaError`
    or pydantic's ``ValidationError`` (the client words them), a request Gemini cannot answer :class:`ModelError`."""
    if tools and response_schema is not None:
        raise ModelError("Gemini cannot combine tools with a structured (JSON) answer in one call")
    names = ToolNames(t.name for t in tools)
    config = types.GenerateContentConfig(
        system_instruction=system or None,
        tools=[types.Tool(function_declarations=[declaration(t, names) for t in tools])] if tools else None,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        **generation.gemini(),
    )
    if response_schema is not None:
        config.response_mime_type = "application/json"
        config.response_schema = types.Schema.model_validate(sanitize_schema(response_schema))
    contents = to_contents(messages, names, media)
    if not contents:
        raise ModelError("Nothing to send to Gemini: the conversation is empty")
    return names, config, contents


def to_contents(
    messages: Sequence[Message], names: ToolNames, media: dict[str, types.Part] | None = None
) -> list[types.Content]:
    """Our history as Gemini ``contents`` (``media``: the parts of its files, by id); adjacent turns of one
    role are merged."""
    contents: list[types.Content] = []
    call_order: dict[str, int] = {}
    for message in messages:
        parts: list[types.Part] = []
        if message.role == "user":
            role = "user"
            parts.extend(with_media(message, media or {}))
        elif message.role == "assistant":
            role = "model"
            if message.text:
                parts.append(types.Part(text=message.text, thought_signature=_signature(message.provider_meta)))
            for call in message.tool_calls:
                fc = types.FunctionCall(id=call.id, name=names.to(call.name), args=dict(call.args))
                parts.append(types.Part(function_call=fc, thought_signature=_signature(call.provider_meta)))
            if message.tool_calls:
                call_order = {c.id: i for i, c in enumerate(message.tool_calls)}
        else:
            role = "user"
            # Gemini pairs responses with calls by position as well as id: keep the calls' order.
            ordered = sorted(message.tool_results, key=lambda r: call_order.get(r.call_id, len(call_order)))
            for result in ordered:
                fr = types.FunctionResponse(id=result.call_id, name=names.to(result.name), response=_response(result))
                parts.append(types.Part(function_response=fr))
        if not parts:
            continue
        if contents and contents[-1].role == role and contents[-1].parts is not None:
            contents[-1].parts.extend(parts)
        else:
            contents.append(types.Content(role=role, parts=parts))
    return contents


def declaration(tool: ToolDeclaration, names: ToolNames) -> types.FunctionDeclaration:
    try:
        params = sanitize_schema(tool.parameters)
    except SchemaError as exc:
        raise SchemaError(f"tool {tool.name!r}: {exc}") from exc
    # A function without parameters must omit them: Gemini rejects an OBJECT with no properties here.
    schema = types.Schema.model_validate(params) if params.get("properties") else None
    return types.FunctionDeclaration(name=names.to(tool.name), description=tool.description, parameters=schema)


def _response(result: ToolResult) -> dict[str, Any]:
    # The SDK serialises with pydantic; anything JSON cannot say becomes its string form.
    content = json.loads(json.dumps(result.content, default=str))
    if result.is_error:
        return {"error": content}
    return content if isinstance(content, dict) else {"result": content}


def _meta(signature: bytes | None) -> dict[str, Any] | None:
    if not signature:
        return None
    return {META_KEY: {"thought_signature": base64.b64encode(signature).decode("ascii")}}


def _signature(meta: dict[str, Any] | None) -> bytes | None:
    ours = meta.get(META_KEY) if isinstance(meta, dict) else None
    encoded = ours.get("thought_signature") if isinstance(ours, dict) else None
    if not isinstance(encoded, str):
        return None
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        log.warning("ignoring a malformed Gemini thought signature in the history")
        return None


# -- answer ----------------------------------------------------------------


def parse_response(response: Any, names: ToolNames, *, structured: bool, model: str) -> ModelResponse:
    """Gemini's answer as our :class:`ModelResponse` (``structured``: its text must be JSON; ``model``: the name
    used when the answer names none); an answer with neither text nor calls raises :class:`ModelError`."""
    candidate = response.candidates[0] if response.candidates else None
    parts = (candidate.content.parts or []) if candidate is not None and candidate.content is not None else []
    finish = finish_reason(response)
    texts: list[str] = []
    calls: list[ToolCall] = []
    text_signature: bytes | None = None
    for part in parts:
        if part.function_call is not None:
            fc = part.function_call
            calls.append(
                ToolCall(
                    # Older models send no ids; ours must be unique to pair the results.
                    id=fc.id or f"gemini-{uuid.uuid4().hex[:12]}",
                    name=names.back(fc.name or ""),
                    args=dict(fc.args or {}),
                    provider_meta=_meta(part.thought_signature),
                )
            )
            continue
        if part.thought_signature:
            text_signature = part.thought_signature
        if part.text and not part.thought:  # thought summaries are not part of the answer
            texts.append(part.text)
    if not texts and not calls:
        feedback = getattr(response, "prompt_feedback", None)
        blocked = getattr(getattr(feedback, "block_reason", None), "value", None)
        if blocked:
            raise ModelError(f"Gemini refused to answer (blocked: {blocked})")
        if finish in _BLOCKED:
            raise ModelError(f"Gemini stopped without an answer (finish reason: {finish})")
        raise ModelError(f"Gemini returned an empty answer (finish reason: {finish})")
    text = "".join(texts) or None
    parsed: Any = None
    if structured:
        try:
            parsed = json.loads(text or "")
        except ValueError as exc:
            hint = " (cut off at the output limit)" if finish == "MAX_TOKENS" else ""
            raise ModelError(f"Gemini returned invalid JSON for the requested schema{hint}") from exc
    usage = usage_of(response.usage_metadata)
    if finish not in ("STOP", "unknown"):
        log.info("gemini answer finished with %s", finish)
    return ModelResponse(
        text=text,
        tool_calls=tuple(calls),
        usage=usage,
        model=response.model_version or model,
        parsed=parsed,
        provider_meta=_meta(text_signature),
        truncated=finish == "MAX_TOKENS",
    )


def usage_of(meta: Any) -> Usage:
    if meta is None:
        return Usage()
    thinking = meta.thoughts_token_count or 0
    tool_prompt = meta.tool_use_prompt_token_count or 0
    return Usage(
        # The prompt count leaves out the tool-use prompt; both are billed as input.
        input_tokens=(meta.prompt_token_count or 0) + tool_prompt,
        # Thinking tokens are billed as output, so they count as output here.
        output_tokens=(meta.candidates_token_count or 0) + thinking,
        cached_tokens=meta.cached_content_token_count or 0,
        tool_prompt_tokens=tool_prompt,
        thinking_tokens=thinking,
    )


def finish_reason(response: Any) -> str:
    candidate = response.candidates[0] if response.candidates else None
    return getattr(getattr(candidate, "finish_reason", None), "value", None) or "unknown"
