"""Rendering cost of model Markdown per platform: microseconds per KB of input, and per short reply.

A Gemini-style answer (headings, nested lists, a quote, a table, code, links, CJK, emoji) is rendered
for Telegram (text + entities, then split at 4,096), Slack (mrkdwn, then split) and Discord (Markdown, then split at
2,000), repeated to 1, 8 and 32 KB.  Prints ONE JSON line.

    python bench/rendering.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from channels.formatting import (
    split_entities,
    split_markdown,
    to_discord_markdown,
    to_slack_mrkdwn,
    to_telegram,
    utf16_len,
)

ANSWER = """## Summary
Here is **what changed** and ~~what did not~~, see [the docs](https://example.com/docs).

1. Install the *package*
2. Run `bot run`
   * with `--role worker`
- done 😀 中文也可以。

> Note: a quote
> over two lines.

| Name | Value |
|------|-------|
| 中文 | 42 |

```python
print("hello")
```
"""

SHORT = "Sure! **Paris** is the capital of France. See [Wikipedia](https://en.wikipedia.org/wiki/Paris)."

RENDERERS: dict[str, Callable[[str], list[object]]] = {
    "telegram": lambda text: list(split_entities(to_telegram(text), 4096)),
    "slack": lambda text: split_markdown(to_slack_mrkdwn(text), 3000, measure=utf16_len),
    "discord": lambda text: split_markdown(to_discord_markdown(text), 2000),
}


def timed(render: Callable[[str], list[object]], text: str, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        began = time.perf_counter()
        render(text)
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1e6


def main(rounds: int) -> None:
    result: dict[str, object] = {}
    for name, render in RENDERERS.items():
        figures: dict[str, float] = {"short_reply_us": round(timed(render, SHORT, rounds * 5), 1)}
        for kb in (1, 8, 32):
            text = (ANSWER * (kb * 1024 // len(ANSWER.encode()) + 1))[: kb * 1024]
            figures[f"us_per_kb_at_{kb}kb"] = round(timed(render, text, max(5, rounds // kb)) / kb, 1)
        result[name] = figures
    print(json.dumps(result))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    main(parser.parse_args().rounds)
