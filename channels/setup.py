"""What ``bot init`` asks about a channel and what it writes for it: each channel's answer, so ``bot init`` knows
no channel by name (a plugin names its :class:`ChannelSetup` in ``channels.registry``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    """One thing ``bot init`` asks about a channel: at a terminal, and as the option ``--<flag>``."""

    key: str
    prompt: str
    default: str = ""
    choices: tuple[str, ...] = ()
    """The answers allowed (empty: any text)."""
    flag: str = ""
    """The option's name without ``--`` (default: ``<channel>-<key>``, e.g. ``--telegram-mode``)."""
    when: tuple[str, str] | None = None
    """Asked only when an earlier answer is this (key, value)."""

    def option(self, channel: str) -> str:
        return self.flag or f"{channel}-{self.key.replace('_', '-')}"

    def applies(self, answers: Mapping[str, str]) -> bool:
        return self.when is None or answers.get(self.when[0]) == self.when[1]


@dataclass(frozen=True)
class Secret:
    """A variable the channel's configuration names as ``${VARIABLE}``, listed in ``.env.example``."""

    variable: str
    how: str
    """Where to get it (the comment above it)."""
    placeholder: str = ""
    """A value of the right shape, to check the written file loads (default: any text)."""


class ChannelSetup:
    """A channel's part of ``bot init``; the defaults fit a channel with nothing to ask and no secret."""

    questions: tuple[Question, ...] = ()
    asks_admin: bool = True
    """Ask for the operator's user id (allowed and admin)."""
    id_hint: str = "user ids"
    """What the platform calls the ids in ``allow_from`` (a comment in the file)."""
    comment: str = ""
    """Said after ``enabled: true``."""

    def lines(self, answers: Mapping[str, str]) -> list[str]:
        """The channel's own keys under ``channels.<name>`` (beside enabled, allow_from, admins), unindented."""
        return []

    def secrets(self, answers: Mapping[str, str]) -> list[Secret]:
        """The secrets ``lines`` name, in the order ``.env.example`` lists them."""
        return []

    def serves_http(self, answers: Mapping[str, str]) -> bool:
        """Receives over the shared HTTP server (webhooks): ``bot init`` turns it on."""
        return False

    def listens_publicly(self, answers: Mapping[str, str]) -> bool:
        """The platform reaches it from outside (a webhook): the HTTP server listens on every address, not only
        127.0.0.1."""
        return self.serves_http(answers)

    def sections(self, answers: Mapping[str, str]) -> list[str]:
        """Top-level keys the channel needs besides its own section (the web chat: ``web.enabled``), unindented
        YAML lines."""
        return []
