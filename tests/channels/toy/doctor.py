"""``bot doctor`` for the toy channel: the toy platform "knows" tokens that start with ``toy-``."""

from __future__ import annotations

from channels.base import Finding
from tests.channels.toy.settings import ToySettings


async def check(settings: ToySettings) -> list[Finding]:
    if settings.token.startswith("toy-"):
        return [Finding(True, "toy: the toy platform knows this token")]
    return [Finding(False, "toy: the toy platform does not know this token", "set TOY_TOKEN to toy-…")]
