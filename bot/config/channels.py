"""The ``channels`` section of the settings, and how channel plugins add theirs.

The settings model sits below the channels in the layering (channels import it; it imports no channel). So
each channel plugin registers its section here (:func:`register_section`, called by ``channels.registry`` when
it is imported), and the program that loads the settings installs the channels first: its composition root
imports ``channels.registry`` (``bot.cli.main``, ``bot.gateway.app``; the tests' conftest).  Loading settings
before any channel was registered is an error that says so (the built-in defaults have channel sections).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model


@dataclass(frozen=True)
class IdShape:
    """What a platform's user ids look like, and how a person finds theirs."""

    pattern: re.Pattern[str]
    looks: str
    find: str


ID_SHAPES: dict[str, IdShape] = {
    "telegram": IdShape(
        re.compile(r"[1-9][0-9]{0,19}"),
        "a number such as 123456789",
        "send the bot any message: it replies with your user id (or send it /whoami)",
    ),
    "slack": IdShape(
        re.compile(r"[UW][A-Z0-9]+"),
        "U or W then capital letters and digits, such as U0123ABCD",
        "in Slack open your profile, ⋮ (more) → Copy member ID; or send the bot a message: it replies with your id",
    ),
    "discord": IdShape(
        re.compile(r"[0-9]{17,20}"),
        "a snowflake of 17 to 20 digits, such as 123456789012345678",
        "in Discord turn on Settings → Advanced → Developer Mode, then right-click your name → Copy User ID",
    ),
}
"""The platforms whose ids ``admins`` (and ``bot init --admin``) are checked against."""


def user_id_problem(channel: str, user_id: str) -> str | None:
    """Why ``user_id`` is not a user id of ``channel`` (None: it is, or the channel's ids are not checked)."""
    shape = ID_SHAPES.get(channel)
    if shape is None or user_id == "*" or shape.pattern.fullmatch(user_id):
        return None
    name = channel.capitalize()
    what = "a @name, not a user id" if user_id.startswith("@") else f"not a {name} user id"
    return f"{user_id!r} is {what}: a {name} user id is {shape.looks}; to find yours, {shape.find}"


class ChannelSection(BaseModel):
    """Keys every channel has (Conventions); platform keys are added per channel."""

    # Platform ids are numbers on Telegram and Discord; YAML reads them unquoted as ints.
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    enabled: bool = False
    api_base: str | None = None
    allow_from: list[str] = Field(default_factory=list)
    admins: list[str] = Field(default_factory=list)
    mention_policy: Literal["mention", "all"] = "mention"
    unknown_senders: Literal["pair", "reply", "ignore"] = "pair"
    """What a sender outside ``allow_from`` gets: a pairing code an admin approves with ``/pair CODE`` (in a
    direct chat; in a group, where to ask for one), a refusal naming their id, or silence."""
    streaming: bool = True
    """Show an answer while the model writes it (a preview message edited about once a second)."""

    def allows(self, user_id: str) -> bool:
        return "*" in self.allow_from or user_id in self.allow_from

    def is_admin(self, user_id: str) -> bool:
        return "*" in self.admins or user_id in self.admins

    def problems(self) -> list[str]:
        """What is missing for this channel to start (checked at load when it is enabled)."""
        return []

    def serves_http(self) -> bool:
        """Receives over the shared HTTP server (webhooks): ``bot doctor`` checks the port for it."""
        return False

    def command_prefix(self) -> str:
        """What people type before a command's name: ``/`` on most platforms; Slack keeps ``/help`` for itself,
        so its users type the app's slash command first (``/bot help``)."""
        return "/"


@dataclass(frozen=True)
class SectionEntry:
    """What the settings know of a channel without importing it: its settings model and the environment
    variables that hold its secrets."""

    model: type[ChannelSection]
    secret_variables: tuple[str, ...] = ()


_SECTIONS: dict[str, SectionEntry] = {}


def register_section(name: str, entry: SectionEntry) -> None:
    """Add (or replace) channel ``name``'s section: ``channels.<name>`` in every configuration loaded after."""
    _SECTIONS[name] = entry


def unregister_section(name: str) -> None:
    _SECTIONS.pop(name, None)


def sections() -> dict[str, SectionEntry]:
    """Every registered channel's section, in the order they were registered."""
    return dict(_SECTIONS)


def secret_variables() -> tuple[str, ...]:
    return tuple(v for entry in sections().values() for v in entry.secret_variables)


class Channels(BaseModel):
    """``channels``: one section per registered channel plugin."""

    model_config = ConfigDict(extra="forbid")

    def enabled(self) -> list[str]:
        return [name for name in type(self).model_fields if self.section(name).enabled]

    def section(self, name: str) -> ChannelSection:
        """The settings of channel ``name`` (``KeyError``: no such channel)."""
        value = getattr(self, name, None)
        if not isinstance(value, ChannelSection):
            raise KeyError(name)
        return value

    def admins_problem(self) -> tuple[str, str] | None:
        """The first ``admins`` entry that is not a user id of its platform: (``channels.<name>.admins``, why).
        A ``@name`` there would make nobody an admin, silently."""
        for name in ID_SHAPES:
            section = getattr(self, name, None)
            if not isinstance(section, ChannelSection):
                continue
            for user_id in section.admins:
                problem = user_id_problem(name, user_id)
                if problem is not None:
                    return f"channels.{name}.admins", problem
        return None

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any: ...


_models: dict[tuple[tuple[str, type[ChannelSection]], ...], type[Channels]] = {}


def channels_model() -> type[Channels]:
    """The ``channels`` model of the sections registered now (one class per set of sections).

    :class:`RuntimeError` when no channel was registered: the program did not install the channels (its
    composition root imports ``channels.registry`` before it loads the settings)."""
    if not _SECTIONS:
        raise RuntimeError(
            "no channel is registered: import channels.registry before loading the settings "
            "(the composition root installs the channels: bot.cli.main and bot.gateway.app do)"
        )
    key = tuple((name, entry.model) for name, entry in _SECTIONS.items())
    if key not in _models:
        fields: dict[str, Any] = {name: (model, Field(default_factory=model)) for name, model in key}
        _models[key] = create_model("ChannelsSection", __base__=Channels, **fields)
    return _models[key]
