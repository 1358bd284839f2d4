"""Slack mrkdwn: ``*bold*``, ``_italic_``, ``~strike~``, `` `code` ``, ``<url|label>``, ``>`` quotes;
headings bold, list items with bullets, tables as code blocks; ``&``, ``<``, ``>`` escaped in text; a link
only to a web, mail or phone address (never ``<!channel|…>``, ``<!subteam^…|…>`` or ``<@U…|…>``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from channels.formatting.plain import RULE, indent, plain_nodes, table_text
from channels.formatting.tree import (
    Bold,
    Code,
    CodeBlock,
    Heading,
    Italic,
    Item,
    Link,
    Node,
    Quote,
    Rule,
    Strike,
    Table,
    Text,
    parse,
)

BACKTICK_RUN = re.compile(r"`{3,}")
_SLACK_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
# Slack code has no escape for a backtick; a look-alike keeps the span intact.
BACKTICK_LOOKALIKE = "\u02cb"
ZWSP = "\u200b"
LINKABLE = re.compile(r"(?i)(?:https?|mailto|tel|ftp)://?\S|(?:mailto|tel):\S")
"""A link target Slack may get as ``<target|label>``.  Anything else (``!channel``, ``!subteam^…``, ``@U…``,
``#C…``, which Slack reads as mentions in their ``<…|label>`` forms too) is shown as text: a model's answer
must never ping a whole channel."""


def to_slack_mrkdwn(text: str) -> str:
    """-> Slack mrkdwn: ``*bold*``, ``_italic_``, ```` `code` ````, ```` ```blocks``` ````, ``<url|label>``.

    ``&``, ``<`` and ``>`` are escaped everywhere except in our own ``<url|label>`` syntax.
    """
    return _slack(parse(text))


def _slack(nodes: Sequence[Node]) -> str:
    pieces: list[str] = []
    for node in nodes:
        match node:
            case Text(text=t):
                # A literal ``` would open a code block in Slack.
                pieces.append(_slack_fence_safe(t.translate(_SLACK_ESCAPES)))
            case Bold(children=ch) | Heading(children=ch):
                pieces.append(f"*{_slack(ch)}*")
            case Strike(children=ch):
                pieces.append(f"~{_slack(ch)}~")
            case Item(depth=depth, marker=marker, children=ch):
                pieces.append(f"{indent(depth)}{marker} {_slack(ch)}")
            case Quote(children=ch):
                pieces.append(f"> {_slack(ch)}")
            case Table(rows=rows):
                pieces.append(f"```\n{_slack_fence_safe(table_text(rows).translate(_SLACK_ESCAPES))}\n```")
            case Rule():
                pieces.append(RULE)
            case Italic(children=ch):
                pieces.append(f"_{_slack(ch)}_")
            case Code(text=t):
                pieces.append(f"`{t.translate(_SLACK_ESCAPES).replace('`', BACKTICK_LOOKALIKE)}`")
            case Link(children=ch, url=url) if not LINKABLE.match(url):
                label, shown = plain_nodes(ch), _slack_fence_safe(url.translate(_SLACK_ESCAPES))
                text = _slack_fence_safe(label.translate(_SLACK_ESCAPES))
                pieces.append(shown if label == url else f"{text} ({shown})")
            case Link(children=ch, url=url):
                label = plain_nodes(ch).translate(_SLACK_ESCAPES)
                target = url.translate(_SLACK_ESCAPES).replace("|", "%7C")
                pieces.append(f"<{target}>" if plain_nodes(ch) == url else f"<{target}|{label}>")
            case CodeBlock(text=t):
                body = _slack_fence_safe(t.translate(_SLACK_ESCAPES))
                pieces.append(f"```\n{body}\n```" if t else "")
    # Slack only formats at word boundaries; a zero-width space makes one inside "foo*bar*baz" or CJK text.
    for k, node in enumerate(nodes):
        if isinstance(node, Bold | Italic | Strike):
            if k > 0 and pieces[k - 1][-1:].isalnum():
                pieces[k] = ZWSP + pieces[k]
            if k + 1 < len(pieces) and pieces[k + 1][:1].isalnum():
                pieces[k] += ZWSP
    return "".join(pieces)


def _slack_fence_safe(text: str) -> str:
    return BACKTICK_RUN.sub(lambda m: "``" + BACKTICK_LOOKALIKE * (len(m[0]) - 2), text)
