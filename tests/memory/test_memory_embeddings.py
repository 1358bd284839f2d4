"""Semantic recall beside full-text search: with ``memory.embeddings.model`` the memories are embedded by the
configured provider (the real openai / google-genai clients against fake servers) and a message that shares no
word with a memory still recalls it; without a working embedder, full-text recall goes on."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models.base import ModelRequest
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI

FILLER = [f"Note {i}: the meeting room {i} has a projector" for i in range(30)]


def recalled(request: ModelRequest) -> str:
    system = request.system or ""
    return system[system.find("What you remember") :]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
async def test_a_memory_with_no_shared_word_is_recalled_by_meaning(
    provider: str, make_harness: Any, scripted: Any, openai_server: FakeOpenAI, gemini_server: FakeGemini
) -> None:
    server: Any = openai_server if provider == "openai" else gemini_server
    url = openai_server.base_url if provider == "openai" else gemini_server.base_url
    name = "text-embedding-3-small" if provider == "openai" else "gemini-embedding-001"
    model = scripted("Max is due for his shots.")
    h = await make_harness(
        model,
        model={"providers": {provider: {"api_key": "test-key-123456", "base_url": url}}},
        memory={"embeddings": {"model": f"{provider}/{name}"}, "budget_tokens": 80},
    )
    service = h.gateway.memory
    await service.remember_text("console:c1", "u1", "Owns a golden retriever named Max")
    for fact in FILLER:
        await service.remember_text("console:c1", "u1", fact)
    assert server.embedded[0] == ["Owns a golden retriever named Max"] and len(server.embedded) == 31

    await h.say("book an appointment with the vet for my puppy")
    assert server.embedded[-1] == ["book an appointment with the vet for my puppy"]
    block = recalled(model.requests[0])
    assert block.splitlines()[1].startswith("- #1 Owns a golden retriever named Max"), block
    stored = await h.gateway.store.read("SELECT model FROM memory_vectors WHERE memory_id = 1")
    assert stored == [(name,)]


async def test_without_a_reachable_embedder_full_text_recall_goes_on(make_harness: Any, scripted: Any) -> None:
    model = scripted("Noted.")
    h = await make_harness(
        model,
        model={"providers": {"openai": {"api_key": "test-key-123456", "base_url": "http://127.0.0.1:9/v1"}}},
        memory={"embeddings": {"model": "openai/text-embedding-3-small", "timeout_s": 2}},
    )
    memory_id, new = await h.gateway.memory.remember_text("console:c1", "u1", "Prefers window seats on flights")
    assert new and await h.gateway.store.read("SELECT count(*) FROM memory_vectors") == [(0,)]
    await h.say("book my flights please")
    assert f"#{memory_id} Prefers window seats on flights" in (model.requests[0].system or "")
