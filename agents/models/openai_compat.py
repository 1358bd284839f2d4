"""Any OpenAI-compatible endpoint (OpenAI, OpenRouter, Ollama, vLLM, LM Studio) through the official client.

``/v1/chat/completions`` with function tools, streaming (text deltas; tool calls assembled by index), images
as data URLs, WAV/MP3 audio as ``input_audio``, PDFs as ``file`` parts and text files as text (an endpoint
that cannot take a kind answers with an error the user is told about).  The client's own retries are off:
429 and 5xx are retried here with backoff, honouring ``Retry-After``, so the policy is the same for every
provider.  A local endpoint needs no key.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from agents.clock import SYSTEM_CLOCK, Clock
from agents.messages import Media, Message, ToolCall
from agents.models.base import (
    Generation,
    Model,
    ModelError,
    ModelResponse,
    ModelTimeout,
    ModelUnavailable,
    ToolDeclaration,
    Usage,
    retry_delay,
)
from agents.models.gemini_schema import ToolNames

log = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}


class OpenAIModel(Model):
    def __init__(
        self,
        model: str,
        api_key: str = "",
        *,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
        max_retry_after_s: float = 30.0,
        generation: Generation | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """Retries wait on ``clock``."""
        from openai import AsyncOpenAI  # 0.5 s to import: only when this provider is used

        self.name = model
        self.model = model
        self.base_url = base_url
        # A key-less local server still gets a header: the client insists on one.
        self._client = AsyncOpenAI(
            api_key=api_key.strip() or "no-key", base_url=base_url, timeout=timeout_s, max_retries=0
        )
        self._key = api_key.strip()
        self._timeout_s = timeout_s
        self._max_retries = max(0, max_retries)
        self._backoff = (backoff_base_s, backoff_max_s)
        self._max_retry_after_s = max_retry_after_s
        self.generation = generation or Generation()
        self.clock = clock

    def __repr__(self) -> str:
        return f"OpenAIModel(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        await self._client.close()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """``/v1/embeddings``: one vector per text (no retries: memory recall goes on without it)."""
        import openai

        try:
            result = await self._client.embeddings.create(model=self.model, input=list(texts))
        except openai.APIStatusError as exc:
            raise ModelError(self._refusal(exc.status_code, exc)) from None
        except openai.APITimeoutError as exc:
            raise ModelTimeout(f"{self.model} did not embed within {self._timeout_s:g} s") from exc
        except openai.APIConnectionError:
            raise ModelUnavailable(f"could not reach {self.base_url or 'OpenAI'}") from None
        vectors = [list(item.embedding) for item in sorted(result.data, key=lambda d: d.index)]
        if len(vectors) != len(texts):
            raise ModelError(f"{self.model} returned {len(vectors)} embeddings for {len(texts)} texts")
        return vectors

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        names = ToolNames((t.name for t in tools), openai_tool_name)
        body = await self._body(messages, tools, system, response_schema, names)
        completion = await self._call(body)
        choice = completion.choices[0] if completion.choices else None
        if choice is None:
            raise ModelError(f"{self.model} returned no answer")
        calls = tuple(
            _call(c.id, names.back(c.function.name), c.function.arguments) for c in choice.message.tool_calls or ()
        )
        text = choice.message.content
        parsed = None
        if response_schema is not None and text:
            try:
                parsed = json.loads(_unfenced(text))
            except ValueError:
                parsed = None
        return ModelResponse(
            text=text,
            tool_calls=calls,
            usage=_usage(completion.usage),
            model=completion.model or self.model,
            parsed=parsed,
            truncated=choice.finish_reason == "length",
        )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
    ) -> AsyncIterator[str | ModelResponse]:
        names = ToolNames((t.name for t in tools), openai_tool_name)
        body = await self._body(messages, tools, system, None, names)
        chunks = await self._call({**body, "stream": True, "stream_options": {"include_usage": True}})
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage, finish, model = Usage(), None, self.model
        try:
            async with asyncio.timeout(self._timeout_s + 5):
                async for chunk in chunks:
                    model = chunk.model or model
                    if chunk.usage is not None:
                        usage = _usage(chunk.usage)
                    for choice in chunk.choices or ():
                        finish = choice.finish_reason or finish
                        delta = choice.delta
                        if delta.content:
                            text.append(delta.content)
                            yield delta.content
                        for part in delta.tool_calls or ():
                            slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                            slot["id"] = part.id or slot["id"]
                            if part.function is not None:
                                slot["name"] += part.function.name or ""
                                slot["arguments"] += part.function.arguments or ""
        except TimeoutError as exc:
            raise ModelTimeout(f"{self.model} did not finish answering within {self._timeout_s:g} s") from exc
        except Exception as exc:  # the client's stream errors: the answer was cut off
            raise ModelUnavailable(f"{self.model}'s answer was cut off ({type(exc).__name__})") from None
        yield ModelResponse(
            text="".join(text) or None,
            tool_calls=tuple(
                _call(c["id"] or f"call_{i}", names.back(c["name"]), c["arguments"]) for i, c in sorted(calls.items())
            ),
            usage=usage,
            model=model,
            truncated=finish == "length",
        )

    # -- the request

    async def _body(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDeclaration],
        system: str | None,
        response_schema: dict[str, Any] | None,
        names: ToolNames,
    ) -> dict[str, Any]:
        chat: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        for message in messages:
            chat.extend(await _converted(message, names))
        body: dict[str, Any] = {"model": self.model, "messages": chat}
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": names.to(t.name), "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
        if response_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": response_schema},
            }
        if self.generation.temperature is not None:
            body["temperature"] = self.generation.temperature
        if self.generation.max_output_tokens is not None:
            body["max_tokens"] = self.generation.max_output_tokens
        return body

    async def _call(self, body: dict[str, Any]) -> Any:
        import openai

        attempt = 0
        while True:
            try:
                return await self._client.chat.completions.create(**body)
            except openai.APIStatusError as exc:
                code = exc.status_code
                retryable = code == 429 or code >= 500
                wait = _retry_after(exc.response.headers) if retryable else None
                if not retryable:
                    raise ModelError(self._refusal(code, exc)) from None
                if attempt >= self._max_retries:
                    what = "is rate-limiting requests" if code == 429 else "is unavailable"
                    raise ModelUnavailable(f"{self.model} {what} ({code}) after {attempt + 1} attempts") from None
                if wait is not None and wait > self._max_retry_after_s:
                    raise ModelUnavailable(
                        f"{self.model} is rate-limiting requests; it asks to wait {wait:.0f} s"
                    ) from None
                reason = str(code)
            except openai.APITimeoutError as exc:
                raise ModelTimeout(f"{self.model} did not answer within {self._timeout_s:g} s") from exc
            except openai.APIConnectionError as exc:
                if attempt >= self._max_retries:
                    raise ModelUnavailable(
                        f"could not reach {self.base_url or 'OpenAI'} ({type(exc).__name__})"
                    ) from None
                wait, reason = None, type(exc).__name__
            delay = retry_delay(attempt, *self._backoff, wait)
            attempt += 1
            log.warning(
                "%s call failed (%s); retry %d/%d in %.2f s", self.model, reason, attempt, self._max_retries, delay
            )
            await self.clock.sleep(delay)

    def _refusal(self, code: int, exc: Any) -> str:
        detail = str(getattr(exc, "message", "") or "")
        if self._key:
            detail = detail.replace(self._key, "***")
        if code in (401, 403):
            return f"{self.model}: access refused ({code}); check the API key (OPENAI_API_KEY)"
        if code == 404:
            return f"the endpoint does not know model {self.model!r} (404)"
        return f"{self.model} rejected the request ({code}): {detail[:300]}"


def openai_tool_name(name: str) -> str:
    """The name OpenAI sees for ``name`` (letters, digits, ``_``, ``-``; 64 at most): unchanged when valid,
    else sanitised + hash."""
    if _NAME.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{re.sub(r'[^A-Za-z0-9_-]', '_', name)[:55]}_{digest}"


async def _converted(message: Message, names: ToolNames) -> list[dict[str, Any]]:
    if message.role == "user":
        if not message.media:
            return [{"role": "user", "content": message.text or ""}]
        parts = [await _media_part(m) for m in message.media if not (m.kind == "audio" and m.transcript)]
        if message.text:
            parts.append({"type": "text", "text": message.text})
        return [{"role": "user", "content": parts or ""}]
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.text}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": names.to(c.name), "arguments": json.dumps(c.args, ensure_ascii=False)},
                }
                for c in message.tool_calls
            ]
        return [out]
    return [
        {
            "role": "tool",
            "tool_call_id": r.call_id,
            "content": json.dumps({"error": r.content} if r.is_error else r.content, ensure_ascii=False, default=str),
        }
        for r in message.tool_results
    ]


async def _media_part(media: Media) -> dict[str, Any]:
    path = Path(media.path)
    if not await asyncio.to_thread(path.is_file):
        return {"type": "text", "text": media.gone()}
    data = await asyncio.to_thread(path.read_bytes)
    encoded = base64.b64encode(data).decode("ascii")
    if media.kind == "image":
        return {"type": "image_url", "image_url": {"url": f"data:{media.mime_type};base64,{encoded}"}}
    if media.kind == "audio":
        fmt = _AUDIO_FORMATS.get(media.mime_type)
        if fmt is None:
            return {"type": "text", "text": f"({media.label()}: {media.mime_type} audio this model cannot hear)"}
        return {"type": "input_audio", "input_audio": {"data": encoded, "format": fmt}}
    if media.mime_type == "application/pdf":
        name = media.name or "document.pdf"
        return {"type": "file", "file": {"filename": name, "file_data": f"data:application/pdf;base64,{encoded}"}}
    return {"type": "text", "text": f"{media.name or 'file'}:\n{data.decode('utf-8', 'replace')}"}


def _call(call_id: str, name: str, arguments: str) -> ToolCall:
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return ToolCall(id=call_id, name=name, args={}, invalid=f"the arguments are not JSON: {arguments[:200]!r}")
    return ToolCall(id=call_id, name=name, args=args)


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    thinking = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None)
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cached_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0,
        thinking_tokens=thinking or 0,
    )


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _unfenced(text: str) -> str:
    match = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    return match.group(1) if match else text
