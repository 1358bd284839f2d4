"""What could hide part of a text is made visible, the same way in the chat's confirmation prompt, the web console
and the trace views: zero-width, bidi and control characters as escapes, long runs of spaces counted."""

from __future__ import annotations

import json

from agents.messages import ToolCall
from agents.react import describe_call
from agents.visible import hidden, visible, visible_json

TRICK = "report.txt \u202egnp.exe\u202c and\u200bhidden"


def test_the_chat_prompt_and_the_console_show_the_same_escapes() -> None:
    shown = "report.txt \\u202egnp.exe\\u202c and\\u200bhidden"
    assert describe_call(ToolCall(id="c1", name="send", args={"name": TRICK}), None) == f'send(name="{shown}")'
    assert visible(TRICK) == shown
    assert f'"name": "{shown}"' in visible_json({"name": TRICK}, indent=2)


def test_an_edit_box_gets_json_that_parses_back_to_the_same_arguments() -> None:
    args = {"name": TRICK, "tag": "x\U000e0041y", "pad": "a" + " " * 12 + "b", "deep": {"k": [1, "\u2066z"]}}
    text = visible_json(args, indent=2, spaces=False)
    assert not any(hidden(ch) for ch in text)
    assert json.loads(text) == args
    assert "⟨12 spaces⟩" in visible_json(args, indent=2), "shown, a long run of spaces is counted"
    assert visible("tab\tand\nline kept, bell \x07 not") == "tab\tand\nline kept, bell \\u0007 not"
    assert visible("plain ascii") == "plain ascii" and visible("中文 ok 👍") == "中文 ok 👍"
    assert visible("tag \U000e0041") == "tag \\U000e0041"
