"""A fake OpenAI-compatible ``/v1/chat/completions`` for driving the real ``openai`` client in tests.

Scripted answers in order: a text, tool calls, a stream of chunks (text deltas and tool-call fragments, as
OpenAI sends them, then ``[DONE]``), or an HTTP error with ``Retry-After``.  Every request is recorded
(headers and JSON body); a request with no step left, or a step left unused, fails
:meth:`FakeOpenAI.assert_complete`.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.embeddings import embed


@dataclass
class _Step:
    status: int = 200
    body: dict[str, Any] | None = None
    chunks: list[dict[str, Any]] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    headers: dict[str, str]
    body: dict[str, Any]


def _usage(prompt: int = 12, completion: int = 5, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.embedded: list[list[str]] = []
        """The texts of each ``/v1/embeddings`` request (answered by :func:`tests.fakes.embeddings.embed`)."""
        self.errors: list[str] = []
        self._steps: deque[_Step] = deque()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- scripting

    def reply(self, text: str, *, finish: str = "stop", cached: int = 0) -> None:
        message = {"role": "assistant", "content": text}
        self._steps.append(_Step(body=self._completion(message, finish, cached)))

    def call(self, name: str, args: dict[str, Any], *, id: str = "call_1") -> None:
        tool_call = {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
        self._steps.append(_Step(body=self._completion(message, "tool_calls", 0)))

    def stream(self, *texts: str, call: tuple[str, dict[str, Any]] | None = None) -> None:
        """A streamed answer: ``texts`` as deltas, then (``call``) a tool call sent in fragments."""
        chunks = [self._chunk({"role": "assistant", "content": ""})]
        chunks += [self._chunk({"content": t}) for t in texts]
        if call is not None:
            arguments = json.dumps(call[1])
            half = len(arguments) // 2
            first = {"index": 0, "id": "call_9", "type": "function", "function": {"name": call[0], "arguments": ""}}
            chunks += [self._chunk({"tool_calls": [first]})]
            for piece in (arguments[:half], arguments[half:]):
                chunks += [self._chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})]
        chunks.append(self._chunk({}, finish="tool_calls" if call else "stop"))
        chunks.append({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "fake", "choices": [],
                       "usage": _usage()})  # fmt: skip
        self._steps.append(_Step(chunks=chunks))

    def fail(self, status: int, *, retry_after: float | None = None) -> None:
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        body = {"error": {"message": f"fake error {status}", "type": "server_error", "code": None}}
        self._steps.append(_Step(status=status, body=body, headers=headers))

    def assert_complete(self) -> None:
        assert not self.errors, self.errors
        assert not self._steps, f"{len(self._steps)} scripted step(s) left unused"

    # -- serving

    @staticmethod
    def _completion(message: dict[str, Any], finish: str, cached: int) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(cached=cached),
        }

    @staticmethod
    def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def _as_chunks(self, completion: dict[str, Any]) -> list[dict[str, Any]]:
        choice = completion["choices"][0]
        message = choice["message"]
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(message["tool_calls"])]
        usage = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "fake-model", "choices": []}
        counted = completion.get("usage") or _usage()  # the answer's own counts (cached tokens too), streamed last
        return [self._chunk(delta), self._chunk({}, finish=choice["finish_reason"]), {**usage, "usage": counted}]

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        self.embedded.append(texts)
        data = [{"object": "embedding", "index": i, "embedding": embed(t)} for i, t in enumerate(texts)]
        return web.json_response(
            {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        )

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(Recorded(dict(request.headers), body))
        if not self._steps:
            self.errors.append(f"request #{len(self.requests)} found no scripted step")
            return web.json_response({"error": {"message": "no scripted step"}}, status=400)
        step = self._steps.popleft()
        if step.chunks is None and step.status == 200 and body.get("stream") and step.body is not None:
            step = _Step(chunks=self._as_chunks(step.body))  # a whole answer to a streaming request: one go
        if step.chunks is None:
            return web.json_response(step.body, status=step.status, headers=step.headers)
        if not body.get("stream"):
            self.errors.append(f"request #{len(self.requests)} met a streamed step without stream=true")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for chunk in step.chunks:
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
