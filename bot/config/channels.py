"""The ``channels`` section of the settings, and how channel plugins add theirs.

The settings model sits below the channels in the layering (channels import it; it imports no channel). So
each channel plugin registers its section here (:func:`register_section`, called by ``channels.registry``),
and the settings find the plugins the way a Python program finds its entry points: by the module's name,
:data:`PLUGIN_MODULE`, imported the first time the sections are read.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

PLUGIN_MODULE = "channels.registry"
"""The module that registers the built-in channels (each with :func:`register_section`)."""


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
    """What the rest of the gateway may know of a channel without importing it: its settings model, the
    environment variables that hold its secrets, and where its media downloader is made."""

    model: type[ChannelSection]
    secret_variables: tuple[str, ...] = ()
    fetcher: str | None = None
    """``module:factory`` called with the channel's settings: a ``bot.media.fetch.MediaFetcher`` (None: no files)."""


_SECTIONS: dict[str, SectionEntry] = {}
_loaded = False


def register_section(name: str, entry: SectionEntry) -> None:
    """Add (or replace) channel ``name``'s section: ``channels.<name>`` in every configuration loaded after."""
    _SECTIONS[name] = entry


def unregister_section(name: str) -> None:
    _SECTIONS.pop(name, None)


def sections() -> dict[str, SectionEntry]:
    """Every registered channel's section, the built-in plugins' first (imported by name on the first read)."""
    global _loaded
    if not _loaded:
        _loaded = True
        import_module(PLUGIN_MODULE)
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

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any: ...


_models: dict[tuple[tuple[str, type[ChannelSection]], ...], type[Channels]] = {}


def channels_model() -> type[Channels]:
    """The ``channels`` model of the sections registered now (one class per set of sections)."""
    key = tuple((name, entry.model) for name, entry in sections().items())
    if key not in _models:
        fields: dict[str, Any] = {name: (model, Field(default_factory=model)) for name, model in key}
        _models[key] = create_model("ChannelsSection", __base__=Channels, **fields)
    return _models[key]
