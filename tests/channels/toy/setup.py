"""``bot init`` for the toy channel: one question (``--toy-mode``) and one secret."""

from __future__ import annotations

from collections.abc import Mapping

from channels.setup import ChannelSetup, Question, Secret


class ToySetup(ChannelSetup):
    questions = (Question("mode", "Toy: poll or hook", "poll", ("poll", "hook")),)
    id_hint = "toy user names"

    def lines(self, answers: Mapping[str, str]) -> list[str]:
        return ["token: ${TOY_TOKEN}", f"mode: {answers.get('mode', 'poll')}"]

    def secrets(self, answers: Mapping[str, str]) -> list[Secret]:
        return [Secret("TOY_TOKEN", "the toy server's settings page", "toy-0123456789")]

    def serves_http(self, answers: Mapping[str, str]) -> bool:
        return answers.get("mode") == "hook"


SETUP = ToySetup()
