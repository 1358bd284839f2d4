"""Our buttons on Discord: a dynamic item that finds its way back to the adapter, even after a restart."""

from __future__ import annotations

import logging
import re
from typing import Any, Protocol

import discord

from bot.events import Button

log = logging.getLogger(__name__)

MAX_ROWS = 5
MAX_PER_ROW = 5
LABEL_LIMIT = 80
PAYLOAD_TEMPLATE = r"v1:[A-Za-z0-9]{6,24}:[A-Za-z0-9]{4,16}:[A-Za-z0-9_.-]{1,24}"
"""Our payload ``v1:<id>:<nonce>:<choice>`` (at most 68 characters; Discord allows 100 in a ``custom_id``)."""


class PressHandler(Protocol):
    async def on_press(self, interaction: discord.Interaction[Any], payload: str) -> None: ...


class PayloadButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=PAYLOAD_TEMPLATE):
    """A button whose ``custom_id`` is our payload.

    Registered with ``Client.add_dynamic_items`` in ``setup_hook``: discord.py rebuilds it from any pressed
    component whose ``custom_id`` matches the template, also on messages sent by an earlier process, and
    hands the press to the client's ``adapter``.
    """

    def __init__(self, payload: str, label: str = "", row: int | None = None) -> None:
        super().__init__(
            discord.ui.Button(label=_label(label), style=_style(label), custom_id=payload, row=row),
        )

    @classmethod
    async def from_custom_id(  # type: ignore[override]
        cls, interaction: discord.Interaction[Any], item: discord.ui.Button[Any], match: re.Match[str], /
    ) -> PayloadButton:
        return cls(match.group(0), item.label or "")

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        adapter: PressHandler | None = getattr(interaction.client, "adapter", None)
        if adapter is not None:
            await adapter.on_press(interaction, self.custom_id)


def _label(label: str) -> str:
    label = label.strip() or "…"
    return label if len(label) <= LABEL_LIMIT else label[: LABEL_LIMIT - 1] + "…"


def _style(label: str) -> discord.ButtonStyle:
    if label.startswith("✅"):
        return discord.ButtonStyle.success
    if label.startswith(("❌", "🚫")):
        return discord.ButtonStyle.danger
    return discord.ButtonStyle.secondary


def button_rows(buttons: tuple[tuple[Button, ...], ...]) -> list[list[Button]]:
    """Our rows within Discord's 5 rows of 5: long rows wrap; too many rows are packed; past 25 are dropped."""
    rows = [list(row[i : i + MAX_PER_ROW]) for row in buttons for i in range(0, len(row), MAX_PER_ROW)]
    if len(rows) > MAX_ROWS:
        flat = [b for row in buttons for b in row]
        rows = [flat[i : i + MAX_PER_ROW] for i in range(0, len(flat), MAX_PER_ROW)]
    if len(rows) > MAX_ROWS:
        dropped = sum(len(r) for r in rows[MAX_ROWS:])
        log.warning("discord: %d buttons past Discord's 25 were left out", dropped)
    return rows[:MAX_ROWS]


def make_view(buttons: tuple[tuple[Button, ...], ...]) -> discord.ui.View | None:
    """The buttons as a view (None: no buttons, which removes them in an edit)."""
    if not buttons:
        return None
    view = discord.ui.View(timeout=None)
    for index, row in enumerate(button_rows(buttons)):
        for button in row:
            view.add_item(PayloadButton(button.payload, button.label, row=index))
    return view


def is_ours(custom_id: str) -> bool:
    return re.fullmatch(PAYLOAD_TEMPLATE, custom_id) is not None
