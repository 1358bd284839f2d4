"""``channels.toy``: a token, and how it receives (polling, or a webhook on the shared HTTP server)."""

from __future__ import annotations

from typing import Literal

from channels.base import ChannelSection


class ToySettings(ChannelSection):
    token: str = ""
    mode: Literal["poll", "hook"] = "poll"

    def problems(self) -> list[str]:
        return [] if self.token else ["channels.toy.token is empty: set TOY_TOKEN in the environment"]

    def serves_http(self) -> bool:
        return self.mode == "hook"

    def command_prefix(self) -> str:
        return "!"
