"""The Gemini model client, over google-genai's async client.

Configuration is explicit: the API key, base URL and API version are passed in,
never read from ``GOOGLE_*``/``GEMINI_*`` variables (the SDK would otherwise pick
up ``GOOGLE_API_KEY``, ``GOOGLE_GEMINI_BASE_URL``, ``GOOGLE_GENAI_USE_VERTEXAI``,
``GOOGLE_GENAI_API_VERSION`` and its record/replay mode from the environment).

Retries live here and only here: the SDK's own retry (and its implicit retry of
connection errors, which sleeps 1-10 s) is disabled with ``HttpRetryOptions(attempts=1)``.
429 and 5xx answers and connection failures are retried up to ``max_retries`` times
with exponential backoff and jitter, honouring ``Retry-After`` or Google's
``RetryInfo.retryDelay``.  A timeout is not retried: the caller already waited
``timeout_s`` and gets a :class:`ModelTimeout` at once.

Our messages become Gemini's, and its answers ours, in :mod:`agents.models.gemini_convert` (thought signatures
included); this module is the transport: calls, streaming, retries and the wording of failures.

Structured output (``response_schema``) asks for JSON with the sanitised schema;
it cannot be combined with tools.  An answer that is not valid JSON raises
:class:`ModelError` (the runners rely on ``parsed`` being set).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiohttp
from google import genai
from google.genai import errors, types
from google.genai.client import DebugConfig
from pydantic import ValidationError

from agents.clock import SYSTEM_CLOCK, Clock
from agents.messages import Message
from agents.models.base import (
    Generation,
    Model,
    ModelError,
    ModelResponse,
    ModelTimeout,
    ModelUnavailable,
    ToolDeclaration,
    retry_delay,
)
from agents.models.gemini_convert import build_request, finish_reason, parse_response
from agents.models.gemini_media import INLINE_MAX_BYTES, media_parts
from agents.models.gemini_schema import SchemaError, ToolNames

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
_GRACE_S = 5.0  # our own bound on a call, on top of the SDK's timeout, in case a transport ignores it


class GeminiModel(Model):
    """A :class:`Model` backed by the Gemini API (``client.aio.models.generate_content``).

    ``timeout_s`` bounds one HTTP attempt; ``max_retries`` counts retries after the
    first attempt; the n-th retry waits about ``backoff_base_s * 2**n`` seconds
    (at most ``backoff_max_s``), or longer when the server asks for it.  A
    server-requested wait above ``max_retry_after_s`` ends the retries at once.  The waits are on ``clock``.
    """

    def __init__(
        self,
        model: str,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
        max_retry_after_s: float = 30.0,
        api_version: str = "v1beta",
        inline_max_bytes: int = INLINE_MAX_BYTES,
        generation: Generation | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not api_key or not api_key.strip():
            raise ValueError("Gemini needs an API key")
        self.name = model
        self.model = model
        self.base_url = base_url or DEFAULT_BASE_URL
        self._key = api_key.strip()
        self._timeout_s = timeout_s
        self._max_retries = max(0, max_retries)
        self._backoff_base_s = backoff_base_s
        self._backoff_max_s = backoff_max_s
        self._max_retry_after_s = max_retry_after_s
        self._inline_max = inline_max_bytes
        self.generation = generation or Generation()
        self.clock = clock
        http_options = types.HttpOptions(
            base_url=self.base_url,
            api_version=api_version,
            timeout=max(1, round(timeout_s * 1000)),  # the SDK counts milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        # Kept for the model's lifetime: a client that is garbage collected closes its sessions.
        self._client = genai.Client(
            vertexai=False,
            api_key=self._key,
            http_options=http_options,
            debug_config=DebugConfig(client_mode=None, replays_directory=None, replay_id=None),
        )

    def __repr__(self) -> str:
        return f"GeminiModel(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        await self._client.aio.aclose()
        self._client.close()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """``batchEmbedContents``: one vector per text (no retries: memory recall goes on without it)."""
        try:
            async with asyncio.timeout(self._timeout_s + _GRACE_S):
                result = await self._client.aio.models.embed_content(model=self.model, contents=list(texts))
        except errors.APIError as exc:
            raise ModelError(self._api_message(exc, 1)) from None
        except TimeoutError as exc:
            raise ModelTimeout(f"Gemini did not embed within {self._timeout_s:g} s") from exc
        except (aiohttp.ClientError, ConnectionError) as exc:
            raise ModelUnavailable(f"Could not reach Gemini ({type(exc).__name__})") from exc
        vectors = [list(e.values or []) for e in result.embeddings or []]
        if len(vectors) != len(texts):
            raise ModelError(f"Gemini returned {len(vectors)} embeddings for {len(texts)} texts")
        return vectors

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        media = await media_parts(self._client, messages, self._inline_max) if _has_media(messages) else None
        names, config, contents = self._prepare(messages, tools, system, response_schema, media)
        response = await self._generate(contents, config)
        if finish_reason(response) == "MALFORMED_FUNCTION_CALL":
            log.info("gemini: malformed function call; asking once more")
            response = await self._generate(contents, config)
        return parse_response(response, names, structured=response_schema is not None, model=self.model)

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
    ) -> AsyncIterator[str | ModelResponse]:
        """``streamGenerateContent``: answer text as it comes (thought summaries left out), then the whole
        response (function calls assembled, usage from the last chunk).  Failures before the first chunk are
        retried like :meth:`request`; a stream cut off later raises :class:`ModelError`."""
        media = await media_parts(self._client, messages, self._inline_max) if _has_media(messages) else None
        names, config, contents = self._prepare(messages, tools, system, None, media)
        first, chunks = await self._generate(contents, config, stream=True)
        parts: list[Any] = []
        last: Any = None
        try:
            async with asyncio.timeout(self._timeout_s + _GRACE_S):
                async for chunk in _prepend(first, chunks):
                    last = chunk
                    candidate = chunk.candidates[0] if chunk.candidates else None
                    for part in (candidate.content.parts or []) if candidate and candidate.content else []:
                        parts.append(part)
                        if part.text and not part.thought and part.function_call is None:
                            yield part.text
        except TimeoutError as exc:
            raise ModelTimeout(f"Gemini did not finish answering within {self._timeout_s:g} s") from exc
        except (errors.APIError, aiohttp.ClientError, ConnectionError) as exc:
            raise ModelUnavailable(f"Gemini's answer was cut off ({type(exc).__name__})") from None
        if last is None:
            raise ModelError("Gemini returned an empty answer (no chunk)")
        finish = last.candidates[0].finish_reason if last.candidates else None
        whole = types.GenerateContentResponse(
            candidates=[types.Candidate(content=types.Content(role="model", parts=parts), finish_reason=finish)],
            usage_metadata=last.usage_metadata,
            model_version=last.model_version,
            prompt_feedback=last.prompt_feedback,
        )
        yield parse_response(whole, names, structured=False, model=self.model)

    def _prepare(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDeclaration],
        system: str | None,
        response_schema: dict[str, Any] | None,
        media: dict[str, types.Part] | None = None,
    ) -> tuple[ToolNames, types.GenerateContentConfig, list[types.Content]]:
        try:
            names, config, contents = build_request(messages, tools, system, response_schema, media, self.generation)
        except (SchemaError, ValidationError) as exc:
            raise ModelError(f"Gemini cannot accept this request: {self._redact(str(exc))[:300]}") from exc
        log.debug("gemini request: model=%s contents=%d tools=%d", self.model, len(contents), len(tools))
        return names, config, contents

    # -- transport -------------------------------------------------------

    async def _generate(
        self, contents: list[types.Content], config: types.GenerateContentConfig, *, stream: bool = False
    ) -> Any:
        """The response (``stream``: its first chunk and the iterator of the rest; a refusal surfaces at the
        first chunk, so that is when it is retried)."""
        attempt = 0
        models = self._client.aio.models

        async def opened(**kwargs: Any) -> tuple[Any, AsyncIterator[Any]]:
            chunks = await models.generate_content_stream(**kwargs)
            return await anext(chunks, None), chunks

        call: Any = opened if stream else models.generate_content
        while True:
            try:
                async with asyncio.timeout(self._timeout_s + _GRACE_S):
                    return await call(model=self.model, contents=contents, config=config)
            except errors.APIError as exc:
                code = exc.code or 0
                retryable = code == 429 or 500 <= code < 600
                wait = _server_delay(exc) if retryable else None
                # "from None": the SDK's error text repeats the server's body verbatim (a proxy
                # could echo the key); the redacted essentials are in our message and the debug log.
                if not retryable or attempt >= self._max_retries:
                    log.debug("gemini error body: %s", self._redact(json.dumps(exc.details, default=str))[:2000])
                    failed = ModelUnavailable if retryable else ModelError
                    raise failed(self._api_message(exc, attempt + 1)) from None
                if wait is not None and wait > self._max_retry_after_s:
                    raise ModelUnavailable(
                        f"Gemini is rate-limiting requests ({code}); it asks to retry in {wait:.0f} s"
                    ) from None
                reason = f"{code} {exc.status or ''}".strip()
            except TimeoutError as exc:
                raise ModelTimeout(f"Gemini did not answer within {self._timeout_s:g} s") from exc
            except (aiohttp.ClientError, ConnectionError) as exc:
                if attempt >= self._max_retries:
                    raise ModelUnavailable(f"Could not reach Gemini ({type(exc).__name__})") from exc
                wait, reason = None, type(exc).__name__
            delay = self._backoff(attempt, wait)
            attempt += 1
            log.warning("Gemini call failed (%s); retry %d/%d in %.2f s", reason, attempt, self._max_retries, delay)
            await self.clock.sleep(delay)

    def _backoff(self, attempt: int, server_delay: float | None) -> float:
        return retry_delay(attempt, self._backoff_base_s, self._backoff_max_s, server_delay)

    def _api_message(self, exc: errors.APIError, attempts: int) -> str:
        code, status = exc.code, exc.status or ""
        detail = self._redact(str(exc.message or ""))[:300]
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        if code == 429:
            return f"Gemini is rate-limiting requests (429 {status}){tried}; try again later"
        if code >= 500:
            return f"Gemini is unavailable ({code} {status}){tried}; try again later"
        if code in (401, 403):
            return f"Gemini refused access ({code} {status}): check the API key and its permissions"
        if code == 404:
            return f"Gemini does not know model {self.model!r} ({code})"
        return f"Gemini rejected the request ({code} {status}): {detail}"

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***")


def _has_media(messages: Sequence[Message]) -> bool:
    return any(m.media for m in messages)


async def _prepend(first: Any, rest: AsyncIterator[Any]) -> AsyncIterator[Any]:
    if first is not None:
        yield first
    async for item in rest:
        yield item


def _server_delay(exc: errors.APIError) -> float | None:
    """Seconds the server asked us to wait: ``Retry-After`` or ``RetryInfo.retryDelay``."""
    headers = getattr(exc.response, "headers", None)
    value = headers.get("Retry-After") if headers is not None else None
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass  # an HTTP date: fall back to our own backoff
    error = exc.details.get("error", exc.details) if isinstance(exc.details, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        match = re.fullmatch(r"(\d+(?:\.\d+)?)s", str(delay or ""))
        if match:
            return float(match.group(1))
    return None
