"""The words and payloads of interrupts: button payloads, yes/no replies, prompt buttons.

Button payload: ``v1:<interrupt id>:<nonce>:<choice>`` (about 25 bytes; fits
Telegram's 64-byte ``callback_data``, Discord's 100-char ``custom_id`` and a
Slack button ``value``).  The nonce makes payloads unguessable and ties a
press to one prompt; the id finds the row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agents.approval import NEVER_GRANTED, grantable
from agents.results import InterruptRequest
from bot.events import Button

PAYLOAD_VERSION = "v1"
_PAYLOAD = re.compile(r"^v1:([A-Za-z0-9]{6,24}):([A-Za-z0-9]{4,16}):([A-Za-z0-9_.-]{1,24})$")

YES = frozenset(
    "yes y yep yeah sure ok okay approve approved confirm confirmed go proceed allow do it "
    "同意 确认 批准 好 好的 可以 行 是 是的 执行 允许".split()
)
NO = frozenset(
    "no n nope deny denied reject rejected cancel stop abort don't dont "
    "拒绝 取消 不 不要 不行 否 别 停止 不同意".split()
)


@dataclass(frozen=True)
class Press:
    interrupt_id: str
    nonce: str
    choice: str


def encode_payload(interrupt_id: str, nonce: str, choice: str) -> str:
    return f"{PAYLOAD_VERSION}:{interrupt_id}:{nonce}:{choice}"


def parse_payload(payload: str) -> Press | None:
    """The parts of a well-formed payload, or None (forged or foreign)."""
    match = _PAYLOAD.match(payload.strip())
    if match is None:
        return None
    return Press(match.group(1), match.group(2), match.group(3))


_YES_NO_MAX = 64
"""A clear yes or no is short; longer texts are not looked at (and cost nothing)."""


def yes_no(text: str) -> bool | None:
    """True for a clear yes, False for a clear no (English and Chinese), else None."""
    text = text.strip()
    if len(text) > _YES_NO_MAX:
        return None
    cleaned = re.sub(r"[\s!.。！,，~]+$", "", text.casefold())
    cleaned = re.sub(r"^(please|请)\s*", "", cleaned)
    if cleaned in YES:
        return True
    if cleaned in NO:
        return False
    return None


def tool_confirm_choices(
    calls: list[dict[str, Any]], grantable: list[str], *, group: bool = False
) -> list[tuple[str, str]]:
    """(label, choice) pairs for a tool confirmation: all, none, each alone, always allow (in a ``group``, an
    admin's button: it turns confirmations off for everyone there)."""
    choices = [("✅ Approve", "a"), ("❌ Deny", "d")]
    if len(calls) > 1:
        choices = [("✅ Approve all", "a"), ("❌ Deny all", "d")]
        choices += [(f"Only {i}: {c['name']}", f"o{i}") for i, c in enumerate(calls, 1)]
    if grantable:
        names = ", ".join(grantable)
        choices.append((f"Always allow {names} here" + (" (admins)" if group else ""), "g"))
    return choices


def prompt_choices(request: InterruptRequest, *, group: bool = False) -> list[tuple[str, str]]:
    """The buttons of a pause's prompt (a tool confirmation offers "always" only when every tool can be granted)."""
    if request.kind == "tool_confirm":
        calls = list(request.payload.get("calls", []))
        names = {c["name"] for c in calls}
        return tool_confirm_choices(calls, grantable(names) if not names & NEVER_GRANTED else [], group=group)
    return [(c.label, c.value) for c in request.choices]


def buttons_for(interrupt_id: str, nonce: str, choices: list[tuple[str, str]]) -> tuple[tuple[Button, ...], ...]:
    """Rows of at most three buttons."""
    flat = [Button(label=label, payload=encode_payload(interrupt_id, nonce, value)) for label, value in choices]
    return tuple(tuple(flat[i : i + 3]) for i in range(0, len(flat), 3))


SHOW_ALL = "s"
"""The choice that shows a locked confirmation in full (see :func:`locked_prompt`)."""


def hint(kind: str, has_buttons: bool, *, locked: bool = False) -> str:
    """The line under a prompt saying how to answer it."""
    if kind == "ask_user":
        return "\n(Reply with your answer.)" if not has_buttons else "\n(Pick one, or reply with your answer.)"
    if locked:
        return "\n(Press 📄 Show all to see everything first, or Deny.)"
    return "\n(Press a button, or reply yes / no.)"


def locked_prompt(
    prompt: str, payload: dict[str, Any], choices: list[tuple[str, str]], limit: int
) -> tuple[str, dict[str, Any], list[tuple[str, str]]]:
    """A confirmation too long for one message: its start, clearly cut, with Show all and Deny only.

    The whole text and the real choices stay in the payload; :meth:`InterruptService.show_all`
    sends the whole text, then offers them.
    """
    note = f"\n\n📄 This is {len(prompt):,} characters long, more than one message holds, so it is cut here."
    room = max(200, limit - len(note) - 120)
    preview = prompt[:room]
    cut = preview.rfind("\n")
    if cut > room // 2:
        preview = preview[:cut]
    locked = [("📄 Show all", SHOW_ALL), *[(label, value) for label, value in choices if value == "d"]]
    return preview + note, {**payload, "full_text": prompt, "full_choices": [list(c) for c in choices]}, locked
