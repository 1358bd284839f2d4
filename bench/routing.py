"""Rule-routing latency: 10,000 messages against 50 agents × 20 triggers.

Prints one JSON line with median and p99 microseconds per decision (target p99 < 100 µs).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from bot.routing.rule import RouteTarget, RuleRouter

WORDS = (
    "deploy build test cache file read write list fetch url time zone plan schedule remind trip hotel budget "
    "invoice report summary review code bug fix error log server restart backup database query index metric "
    "alert ticket user account password email calendar meeting note todo task project release branch merge "
    "docker kubernetes network proxy certificate domain weather news price stock translate poem story joke"
).split()
FILLER = (
    "the a an to of and in on for with my our your this that it is are was be can could would please "
    "me you we they them about from into at by as if then so but or not just also very really some any "
    "what when where who why how which there here now today tomorrow yesterday again still maybe quick"
).split()
CJK = "文件 读取 执行 规划 计划 步骤 安排 提醒 时间 天气 新闻 翻译 部署 服务器 日志 数据库 会议 报告".split()


def make_targets(agents: int, triggers: int, rng: random.Random) -> list[RouteTarget]:
    targets = []
    for i in range(agents):
        n_patterns = triggers // 4
        keywords = tuple(rng.sample(WORDS, triggers - n_patterns - 2) + rng.sample(CJK, 2))
        patterns = tuple(
            rf"\b{rng.choice(WORDS)}\s+(?:the\s+)?{rng.choice(WORDS)}\b" if k % 2 else rf"{rng.choice(CJK)}.{{0,6}}"
            for k in range(n_patterns)
        )
        targets.append(RouteTarget(f"agent-{i}", keywords=keywords, patterns=patterns, priority=rng.randint(1, 100)))
    return targets


def make_messages(count: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(count):
        # Real messages are mostly ordinary words with a few that a trigger may know.
        words = [rng.choice(WORDS) if rng.random() < 0.3 else rng.choice(FILLER) for _ in range(rng.randint(4, 16))]
        if rng.random() < 0.3:
            words.insert(rng.randint(0, len(words)), rng.choice(CJK))
        out.append(" ".join(words).capitalize() + rng.choice(["?", ".", "!"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--triggers", type=int, default=20)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    router = RuleRouter(make_targets(args.agents, args.triggers, rng))
    messages = make_messages(args.messages, rng)
    for text in messages[:500]:
        router.route(text)  # warm-up
    timings = []
    matched = 0
    for text in messages:
        started = time.perf_counter_ns()
        result = router.route(text)
        timings.append((time.perf_counter_ns() - started) / 1000)
        matched += result.best is not None
    timings.sort()
    print(
        json.dumps(
            {
                "benchmark": "routing",
                "agents": args.agents,
                "triggers_per_agent": args.triggers,
                "messages": args.messages,
                "matched": matched,
                "median_us": round(statistics.median(timings), 2),
                "p99_us": round(timings[int(len(timings) * 0.99) - 1], 2),
                "max_us": round(timings[-1], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
