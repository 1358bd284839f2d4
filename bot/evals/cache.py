"""``bot eval``'s response cache: every model call of a trial is answered from a recorded answer when there is one.

A call's key is a digest of the model's label (``provider/name``) and generation settings, the canonical request
(system prompt, messages, tools offered, response schema; a file sent by its content, the trial's own folder by a
mark, so two runs of a case ask the same), the trial's attempt (``--repeat 3`` still samples three answers) and
which time this same request is made in the trial (two identical requests may get two answers).  A hit answers as
the model did (text, tool calls, JSON, usage; a stream gives its text, then the answer) and is marked
``from_cache``: it costs nothing and is counted apart.  A miss asks the model and keeps its answer; a failed call
(a timeout, a 500) is not kept.  The offline and scripted models are not cached (they cost nothing).

Where answers come from: the cache (:class:`bot.evals.answers.ResponseCache`), a cassette being replayed (only
there: a request it lacks fails the trial, never reaching the network), or nowhere (``--no-cache``).  A cassette
being recorded gets every answer of the run, from the model or the cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.messages import Media, Message
from agents.models.base import Generation, Model, ModelError, ModelResponse, ToolDeclaration
from bot.evals.answers import AnswerSource, Cassette, Recorded

log = logging.getLogger(__name__)

KEY_VERSION = 1
"""Changes when what a key covers changes (older answers then miss)."""
TRIAL_MARK = "<trial>"
"""Stands for the trial's folder (its store, workspace, attachments) in a request's key."""
UNCACHED = ("offline/",)
"""Models whose calls cost nothing: asked every time."""


class NotInCassette(ModelError):
    """A replayed run made a request the cassette has no answer for (the model is never asked)."""


@dataclass
class RunCache:
    """A run's recorded answers: where they are looked up (``source``: the cache, the cassette replayed, or None),
    whether only there (``replaying``), and the cassette being recorded (``record``)."""

    source: AnswerSource | None
    record: Cassette | None = None
    replaying: bool = False

    def trial(self, case: str, model: str, attempt: int, folder: Path) -> TrialCache:
        return TrialCache(self, case, model, attempt, folder)


class TrialCache:
    """One trial's view of the run's answers: keys with its attempt and each request's count, the turn being
    played (for what a replay misses), and the requests a replay could not answer."""

    def __init__(self, run: RunCache, case: str, model: str, attempt: int, folder: Path) -> None:
        self.run = run
        self.case = case
        self.model = model
        self.attempt = attempt
        self.turn = 0
        """The turn being played (set by the trial)."""
        self.missing: list[str] = []
        """What a replay was asked that its cassette lacks (each ends the trial as an error)."""
        self._paths = sorted({str(folder), str(folder.resolve())}, key=len, reverse=True)
        self._seen: Counter[str] = Counter()
        self._calls = 0

    def wrap(self, label: str, generation: Generation, build: Callable[[], Model]) -> Model:
        """The model ``label`` answering through this cache (a :data:`bot.models.ModelWrap`); a replay does not
        build the model (no key is needed: it is never asked)."""
        if label.startswith(UNCACHED):
            return build()
        return CachedModel(self, label, generation, None if self.run.replaying else build())

    def key(self, label: str, generation: Generation, kind: str, body: dict[str, Any]) -> str:
        canonical = json.dumps(
            {"v": KEY_VERSION, "model": label, "generation": generation.model_dump(exclude_none=True), "kind": kind}
            | body,
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
            default=str,
        )
        for path in self._paths:
            canonical = canonical.replace(path, TRIAL_MARK)
        request = hashlib.sha256(canonical.encode()).hexdigest()
        self._seen[request] += 1
        return hashlib.sha256(f"{request}:{self.attempt}:{self._seen[request]}".encode()).hexdigest()

    async def recorded(self, key: str, label: str) -> dict[str, Any] | None:
        """The answer kept for ``key`` (None: ask the model); raises :class:`NotInCassette` when replaying."""
        found = None
        if self.run.source is not None:
            try:
                found = await self.run.source.get(key)
            except Exception as exc:  # a cache that cannot be read is a miss, not a failed trial
                log.warning("eval cache: could not read an answer (%s); asking the model", exc)
        if found is None and self.run.replaying:
            raise self.missed(label)
        if found is not None:
            self._keep(key, label, found)
        return found

    def missed(self, label: str) -> NotInCassette:
        """What a replay says of a request its cassette has no answer for (kept in :attr:`missing`)."""
        message = (
            f"not in the cassette: case {self.case}, turn {self.turn}, model {label}"
            + (f", attempt {self.attempt}" if self.attempt > 1 else "")
            + " (the request differs from the recorded one, or was not made then); record again with --record"
        )
        self.missing.append(message)
        return NotInCassette(message)

    async def answered(self, key: str, label: str, answer: dict[str, Any]) -> None:
        """Keep the model's answer for ``key`` (in the cache, and the cassette being recorded)."""
        if self.run.source is not None and not self.run.replaying:
            try:
                await self.run.source.put(key, label, answer)
            except Exception as exc:  # the answer stands; the next run asks again
                log.warning("eval cache: could not keep an answer (%s)", exc)
        self._keep(key, label, answer)

    def _keep(self, key: str, label: str, answer: dict[str, Any]) -> None:
        self._calls += 1
        if self.run.record is not None:
            order = (self.case, self.model, self.attempt, self._calls)
            entry = Recorded(key, label, answer, self.case, self.attempt, self.turn, order)
            self.run.record.add(entry)


