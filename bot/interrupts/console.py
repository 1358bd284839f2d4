"""Presses made in the web console: the choices it offers beyond a prompt's buttons, and what they resolve to.

The console shows everything (a confirmation's arguments in full), so it may approve what a chat offers only
after 📄 Show all; it can also answer with text (an ``ask_user`` answer, what to change in a plan) and edit a
confirmation's arguments.  Its presses are checked here, in the chat's turn, like any other.
"""

from __future__ import annotations

from agents.resolutions import Answer, PlanDecision, Resolution, ToolDecision
from bot.events import ConsoleInput
from bot.interrupts.text import SHOW_ALL
from bot.store.rows import InterruptRow

CONSOLE_CHOICES = {
    "tool_confirm": {"a", "d", "g", "e"},
    "plan_approval": {"approve", "reject", "edit"},
    "ask_user": {"answer"},
}
"""``e``: approve with edited arguments; ``edit``: change the plan (with text); ``answer``: an answer typed."""

MAX_TEXT = 4000


def console_choices(row: InterruptRow) -> list[tuple[str, str]]:
    """The buttons the chat offers for ``row`` once everything is shown (a locked confirmation's real choices,
    not 📄 Show all): the console shows all of it from the start."""
    full = row.payload.get("full_choices") or row.choices
    return [(str(label), str(value)) for label, value in full if value != SHOW_ALL]


def console_offers(row: InterruptRow) -> set[str]:
    """Every choice a console press may make on ``row``."""
    return {value for _label, value in console_choices(row)} | CONSOLE_CHOICES.get(row.kind, set())


def console_refusal(row: InterruptRow, choice: str, console: ConsoleInput) -> str | None:
    """Why a console press on ``row`` is refused, or None."""
    if choice not in console_offers(row):
        return "That choice does not fit this request."
    if choice in ("edit", "answer") and not (console.text or "").strip():
        return "Type the answer (or what to change) first."
    if console.text is not None and len(console.text) > MAX_TEXT:
        return f"The text is too long (at most {MAX_TEXT:,} characters)."
    if choice == "e":
        calls = {str(c["id"]) for c in row.payload.get("calls", [])}
        if not console.arguments or not set(console.arguments) <= calls:
            return "Edited arguments must name the calls of this request."
    return None


def console_resolution(row: InterruptRow, choice: str, console: ConsoleInput, pressed: Resolution) -> Resolution:
    """The resolution of a console press (``pressed``: what the same button would mean in the chat)."""
    ids = tuple(str(c["id"]) for c in row.payload.get("calls", []))
    if choice == "e":
        return ToolDecision(approved=ids, choice="e", edited=dict(console.arguments))
    if choice == "edit":
        return PlanDecision(choice="edit", feedback=console.text)
    if choice == "answer":
        return Answer(text=console.text)
    if isinstance(pressed, PlanDecision) and console.text:
        return pressed.model_copy(update={"answer": console.text})
    return pressed
