"""Text that reaches a terminal: its control characters are shown, never obeyed.

A model's answer, a file a tool read, a name someone chose can hold escape sequences that a terminal would
act on: clear the screen, set the window title, paint a fake prompt in red, move the cursor over what was
written, or (``\\r``) write over the start of the line.  Whatever the console prints, ``bot agents run`` and
``bot route`` print, and every log line goes through :func:`terminal_safe`: C0 and C1 control characters and
DEL (``ESC`` is ``\\u001b``), and the bidi controls that reorder what is shown (``U+202E``), appear as
``\\uXXXX``, as ``bot trace`` and the chat prompts show them (:mod:`agents.visible`, which channels may not
import).  Line breaks and tabs stay; so does everything printable: emoji with their joiners, accents,
non-breaking spaces.  The bot's own colour and ``\\r`` are added by the caller after this, never taken from
the text.
"""

from __future__ import annotations

import re

OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What a terminal acts on rather than shows: every C0 control but ``\\t`` and ``\\n``, DEL, every C1 control,
and the bidi marks, embeddings, overrides and isolates."""


def terminal_safe(text: str) -> str:
    """``text`` with what a terminal would obey written out as ``\\uXXXX``."""
    if OBEYED.search(text) is None:
        return text
    return OBEYED.sub(lambda m: f"\\u{ord(m[0]):04x}", text)
