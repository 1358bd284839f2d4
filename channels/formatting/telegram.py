"""Telegram HTML (``parse_mode=HTML``): only the tags Telegram accepts, everything else escaped."""

from __future__ import annotations

import html
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

_TELEGRAM_SCHEMES = ("http://", "https://", "tg://")


def to_telegram_html(text: str) -> str:
    """Our markdown subset -> Telegram HTML (``parse_mode=HTML``).

    ``<b>``, ``<i>``, ``<s>``, ``<code>``, ``<pre>`` (``<pre><code class="language-x">`` for ```` ```x ````
    blocks), ``<blockquote>`` and ``<a href="...">``; headings bold, list items with bullets, tables as
    ``<pre>`` blocks; everything else escaped.  Links with schemes Telegram refuses become ``label (url)``.
    """
    return _telegram(parse(text), in_link=False)


def _telegram(nodes: Sequence[Node], *, in_link: bool) -> str:
    out: list[str] = []
    quoting = False
    for k, node in enumerate(nodes):
        if isinstance(node, Quote) and not quoting:
            out.append("<blockquote>")
            quoting = True
        match node:
            case Strike(children=ch):
                out.append(f"<s>{_telegram(ch, in_link=in_link)}</s>")
            case Heading(children=ch):
                out.append(f"<b>{_telegram(ch, in_link=in_link)}</b>")
            case Item(depth=depth, marker=marker, children=ch):
                out.append(f"{indent(depth)}{html.escape(marker)} {_telegram(ch, in_link=in_link)}")
            case Quote(children=ch):
                out.append(_telegram(ch, in_link=in_link))
                following = nodes[k + 2] if k + 2 < len(nodes) else None
                if not (nodes[k + 1 : k + 2] == [Text("\n")] and isinstance(following, Quote)):
                    out.append("</blockquote>")
                    quoting = False
            case Table(rows=rows):
                out.append(f"<pre>{html.escape(table_text(rows), quote=False)}</pre>")
            case Rule():
                out.append(RULE)
            case Text(text=t):
                out.append(html.escape(t, quote=False))
            case Bold(children=ch):
                out.append(f"<b>{_telegram(ch, in_link=in_link)}</b>")
            case Italic(children=ch):
                out.append(f"<i>{_telegram(ch, in_link=in_link)}</i>")
            case Code(text=t):
                # Telegram entities other than bold/italic cannot nest, so code inside a link is plain.
                out.append(html.escape(t, quote=False) if in_link else f"<code>{html.escape(t, quote=False)}</code>")
            case Link(children=ch, url=url):
                if not in_link and url.lower().startswith(_TELEGRAM_SCHEMES):
                    out.append(f'<a href="{html.escape(url)}">{_telegram(ch, in_link=True)}</a>')
                else:
                    label = plain_nodes(ch)
                    out.append(html.escape(label if label == url else f"{label} ({url})", quote=False))
            case CodeBlock(text=t, lang=lang):
                if not t:
                    continue
                body = html.escape(t, quote=False)
                out.append(f'<pre><code class="language-{lang}">{body}</code></pre>' if lang else f"<pre>{body}</pre>")
    return "".join(out)
