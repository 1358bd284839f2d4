"""A fake of the Gemini REST API for driving the real google-genai SDK in tests.

The server listens on a free 127.0.0.1 port and answers
``POST /{version}/models/{model}:generateContent`` from a scripted queue.  Each
step is a JSON body (status 200), an HTTP error status (429, 500, ...) with an
optional ``Retry-After`` header, or a delay (to provoke client timeouts).
Every request is recorded (path, headers, JSON body).  A request that finds no
step, an unknown path, or a step left unused makes :meth:`FakeGemini.assert_complete`
fail, which the ``gemini_server`` fixture calls on teardown.

The module also has small builders for response bodies (:func:`text_body`,
:func:`call_body`, :func:`function_call_part`) so tests read like conversations.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.embeddings import embed


@dataclass
class Step:
    """One scripted answer."""

    body: dict[str, Any] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    gap: float = 0.0
    streamed: bool = False


@dataclass
class RecordedRequest:
    """What the SDK sent for one call."""

    method: str
    path: str
    version: str
    model: str
    action: str
    headers: dict[str, str]
    body: Any


def usage(prompt: int = 10, candidates: int = 5, thoughts: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + (thoughts or 0),
    }
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
    return meta


def candidate_body(
    parts: list[dict[str, Any]],
    *,
    finish_reason: str = "STOP",
    prompt_tokens: int = 10,
    output_tokens: int = 5,
    model_version: str | None = None,
) -> dict[str, Any]:
    """A full ``generateContent`` response with one candidate holding ``parts``."""
    body: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish_reason, "index": 0}],
        "usageMetadata": usage(prompt_tokens, output_tokens),
    }
    if model_version:
        body["modelVersion"] = model_version
    return body


def text_body(text: str, **kw: Any) -> dict[str, Any]:
    return candidate_body([{"text": text}], **kw)


def signature(raw: bytes) -> str:
    """How the API encodes ``thoughtSignature`` bytes in JSON."""
    return base64.b64encode(raw).decode("ascii")


def function_call_part(
    name: str, args: dict[str, Any] | None = None, *, id: str | None = None, thought_signature: bytes | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args or {}}
    if id is not None:
        call["id"] = id
    part: dict[str, Any] = {"functionCall": call}
    if thought_signature is not None:
        part["thoughtSignature"] = signature(thought_signature)
    return part


def call_body(*parts: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return candidate_body(list(parts), **kw)


def error_body(code: int, status: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return {"error": error}


_STATUS_NAMES = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}


class FakeGemini:
    """A scripted fake Gemini server; see the module docstring."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self._steps: deque[Step] = deque()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.embedded: list[list[str]] = []
        """The texts of each ``batchEmbedContents`` request (answered by :func:`tests.fakes.embeddings.embed`)."""
        self.uploads: dict[str, dict[str, Any]] = {}
        """Files uploaded through the Files API, by name (``files/N``): their metadata and ``data``."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting -------------------------------------------------------

    def reply(self, body: dict[str, Any]) -> None:
        self._steps.append(Step(body=body))

    def reply_text(self, text: str, **kw: Any) -> None:
        self.reply(text_body(text, **kw))

    def fail(
        self, status: int, message: str = "scripted failure", *, headers: dict[str, str] | None = None, **kw: Any
    ) -> None:
        """Answer with an HTTP error in Google's error envelope."""
        name = _STATUS_NAMES.get(status, "UNAVAILABLE" if status >= 500 else "FAILED_PRECONDITION")
        self._steps.append(Step(body=error_body(status, name, message, **kw), status=status, headers=headers or {}))

    def stream(self, *chunks: dict[str, Any], gap_s: float = 0.0) -> None:
        """Answer a ``streamGenerateContent`` request with these response chunks, ``gap_s`` apart (SSE)."""
        self._steps.append(Step(body={"chunks": list(chunks)}, gap=gap_s, streamed=True))

    def stall(self, seconds: float, body: dict[str, Any] | None = None) -> None:
        """Wait ``seconds`` before answering (the client is expected to time out first)."""
        self._steps.append(Step(body=body or text_body("too late"), delay=seconds))

    @property
    def remaining(self) -> int:
        return len(self._steps)

    def assert_complete(self) -> None:
        problems = list(self.errors)
        if self._steps:
            problems.append(f"{len(self._steps)} scripted response(s) never requested: {list(self._steps)!r}")
        if problems:
            raise AssertionError("fake Gemini server: " + "; ".join(problems))

    # -- serving ---------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/upload/{version}/files", self._upload_start)
        app.router.add_post("/upload-session/{name}", self._upload_bytes)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _upload_start(self, request: web.Request) -> web.StreamResponse:
        """The Files API's resumable upload: ``start`` names an upload URL; its bytes follow there."""
        if request.headers.get("X-Goog-Upload-Command") != "start":
            return web.json_response(error_body(400, "INVALID_ARGUMENT", "fake: expected an upload start"), status=400)
        meta = (await request.json()).get("file", {})
        name = str(len(self.uploads) + 1)
        self.uploads[f"files/{name}"] = {"meta": meta, "data": b""}
        return web.json_response({}, headers={"x-goog-upload-url": f"{self.base_url}/upload-session/{name}"})

    async def _upload_bytes(self, request: web.Request) -> web.StreamResponse:
        name = f"files/{request.match_info['name']}"
        upload = self.uploads[name]
        upload["data"] += await request.read()
        if "finalize" not in request.headers.get("X-Goog-Upload-Command", ""):
            return web.json_response({}, headers={"X-Goog-Upload-Status": "active"})
        file = {
            "name": name,
            "uri": f"{self.base_url}/v1beta/{name}",
            "mimeType": upload["meta"].get("mimeType") or upload["meta"].get("mime_type") or "application/octet-stream",
            "sizeBytes": str(len(upload["data"])),
            "state": "ACTIVE",
        }
        return web.json_response({"file": file}, headers={"X-Goog-Upload-Status": "final"})

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        version, _, rest = request.path.lstrip("/").partition("/")
        model, action = "", ""
        if rest.startswith("models/") and ":" in rest:
            model, _, action = rest.removeprefix("models/").rpartition(":")
        self.requests.append(
            RecordedRequest(request.method, request.path, version, model, action, dict(request.headers), body)
        )
        if request.method == "POST" and action == "batchEmbedContents":
            texts = [" ".join(p.get("text", "") for p in r["content"]["parts"]) for r in body["requests"]]
            self.embedded.append(texts)
            return web.json_response({"embeddings": [{"values": embed(t)} for t in texts]})
        if request.method != "POST" or action not in ("generateContent", "streamGenerateContent"):
            self.errors.append(f"unexpected request {request.method} {request.path}")
            return web.json_response(error_body(404, "NOT_FOUND", "fake: unknown path"), status=404)
        if not self._steps:
            self.errors.append(f"request #{len(self.requests)} found no scripted response")
            # 400 so the client fails at once instead of retrying.
            return web.json_response(error_body(400, "INVALID_ARGUMENT", "fake: no scripted response"), status=400)
        step = self._steps.popleft()
        if step.delay:
            await asyncio.sleep(step.delay)
        if step.status == 200 and step.streamed and action != "streamGenerateContent":
            self.errors.append(f"request #{len(self.requests)} ({action}) met a streamed step")
        if step.status != 200 or action != "streamGenerateContent":
            return web.json_response(step.body or {}, status=step.status, headers=step.headers)
        if not step.streamed:  # a whole answer to a streaming request: one chunk, as Gemini sends a short one
            step = Step(body={"chunks": [step.body or {}]}, streamed=True)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for k, chunk in enumerate((step.body or {}).get("chunks", [])):
            if k and step.gap:
                await asyncio.sleep(step.gap)
            await response.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
        await response.write_eof()
        return response
