"""Fixtures for the agents tests: a fake Gemini server the real SDK talks to."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.gemini_server import FakeGemini


@pytest.fixture
async def gemini_server() -> AsyncIterator[FakeGemini]:
    """A started fake Gemini server; unused or missing scripted responses fail the test."""
    server = FakeGemini()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
    server.assert_complete()
