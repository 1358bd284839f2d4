"""How a human answered a pause, one type per interrupt kind: what a runner's ``resume`` continues with.

- :class:`ToolDecision` answers a ``tool_confirm``: the calls that may run (the others are denied),
  arguments a person edited, and whether the chat grants these tools from now on;
- :class:`PlanDecision` answers a ``plan_approval``: approve, reject, or what to change;
- :class:`Answer` answers an ``ask_user``: the text (or the pressed choice's label).

Each is stored as JSON (only the fields set) in the interrupt's row, so a run resumed after a restart
continues with exactly what was answered; the keys are those the rows have always held, so a row
written before these types existed reads back the same (:func:`resolution_for`).  ``reason`` is set
when nobody answered (expired, cancelled, superseded): it is the result text of the calls that did not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Decision(BaseModel):
    # Frozen: what a person approved is exactly what runs. Extra keys of an older row are ignored.
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    choice: str | None = None
    """The button's value (``a``, ``d``, ``approve``, ``edit``, ``o1``...), if one was pressed."""
    reason: str | None = None
    """Nobody answered (expired, cancelled, superseded): the result text of what did not run."""

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_defaults=True, by_alias=True)


class ToolDecision(_Decision):
    """The answer to a ``tool_confirm``."""

    approved: tuple[str, ...] = ()
    """The ids of the calls that may run (the others are denied)."""
    grant: bool = False
    """Also allow these tools in this chat from now on."""
    edited: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Call id → the arguments a person changed them to (the web console's Edit arguments); what runs,
    checked against the tool's schema again before it does."""


class PlanDecision(_Decision):
    """The answer to a ``plan_approval``: ``choice`` approve / reject / edit, ``feedback`` what to change."""

    feedback: str | None = None
    answer: str | None = None
    """The text that decided it (a typed yes, or a button's label)."""


class Answer(_Decision):
    """The answer to an ``ask_user``."""

    text: str | None = Field(default=None, alias="answer")


Resolution = ToolDecision | PlanDecision | Answer
"""Any kind's answer."""

_KINDS: dict[str, type[ToolDecision] | type[PlanDecision] | type[Answer]] = {
    "tool_confirm": ToolDecision,
    "plan_approval": PlanDecision,
    "ask_user": Answer,
}


def resolution_for(kind: str, stored: Mapping[str, Any] | None, unanswered: str = "") -> Resolution:
    """The resolution of an interrupt of ``kind`` as its row stores it (``unanswered``: the reason when the
    row holds none)."""
    cls = _KINDS.get(kind, Answer)
    if not stored:
        return cls(reason=unanswered or None)
    return cls.model_validate(dict(stored))


def unanswered(kind: str, reason: str) -> Resolution:
    """Nobody answered an interrupt of ``kind``: ``reason`` says why."""
    return _KINDS.get(kind, Answer)(reason=reason)


def answer_text(resolution: Resolution) -> str | None:
    """The typed answer (an ``ask_user``'s, or the text that decided a plan)."""
    if isinstance(resolution, Answer):
        return resolution.text
    if isinstance(resolution, PlanDecision):
        return resolution.answer
    return None
