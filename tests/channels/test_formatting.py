"""The markdown subset: rendering per platform, and splitting rendered text to each platform's limit."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from channels.formatting import (
    Bold,
    Code,
    CodeBlock,
    Italic,
    Link,
    Strike,
    TelegramText,
    Text,
    parse,
    plain_text,
    split_entities,
    split_markdown,
    to_discord_markdown,
    to_slack_mrkdwn,
    to_telegram,
    utf16_len,
)
from tests.fakes.telegram_server import TelegramError, check_entities

ZWSP = "\u200b"


def shown(message: TelegramText, limit: int = 4096) -> str:
    """The text Telegram shows, after checking the entities the way Telegram would refuse them."""
    try:
        entities = [{k: v for k, v in dataclasses.asdict(e).items() if v is not None} for e in message.entities]
        check_entities(message.text, entities)
    except TelegramError as exc:
        raise AssertionError(f"{exc.description} in {message}") from None
    assert 0 < utf16_len(message.text) <= limit or not message.text
    return message.text


def marked(message: TelegramText) -> list[tuple[str, ...]]:
    """Each entity as (type, the text it covers[, url or language])."""
    units = message.text.encode("utf-16-le")
    out: list[tuple[str, ...]] = []
    for e in message.entities:
        covered = units[2 * e.offset : 2 * (e.offset + e.length)].decode("utf-16-le")
        extra = e.url or e.language
        out.append((e.type, covered, extra) if extra else (e.type, covered))
    return sorted(out)


def assert_reassembles(original: str, pieces: list[str]) -> None:
    """The pieces are consecutive slices of ``original``; only whitespace falls between them."""
    pos = 0
    for piece in pieces:
        piece = piece.strip()
        found = original.find(piece, pos)
        assert found >= 0, f"{piece[:60]!r} not found after {pos}"
        assert not original[pos:found].strip(), f"skipped {original[pos:found][:60]!r}"
        pos = found + len(piece)
    assert not original[pos:].strip(), f"lost the tail {original[pos:][:60]!r}"


FENCE_MARK = re.compile(r"```[\w+#.-]*")


def fence_lines(chunk: str) -> int:
    return sum(1 for line in chunk.split("\n") if line.lstrip().startswith("```"))


def check_markdown_chunks(rendered: str, chunks: list[str], limit: int, measure: object = len) -> None:
    assert callable(measure)
    for chunk in chunks:
        assert measure(chunk) <= limit
        assert chunk.strip()
        assert fence_lines(chunk) % 2 == 0, chunk
    assert_reassembles(FENCE_MARK.sub("", rendered), [FENCE_MARK.sub("", c) for c in chunks])


# ---------------------------------------------------------------- parsing


def test_parse_builds_a_small_tree() -> None:
    assert parse("a **b _c_** `d` [e](https://x.y)\n```py\nf\n```") == [
        Text("a "),
        Bold((Text("b "), Italic((Text("c"),)))),
        Text(" "),
        Code("d"),
        Text(" "),
        Link((Text("e"),), "https://x.y"),
        Text("\n"),
        CodeBlock("f", "py"),
    ]


@pytest.mark.parametrize(
    "source",
    [
        "2 * 3 * 4",
        "snake_case_name",
        "a_b_c and x*y",
        "a**b",
        "**unclosed bold",
        "_unclosed italic",
        "a * b * c",
        "*not an item\n*not an item",
        "**not\n\nacross paragraphs**",
        "[label](not a url)",
        "[no link]",
        "`unclosed code",
        "x ``` y",
    ],
)
def test_unbalanced_or_intraword_markers_stay_literal(source: str) -> None:
    assert parse(source) == [Text(source)]
    assert plain_text(source) == source


def test_emphasis_follows_commonmark() -> None:
    # As on GitHub and in Discord: "*" pairs inside a word, "__" pairs at word edges; code keeps them literal.
    assert parse("2*3*4") == [Text("2"), Italic((Text("3"),)), Text("4")]
    assert parse("__init__ `__init__`") == [Bold((Text("init"),)), Text(" "), Code("__init__")]
    assert parse("~single~ ~~double~~") == [Text("~single~ "), Strike((Text("double"),))]


# ---------------------------------------------------------------- Telegram


@pytest.mark.parametrize(
    ("source", "text", "entities"),
    [
        ("", "", []),
        ('plain & <tag> "q"', 'plain & <tag> "q"', []),
        ("x <br> y\n\n<div>\nblock\n</div>", "x <br> y\n\n<div>\nblock\n</div>", []),
        ("**bold** _it_ *it*", "bold it it", [("bold", "bold"), ("italic", "it"), ("italic", "it")]),
        ("**bold _both_**", "bold both", [("bold", "bold both"), ("italic", "both")]),
        ("***x***", "x", [("bold", "x"), ("italic", "x")]),
        ("`a < b && c`", "a < b && c", [("code", "a < b && c")]),
        ("`**not bold** _x_`", "**not bold** _x_", [("code", "**not bold** _x_")]),
        ("``a ` b``", "a ` b", [("code", "a ` b")]),
        (
            "```python\nif a < b:\n    print('&')\n```",
            "if a < b:\n    print('&')",
            [("pre", "if a < b:\n    print('&')", "python")],
        ),
        ("```\n**x**\n```", "**x**", [("pre", "**x**")]),
        ("before\n```js\nx\n```\nafter", "before\nx\nafter", [("pre", "x", "js")]),
        ("```sh\nunclosed **x**", "unclosed **x**", [("pre", "unclosed **x**", "sh")]),
        ('[docs](https://x.com/?a=1&b="2")', "docs", [("text_link", "docs", 'https://x.com/?a=1&b="2"')]),
        ("[**b** & c](https://x.com)", "b & c", [("bold", "b"), ("text_link", "b & c", "https://x.com")]),
        ("[`code`](https://x.com)", "code", [("text_link", "code", "https://x.com")]),
        ("[run](javascript:alert(1))", "run (javascript:alert(1))", []),
        ("see [mail](mailto:a@b.c) **now**", "see mail (mailto:a@b.c) now", [("bold", "now")]),
        ("**unclosed & _also", "**unclosed & _also", []),
        ("这是**粗体**和*斜体*。", "这是粗体和斜体。", [("bold", "粗体"), ("italic", "斜体")]),
        ("**注意：**请看", "注意：请看", [("bold", "注意")]),
        ("请看**「注意」**。", "请看「注意」。", [("bold", "注意」")]),
        ("emoji 😀 **👍🏽 ok**", "emoji 😀 👍🏽 ok", [("bold", "👍🏽 ok")]),
        ("~~gone~~ and ~5 dollars, $5 and $10", "gone and ~5 dollars, $5 and $10", [("strikethrough", "gone")]),
        ("> a\n> > nested", "a\nnested", [("blockquote", "a\nnested")]),
    ],
)
def test_to_telegram(source: str, text: str, entities: list[tuple[str, ...]]) -> None:
    message = to_telegram(source)
    assert shown(message) == text
    assert marked(message) == sorted(entities)


# ---------------------------------------------------------------- Slack


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a & b < c > d", "a &amp; b &lt; c &gt; d"),
        ("<!channel> hi", "&lt;!channel&gt; hi"),
        # Link targets Slack reads as mentions are shown as text, never as <!channel|…> (a mass ping).
        ("[all good](!channel)", "all good (!channel)"),
        ("[ok](!here)", "ok (!here)"),
        ("[team](!subteam^S123|@devs)", "team (!subteam^S123|@devs)"),
        ("[you](@U123|x)", "you (@U123|x)"),
        ("[general](#C123)", "general (#C123)"),
        ("[!channel](!channel)", "!channel"),
        ("[x](javascript:alert(1))", "x (javascript:alert(1))"),
        ("[mail](mailto:a@b.c)", "<mailto:a@b.c|mail>"),
        ("[HTTP](HTTP://x.com)", "<HTTP://x.com|HTTP>"),
        ("**bold** _it_ *it*", "*bold* _it_ _it_"),
        ("**bold _both_**", "*bold _both_*"),
        ("`x < 1`", "`x &lt; 1`"),
        ("`a`` b`", "`a\u02cb\u02cb b`"),
        ("```py\na<b\n```", "```\na&lt;b\n```"),
        ("[a & b](https://x.com/?q=1&r=2)", "<https://x.com/?q=1&amp;r=2|a &amp; b>"),
        ("[https://x.com](https://x.com)", "<https://x.com>"),
        ("[a|b](https://x.com/a|b)", "<https://x.com/a%7Cb|a|b>"),
        ("2 * 3 * 4 snake_case_name", "2 * 3 * 4 snake_case_name"),
        ("中文**粗体**中文", f"中文{ZWSP}*粗体*{ZWSP}中文"),
        ("**注意：**请看", "*注意*：请看"),
        ("x ``` y", "x ``\u02cb y"),
        ("```\na ```` b\n```", "```\na ``\u02cb\u02cb b\n```"),
    ],
)
def test_to_slack_mrkdwn(source: str, expected: str) -> None:
    assert to_slack_mrkdwn(source) == expected


# ---------------------------------------------------------------- Discord


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("**bold** _it_ *it*", "**bold** *it* *it*"),
        ("**bold _both_**", "**bold *both***"),
        ("2 * 3 * 4 snake_case_name", r"2 \* 3 \* 4 snake\_case\_name"),
        ("~~strike~~ |spoiler| ~single~", r"~~strike~~ \|spoiler\| \~single\~"),
        (
            "> a quote\n# a heading\n-# not subtext\n- a list\n#hashtag",
            "> a quote\n# a heading\n\\-# not subtext\n- a list\n\\#hashtag",
        ),
        ("**x** > y # z", "**x** > y # z"),
        ("hi @everyone and @here", f"hi {ZWSP}@everyone and {ZWSP}@here"),
        ("ping <@123> <#4> <t:5>", r"ping \<@123> \<#4> \<t:5>"),
        ("see https://x.com/a_b_c now", "see https://x.com/a_b_c now"),
        ("back\\slash", "back\\\\slash"),
        ("`code_with*stars`", "`code_with*stars`"),
        ("`a ` b`", "`a ` b\\`"),
        ("``a ` b``", "`` a ` b ``"),
        ("```py\nx = 1\n```", "```py\nx = 1\n```"),
        ("```\na ```` b\n```", f"```\na `{ZWSP}`{ZWSP}`{ZWSP}` b\n```"),
        ("[docs](https://x.com/a b)", "[docs](https://x.com/a b)"),
        ("[docs](https://x.com/a_(b))", "[docs](<https://x.com/a_(b)>)"),
        ("[**b**](https://x.com)", "[**b**](<https://x.com>)"),
        ("[https://x.com](https://x.com)", "<https://x.com>"),
        ("[x](ftp://host/f_1)", r"x (ftp://host/f\_1)"),
        ("中文**粗体**中文 😀", "中文**粗体**中文 😀"),
    ],
)
def test_to_discord_markdown(source: str, expected: str) -> None:
    assert to_discord_markdown(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("**b** _i_ `c` [l](https://u.v)", "b i c l (https://u.v)"),
        ("[https://u.v](https://u.v)", "https://u.v"),
        ("intro\n```py\nx = 1\n```\nend", "intro\nx = 1\nend"),
        ("2 * 3 <b>", "2 * 3 <b>"),
    ],
)
def test_plain_text(source: str, expected: str) -> None:
    assert plain_text(source) == expected


# ---------------------------------------------------------------- splitting Telegram HTML


def long_reply() -> str:
    """About 10,000 characters: prose in English, Chinese and emoji around a long Python block."""
    prose = [
        "The **deploy** finished with _two_ warnings & one <note>; see [the log](https://ci.example/run?id=7&x=1).",
        "部署已经完成，**但是**有两个警告。请查看日志并确认 `config.yaml` 的设置是否正确。",
        "Emoji check 😀🎉👍🏽 and a family 👨‍👩‍👧 in the middle of a sentence, then more words follow here.",
    ]
    paragraphs = [" ".join(prose[(i + k) % 3] for k in range(3)) for i in range(16)]
    code = "\n".join(f"    result_{i} = compute(a < b, c & d, '{'x' * (i % 7)}')  # 步骤 {i} 😀" for i in range(90))
    text = (
        "\n\n".join(paragraphs[:8]) + "\n\n```python\ndef main():\n" + code + "\n```\n\n" + "\n\n".join(paragraphs[8:])
    )
    assert 9_000 <= len(text) <= 11_000
    return text


def chunks(text: str, limit: int = 4096) -> list[str]:
    return [m.text for m in split_entities(TelegramText(text), limit)]


@pytest.mark.parametrize("limit", [4096, 1000, 333])
def test_long_reply_splits_into_valid_telegram_chunks(limit: int) -> None:
    whole = to_telegram(long_reply())
    parts = split_entities(whole, limit)
    assert len(parts) >= 2
    for part in parts:
        shown(part, limit)
    assert_reassembles(whole.text, [p.text for p in parts])
    # The code block crossing a cut continues as a python block in the next part.
    continued = [p for p in parts[1:] if p.entities and p.entities[0].offset == 0 and p.entities[0].type == "pre"]
    assert continued and all(p.entities[0].language == "python" for p in continued)
    # Every entity, clipped or whole, covers the same text it covered before the split.
    assert "".join(covered for part in parts for _, covered, *_ in marked(part) if _ == "text_link") in (
        "".join(covered for kind, covered, *_ in marked(whole) if kind == "text_link")
    )


def test_long_reply_prefers_paragraph_then_line_breaks() -> None:
    whole = to_telegram(long_reply())
    for part in split_entities(whole, 4096)[:-1]:
        # Each part ends where a paragraph or a line ended in the original, never mid-line.
        assert whole.text.find(part.text + "\n") >= 0


def test_short_and_empty_text() -> None:
    assert chunks("") == []
    assert chunks("  \n\n ") == []
    assert split_entities(to_telegram("**hi** there")) == [
        TelegramText("hi there", (dataclasses.replace(to_telegram("**hi**").entities[0]),))
    ]
    assert split_markdown("", 2000) == []
    assert split_markdown("\n \n", 2000) == []
    assert split_markdown("hi", 2000) == ["hi"]


def test_utf16_counting_with_an_emoji_at_the_boundary() -> None:
    # 4095 + 2 units does not fit in 4096: the emoji moves whole to the next chunk.
    assert chunks("a" * 4095 + "😀b") == ["a" * 4095, "😀b"]
    # 4094 + 2 fits exactly.
    assert chunks("a" * 4094 + "😀b") == ["a" * 4094 + "😀", "b"]
    assert utf16_len("a" * 4094 + "😀") == 4096


def test_never_splits_a_grapheme_cluster() -> None:
    family = "👨\u200d👩\u200d👧"  # 8 UTF-16 units
    assert chunks("x" * 9 + family, 12) == ["x" * 9, family]


def test_a_word_longer_than_the_limit_is_hard_split() -> None:
    parts = split_entities(to_telegram("**" + "x" * 10_000 + "**"))
    assert [(p.text, [(e.type, e.offset, e.length) for e in p.entities]) for p in parts] == [
        ("x" * 4096, [("bold", 0, 4096)]),
        ("x" * 4096, [("bold", 0, 4096)]),
        ("x" * 1808, [("bold", 0, 1808)]),
    ]
    assert split_markdown("y" * 4500, 2000) == ["y" * 2000, "y" * 2000, "y" * 500]


def test_break_preference_paragraph_line_word() -> None:
    assert chunks("A" * 60 + "\n\n" + "B" * 30 + "\n" + "C" * 20, 100) == ["A" * 60, "B" * 30 + "\n" + "C" * 20]
    # A paragraph break early in the window loses to a line break in its second half.
    assert chunks("A" * 30 + "\n\n" + "B" * 40 + "\n" + "C" * 40, 100) == ["A" * 30 + "\n\n" + "B" * 40, "C" * 40]
    assert chunks("word " * 10, 12) == ["word word"] * 5


def test_a_cut_moves_before_a_link_or_bold_words_rather_than_through_them() -> None:
    whole = to_telegram("see " + "word " * 3 + "[the release notes](https://x.com/r?a=1) and **three bold words** end")
    parts = split_entities(whole, 30)
    assert [p.text for p in parts] == ["see word word word", "the release notes and", "three bold words end"]
    assert marked(parts[1]) == [("text_link", "the release notes", "https://x.com/r?a=1")]
    assert marked(parts[2]) == [("bold", "three bold words")]
    # Longer than a chunk on its own: cut through, each part keeps its share.
    linked = to_telegram("[" + "label " * 10 + "](https://x.com/?a=1&b=2) after")
    long_link = split_entities(linked, 25)
    assert all(p.entities and p.entities[0].type == "text_link" for p in long_link)
    assert_reassembles(linked.text, [p.text for p in long_link])


def test_limit_must_fit_a_surrogate_pair() -> None:
    with pytest.raises(ValueError):
        split_entities(TelegramText("abc"), 1)


# ---------------------------------------------------------------- splitting Slack/Discord markdown


@pytest.mark.parametrize(
    ("render", "limit"), [(to_discord_markdown, 2000), (to_slack_mrkdwn, 3900), (to_discord_markdown, 500)]
)
def test_long_reply_splits_into_markdown_chunks(render: object, limit: int) -> None:
    assert callable(render)
    rendered = render(long_reply())
    chunks = split_markdown(rendered, limit)
    assert len(chunks) >= 2
    check_markdown_chunks(rendered, chunks, limit)
    lang = "```python\n" if render is to_discord_markdown else "```\n"
    assert any(prev.endswith("\n```") and c.startswith(lang) for prev, c in zip(chunks, chunks[1:], strict=False))


def test_a_code_block_crossing_a_boundary_is_closed_and_reopened() -> None:
    code = "\n".join(f"line {i}" for i in range(30))
    rendered = to_discord_markdown(f"intro\n```py\n{code}\n```\noutro")
    chunks = split_markdown(rendered, 100)
    assert chunks[0].startswith("intro\n```py\nline 0\n")
    assert all(c.startswith("```py\nline ") for c in chunks[1:])
    assert all(c.endswith("\n```") for c in chunks[:-1])
    assert chunks[-1].endswith("line 29\n```\noutro")
    check_markdown_chunks(rendered, chunks, 100)
    assert not any("```py\n```" in c for c in chunks)


def test_the_closing_fence_is_not_left_alone_in_a_chunk() -> None:
    rendered = "```\n" + "a" * 20 + "\n```\ntail"
    chunks = split_markdown(rendered, 28)
    assert chunks == ["```\n" + "a" * 20 + "\n```", "tail"]


def test_markdown_split_measures_utf16_and_keeps_links_whole() -> None:
    rendered = to_slack_mrkdwn("see [the release notes](https://x.com/r?a=1&b=2) 😀😀😀")
    chunks = split_markdown(rendered, 55, measure=utf16_len)
    assert any("<https://x.com/r?a=1&amp;b=2|the release notes>" in c for c in chunks)
    check_markdown_chunks(rendered, chunks, 55, utf16_len)


# ---------------------------------------------------------------- property-style


VOCABULARY = [
    "hello", "world", "snake_case", "2*3*4", "a&b", "<tag>", '"q"', "it's", "中文", "测试文本，好的。", "😀", "👍🏽",
    "👨\u200d👩\u200d👧", "🇯🇵", "e\u0301", "x" * 40, "**", "*", "_", "`", "[", "](https://x.com/?a=1&b=2)", "]", "(",
    ")", "~", "|", ">", "#", "@everyone", "\\", "&amp;",
]  # fmt: skip
SEPARATORS = [" ", " ", " ", "", "\n", "\n\n"]


def random_text(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(0, 120)):
        roll = rng.random()
        if roll < 0.03:
            lines = "\n".join(rng.choice(VOCABULARY) * rng.randint(1, 3) for _ in range(rng.randint(0, 8)))
            closing = "\n```\n" if rng.random() < 0.8 else ""
            parts.append(f"\n```{rng.choice(['', 'python', 'js'])}\n{lines}{closing}")
        else:
            parts.append(rng.choice(VOCABULARY) + rng.choice(SEPARATORS))
    return "".join(parts)


def test_invariants_hold_for_random_inputs() -> None:
    rng = random.Random(0)
    for _ in range(300):
        text = random_text(rng)
        whole = to_telegram(text)
        shown(whole, limit=len(text) * 2 + 10)
        limit = rng.randint(8, 150)
        parts = split_entities(whole, limit)
        for part in parts:
            assert shown(part, limit).strip()
        assert_reassembles(whole.text, [p.text for p in parts])

        for render in (to_discord_markdown, to_slack_mrkdwn):
            markdown = render(text)
            md_limit = rng.randint(30, 200)
            check_markdown_chunks(markdown, split_markdown(markdown, md_limit), md_limit)

        # Nothing is added but the marks of lists, quotes, rules and tables.
        assert not set(plain_text(text)) - set(text) - set("•│─☐☑\u00a0-+| 0123456789.")


# ---------------------------------------------------------------- the model's Markdown, block by block

GEMINI_ANSWER = """## Summary
Here is **what changed** and ~~what did not~~, see [the docs](https://example.com/docs).

### Steps
1. Install the *package*
2. Run `bot run`
   * with `--role worker`
     * nested twice
- done 😀

> Note: 中文也可以。
> A second line.

| Name | Value |
|------|-------|
| 中文 | 42 |
| emoji 👍 | `x/y` |

---
```python
print("## not a heading")
```
#### Deep heading
"""


def words(text: str) -> list[str]:
    """The words of a text, in order (link targets left out: Telegram shows only the label)."""
    text = re.sub(r"https?://[^\s)>|]+", "", text)
    text = re.sub(r"^[ \t\u00a0>│]*\d+[.)]", "", text, flags=re.MULTILINE)  # list numbers are marks
    return re.findall(r"[A-Za-z]+|[\u4e00-\u9fff]+|\d+", text)


def test_headings_lists_quotes_tables_render_without_raw_markup_on_telegram() -> None:
    message = to_telegram(GEMINI_ANSWER)
    text = shown(message)
    entities = marked(message)
    assert ("bold", "Summary") in entities and ("bold", "Deep heading") in entities
    assert ("strikethrough", "what did not") in entities
    assert ("blockquote", "Note: 中文也可以。\nA second line.") in entities
    assert "\n• done 😀" in text and "  • with" in text and "1. Install the package" in text
    table = next(covered for kind, covered, *_ in entities if kind == "pre" and "Name" in covered).split("\n")
    aligned = ["Name     | Value", "---------+------", "中文     | 42", "emoji 👍 | x/y"]
    assert [row.rstrip() for row in table] == aligned, "monospaced, aligned: 中文 and 👍 count two columns"
    assert ("pre", 'print("## not a heading")', "python") in entities, "code is never interpreted"
    for raw in ("## Summary", "~~", "|---", "\n* ", "\n> ", "**"):
        assert raw not in text, raw
    assert words(text) == words(GEMINI_ANSWER.replace("```python", "```")), "every word, in order"


def test_headings_lists_quotes_tables_render_as_slack_mrkdwn() -> None:
    mrkdwn = to_slack_mrkdwn(GEMINI_ANSWER)
    assert mrkdwn.startswith("*Summary*\n") and "~what did not~" in mrkdwn
    assert "\n> Note: 中文也可以。\n> A second line.\n" in mrkdwn
    assert "\n• done 😀" in mrkdwn and "\n```\nName     | Value\n" in mrkdwn
    for raw in ("## ", "~~", "|---", "**"):
        assert raw not in mrkdwn.replace('"## not a heading"', ""), raw
    assert words(html_unescape(mrkdwn)) == words(GEMINI_ANSWER.replace("```python", "```"))


def test_discord_gets_the_markdown_it_renders_itself() -> None:
    markdown = to_discord_markdown(GEMINI_ANSWER)
    assert markdown.startswith("## Summary\n") and "\n### Steps\n" in markdown and "\n**Deep heading**" in markdown
    assert "~~what did not~~" in markdown and "\n> Note: 中文也可以。\n> A second line.\n" in markdown
    assert "\n1. Install the *package*\n" in markdown and "\n    - nested twice\n" in markdown
    assert "\\#" not in markdown and "\\>" not in markdown and "\\~" not in markdown, "nothing it renders is escaped"
    assert words(markdown) == words(GEMINI_ANSWER)


BLOCK_VOCABULARY = [
    "alpha", "beta", "中文", "😀", "**bold**", "*it*", "~~gone~~", "`code`", "[link](https://x.com/a)", "2 * 3",
    "snake_case", "a&b", "<tag>", "|", "#", ">",
]  # fmt: skip
LINE_STARTS = ["", "", "", "# ", "## ", "#### ", "* ", "- ", "  * ", "1. ", "> ", "---"]


def random_markdown(rng: random.Random) -> str:
    lines: list[str] = []
    for _ in range(rng.randint(1, 25)):
        if rng.random() < 0.08:
            columns = rng.randint(1, 3)
            # Blank lines around: GFM takes the lines right after a table as its rows (and drops excess cells).
            lines += ["", "| " + " | ".join(rng.choice(["alpha", "中文", "42"]) for _ in range(columns)) + " |"]
            lines += ["|" + "---|" * columns]
            lines += ["| " + " | ".join(rng.choice(["beta", "😀", "7"]) for _ in range(columns)) + " |", ""]
            continue
        body = " ".join(rng.choice(BLOCK_VOCABULARY) for _ in range(rng.randint(0, 6)))
        lines.append(rng.choice(LINE_STARTS) + body)
    return "\n".join(lines)


def test_any_markdown_gives_valid_output_with_all_its_words_in_order() -> None:
    rng = random.Random(7)
    for _ in range(300):
        text = random_markdown(rng)
        expected = words(text)
        message = to_telegram(text)
        assert words(shown(message, limit=len(text) * 2 + 10)) == expected, text
        for part in split_entities(message, rng.randint(20, 300)):
            shown(part)
        assert words(to_discord_markdown(text)) == expected, text
        assert words(html_unescape(to_slack_mrkdwn(text))) == expected, text
        assert words(plain_text(text)) == expected, text


def html_unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
