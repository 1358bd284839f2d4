"""The console tests' fixtures: a WebEnv with the fake Bot API serving, and signed-in HTTP clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from bot.config.settings import Settings
from tests.helpers.telegram import started
from tests.web.harness import Browserless, WebEnv


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[WebEnv]:
    async with started(WebEnv(make_settings)) as running:
        yield running


@pytest.fixture
async def client_for() -> AsyncIterator[Callable[..., Browserless]]:
    made: list[Browserless] = []

    def make(gateway: object) -> Browserless:
        made.append(Browserless(gateway))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for c in made:
        await c.close()