class CachedModel(Model):
    """``inner`` behind the trial's cache (``inner`` None: a replay, answered from the cassette only)."""

    def __init__(self, cache: TrialCache, label: str, generation: Generation, inner: Model | None) -> None:
        self.cache = cache
        self.label = label
        self.generation = generation
        self.inner = inner
        self.name = inner.name if inner is not None else label.partition("/")[2]
        self.understands = inner.understands if inner is not None else True

    @property
    def streams(self) -> bool:
        return self.inner.streams if self.inner is not None else True  # as the provider's client would

    def __repr__(self) -> str:
        return f"CachedModel({self.label})"

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        key = await self._key(messages, tools, system, response_schema)
        found = await self.cache.recorded(key, self.label)
        if found is not None and (response := _response(found)) is not None:
            return response
        response = await self._asked().request(messages, tools=tools, system=system, response_schema=response_schema)
        await self.cache.answered(key, self.label, _answer(response))
        return response

    async def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolDeclaration] = (), system: str | None = None
    ) -> AsyncIterator[str | ModelResponse]:
        key = await self._key(messages, tools, system, None)
        found = await self.cache.recorded(key, self.label)
        if found is not None and (response := _response(found)) is not None:
            if response.text:  # as a stream gives it: the text, then the whole answer
                yield response.text
            yield response
            return
        async for part in self._asked().stream(messages, tools=tools, system=system):
            if isinstance(part, ModelResponse):
                await self.cache.answered(key, self.label, _answer(part))
            yield part

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        key = self.cache.key(self.label, self.generation, "embed", {"texts": list(texts)})
        found = await self.cache.recorded(key, self.label)
        if found is not None and isinstance(found.get("vectors"), list):
            return [list(map(float, v)) for v in found["vectors"]]
        vectors = await self._asked().embed(texts)
        await self.cache.answered(key, self.label, {"vectors": vectors})
        return vectors

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()

    def _asked(self) -> Model:
        if self.inner is None:  # a replay: the cassette's answer did not read as one
            raise self.cache.missed(self.label)
        return self.inner

    async def _key(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDeclaration],
        system: str | None,
        schema: dict[str, Any] | None,
    ) -> str:
        body = {
            "system": system,
            "messages": [await _message(m) for m in messages],
            "tools": [t.model_dump(mode="json") for t in tools],
            "schema": schema,
        }
        return self.cache.key(self.label, self.generation, "chat", body)


async def _message(message: Message) -> dict[str, Any]:
    data = message.model_dump(mode="json", exclude_defaults=True)
    if message.media:  # by content: an id and a path differ from run to run
        data["media"] = [await _media(m) for m in message.media]
    for result in data.get("tool_results", ()):
        content = result.get("content")
        text = content if isinstance(content, str) else json.dumps(content, sort_keys=True, default=str)
        result["content"] = steady(text)
    return data


_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_VOLATILE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"  # ISO date (and time)
    r"|\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b"  # a time of day
    rf"|\b(?:{_DAYS})\b|\b\d{{1,2}} (?:{_MONTHS}) \d{{4}}\b|\b(?:{_MONTHS}) \d{{1,2}},? \d{{4}}\b"  # a written date
    r"|\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b"  # a generated id (UUID)
)


def steady(text: str) -> str:
    """What a tool returned, without what differs from run to run (times, dates, generated ids): a case whose tool
    tells the time asks the model the same the next time."""
    return _VOLATILE.sub("<~>", text)


async def _media(media: Media) -> dict[str, Any]:
    data = media.model_dump(mode="json", exclude={"id", "path"}, exclude_defaults=True)
    data["sha256"] = await asyncio.to_thread(_file_digest, Path(media.path))
    return data


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as file:
            while chunk := file.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return ""
    return digest.hexdigest()


def _answer(response: ModelResponse) -> dict[str, Any]:
    return {"response": response.model_dump(mode="json", exclude={"from_cache"}, exclude_defaults=True)}


def _response(found: dict[str, Any]) -> ModelResponse | None:
    """The recorded answer (None: it does not read as one, so the model is asked)."""
    try:
        return ModelResponse.model_validate(found["response"]).model_copy(update={"from_cache": True})
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("eval cache: a recorded answer does not read (%s); asking the model", exc)
        return None
