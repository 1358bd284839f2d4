"""Text a person can read completely: what could hide part of it is made visible.

A confirmation prompt in a chat and the web console's cards show a tool call's arguments through these
functions, so what a person approves is exactly what runs: characters that show as nothing or move text around
(zero-width characters, bidi controls such as ``U+202E``, odd spaces, control characters) appear as ``\\uXXXX``
(``\\U000XXXXX`` beyond the first plane outside JSON), and a long run of spaces as ``⟨320 spaces⟩``.
``report.txt\\u202egnp.exe`` reads as such, not as "report.txtexe.png".
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Zl", "Zp", "Zs"})
"""Control, format (zero-width, bidi), private-use, unassigned, line/paragraph separators and odd spaces."""
KEPT = frozenset("\n\t")
"""Plain text keeps its line breaks and tabs (JSON escapes them anyway)."""
_SPACE_RUN = re.compile(r"(?<=[^\n ]) {8,}")
"""Eight spaces or more after something other than a line break (JSON's own indentation is left alone)."""


def hidden(ch: str) -> bool:
    """``ch`` shows as nothing or moves text around (the ordinary space and printable ASCII do not)."""
    if ch == " " or (ch.isascii() and ch.isprintable()) or ch in KEPT:
        return False
    return unicodedata.category(ch) in HIDDEN_CATEGORIES


def _escape(ch: str, for_json: bool) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    if for_json:  # a surrogate pair: JSON that still parses to the same value
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\U{code:08x}"


def _spaces(text: str) -> str:
    return _SPACE_RUN.sub(lambda m: f"⟨{len(m[0])} spaces⟩", text) if "        " in text else text


def visible(text: str, *, spaces: bool = True) -> str:
    """``text`` with hidden characters escaped and (``spaces``) long runs of spaces counted."""
    if text.isascii() and "\x7f" not in text and all(ch.isprintable() or ch in KEPT for ch in text):
        return _spaces(text) if spaces else text
    shown = "".join(_escape(ch, False) if hidden(ch) else ch for ch in text)
    return _spaces(shown) if spaces else shown


def visible_json(value: Any, *, indent: int | None = None, spaces: bool = True) -> str:
    """``value`` as JSON a person can read completely. With ``spaces=False`` it stays JSON that parses back to
    ``value`` (for a text box an admin edits)."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=indent is not None, default=str)
    if not text.isascii():
        text = "".join(_escape(ch, True) if hidden(ch) else ch for ch in text)
    return _spaces(text) if spaces else text
