"""Routing latency, memory and start-up, measured on the router as the gateway builds and calls it.

The router is :class:`bot.routing.Router` with the ``rule`` strategy and the gateway's settings (``routing.*``,
``runtime.*`` applied by ``tune_process``, each message cut to ``limits.route_chars``), the built-in agents (chat,
react, plan) and file agents: the four agents of ``tests/data/routing/dev/agents-examples`` (4 agents), or those
four and 36 generated ones (40 agents: distinct names, a one-sentence description, 5 keywords, 1 bounded pattern
and 5 examples each, from the word lists below, seeded).  Messages: ``tests/data/routing/dev/messages.tsv``;
"short" are those under 200 characters, "long" those over 400, plus a synthetic 2 KB and 16 KB message (a request
and a pasted log).  Each decision is ``await router.decide(text, settings.routing, "rule")``, timed with
``time.perf_counter_ns`` (wall clock: what a chat waits) and ``time.thread_time_ns`` (``cpu``: what the decision
costs this thread, without what other processes of a busy machine took meanwhile, nor numpy's BLAS threads); every
loop runs a warm-up pass over its messages first, then ``--passes`` timed passes.  ``machine`` gives the CPUs, the
load average and numpy's BLAS threads, which the wall-clock figures depend on.

Measured, in this order (one process, so the encoder loads once, as in the gateway):

1. ``startup``: the blocking part of ``Meaning.start`` (the shipped artefacts), the seconds until the sentence
   encoder (loaded on a daemon thread) is ready (``meaning.wait()``); the first decision made while it is still
   loading (it must not wait for it: ``factors["encoder"] == "loading"``) and the others of one pass over the short
   messages made before it was ready; then the time to place 4 and 40 agents in the space
   (``router.view.build()``, what ``router.prepare`` does once the encoder is ready).
2. ``memory_mb``: VmRSS (``/proc/self/status``) before ``Meaning.start``, after the encoder is ready and after
   the 4 and the 40 agents are placed: the MB each step added (the encoder's: its weights, unpacked to a 65 MB
   table, its tokenizer, and the corpus vectors, meaning head and judge ``Meaning.start`` reads; numpy is imported
   before, by ``bot.routing``; RSS is what the kernel sees, so freed memory the allocator keeps still counts).
3. ``rules``: no encoder (``Router(..., meaning=None)``: triggers and the classifier): p50/p99/max µs per
   decision for short texts with 4 and 40 file agents, and the p50 for the long, 2 KB and 16 KB texts.
4. ``meaning``: the encoder ready and the agents placed: the same figures.
5. ``budget``: rules p99 < 1000 µs and meaning p99 < 5000 µs for short texts, with 4 and with 40 agents (wall
   clock; the same by CPU time beside them).

Prints ONE JSON line (under a minute on two busy CPUs).  No network; every loop is bounded.

    python bench/routing.py [--passes 3] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # runnable from a checkout

from agents.models.offline import OfflineModel  # noqa: E402
from agents.specs.patterns import pattern_problem  # noqa: E402
from bot.config.settings import RoutingSection, Settings, load_settings  # noqa: E402
from bot.gateway.runtime import tune_process  # noqa: E402
from bot.routing import Meaning, RouteDecision, Router  # noqa: E402
from bot.routing.evaluate import read_labelled  # noqa: E402
from bot.routing.rule import RouteTarget  # noqa: E402
from bot.runs.catalog import AgentCatalog  # noqa: E402
from channels.registry import PLUGINS  # noqa: E402, F401  (installs the channels' settings sections)

DEV = ROOT / "tests" / "data" / "routing" / "dev"
AGENTS_DIR = DEV / "agents-examples"
MESSAGES = DEV / "messages.tsv"
SHORT_BELOW, LONG_ABOVE = 200, 400
SIZES = {"2kb": 2 * 1024, "16kb": 16 * 1024}
SIZED_RUNS = 20
"""Timed decisions per synthetic message (after one warm-up)."""
RULES_P99_BUDGET_US, MEANING_P99_BUDGET_US = 1000, 5000
ENCODER_TIMEOUT_S = 120

# Word lists of the generated agents: a domain (its name and the nouns people use for it), a role, a verb.
DOMAINS: dict[str, tuple[str, ...]] = {
    "garden": ("garden", "tomatoes", "seedlings", "compost", "pruning", "lawn", "weeds", "soil"),
    "recipe": ("recipe", "dinner", "oven", "ingredients", "baking", "sauce", "vegetarian", "dough"),
    "fitness": ("workout", "training", "squats", "cardio", "muscles", "running", "stretching", "gym"),
    "trip": ("trip", "flight", "hotel", "itinerary", "passport", "luggage", "visa", "sightseeing"),
    "budget": ("budget", "savings", "expenses", "spending", "salary", "rent", "groceries", "debt"),
    "tax": ("tax", "deduction", "refund", "return", "receipts", "income", "filing", "VAT"),
    "invoice": ("invoice", "payment", "client", "overdue", "billing", "quote", "reminder", "net"),
    "hiring": ("candidate", "interview", "job", "resume", "offer", "recruiter", "shortlist", "salary"),
    "onboarding": ("onboarding", "newcomer", "laptop", "accounts", "checklist", "welcome", "buddy", "handbook"),
    "contract": ("contract", "clause", "agreement", "NDA", "liability", "termination", "signature", "lawyer"),
    "campaign": ("campaign", "newsletter", "audience", "conversion", "landing", "funnel", "ads", "leads"),
    "seo": ("SEO", "ranking", "keywords", "backlinks", "sitemap", "crawl", "snippet", "traffic"),
    "social": ("post", "caption", "hashtags", "followers", "Instagram", "thread", "engagement", "reel"),
    "support": ("customer", "complaint", "refund", "ticket", "reply", "escalation", "apology", "order"),
    "inventory": ("stock", "warehouse", "SKU", "reorder", "pallet", "shortage", "supplier", "inventory"),
    "shipping": ("parcel", "shipment", "tracking", "courier", "customs", "delivery", "label", "freight"),
    "property": ("apartment", "lease", "tenant", "landlord", "mortgage", "viewing", "deposit", "listing"),
    "insurance": ("insurance", "policy", "claim", "premium", "coverage", "accident", "deductible", "broker"),
    "clinic": ("appointment", "doctor", "prescription", "dentist", "vaccination", "referral", "symptoms", "clinic"),
    "nutrition": ("calories", "protein", "diet", "meal", "snacks", "vitamins", "sugar", "fasting"),
    "pet": ("dog", "cat", "vet", "puppy", "leash", "litter", "treats", "grooming"),
    "parenting": ("toddler", "bedtime", "tantrum", "daycare", "homework", "babysitter", "kids", "screen"),
    "music": ("guitar", "piano", "chords", "scales", "practice", "rhythm", "metronome", "song"),
    "photo": ("photo", "camera", "lens", "exposure", "portrait", "lighting", "aperture", "Lightroom"),
    "video": ("video", "edit", "timeline", "subtitles", "transition", "render", "footage", "thumbnail"),
    "wedding": ("wedding", "guests", "venue", "bride", "caterer", "seating", "vows", "florist"),
    "tickets": ("tickets", "concert", "seats", "festival", "booking", "venue", "lineup", "resale"),
    "car": ("car", "tyres", "brakes", "engine", "service", "oil", "mechanic", "inspection"),
    "repair": ("leak", "faucet", "drywall", "plumber", "paint", "boiler", "tiles", "drill"),
    "energy": ("electricity", "heating", "meter", "tariff", "solar", "bill", "insulation", "kWh"),
    "language": ("vocabulary", "grammar", "flashcards", "pronunciation", "lesson", "Spanish", "verbs", "fluency"),
    "exam": ("exam", "revision", "syllabus", "flashcard", "mock", "grades", "essay", "deadline"),
    "paper": ("paper", "citation", "abstract", "literature", "reviewer", "journal", "methods", "arXiv"),
    "grant": ("grant", "proposal", "funding", "budget", "deadline", "reviewers", "impact", "foundation"),
    "podcast": ("podcast", "episode", "guest", "microphone", "intro", "show", "listeners", "audio"),
    "chess": ("chess", "opening", "endgame", "gambit", "rating", "puzzle", "tactics", "blunder"),
}
ROLES = ("helper", "assistant", "coach", "planner", "advisor", "tracker", "buddy", "desk")
VERBS = ("Helps with", "Plans and tracks", "Answers questions about", "Keeps an eye on", "Gives advice on")
AUDIENCES = ("our team", "me and my family", "small businesses", "beginners", "the office", "busy people")
EXAMPLES = (
    "can you help me with my {a} this week?",
    "what should I do about the {a} before {when}?",
    "I need a plan for the {a} and the {b}",
    "how do I deal with {a} when the {b} is late?",
    "give me a checklist for {a} {when}",
    "is it normal that my {a} costs more than the {b}?",
    "compare two options for the {a}, please",
    "remind me what we decided about the {b} last time",
    "Write a short note to explain the {a} to a beginner",
    "what are common mistakes with {a} and {b}?",
)
WHEN = ("tomorrow", "next month", "the weekend", "Friday", "the holidays", "the end of the quarter")

# The synthetic long messages: a request, then a pasted log up to the size.
REQUESTS = (
    "Our nightly import job started failing after yesterday's deploy, can you find out why? Here is the log:",
    "Please summarise what went wrong in this run and what we should fix first:",
)
LEVELS = ("INFO", "INFO", "INFO", "WARN", "DEBUG", "ERROR")
EVENTS = (
    "worker-{n} picked up batch {m}",
    "retrying request to inventory-service (attempt {n})",
    "connection pool at {m}% capacity",
    "wrote {m} rows to staging.orders",
    "TimeoutError: upstream did not answer within {n}s",
    "cache miss for key customer:{m}",
)


def rss_mb() -> float:
    """The process's resident set now (VmRSS), in MB; the peak (ru_maxrss) where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generated_agents(count: int, rng: random.Random) -> list[RouteTarget]:
    """``count`` file agents of distinct domains, as the catalog would show them."""
    out = []
    for domain in rng.sample(sorted(DOMAINS), count):
        words = DOMAINS[domain]
        role = rng.choice(ROLES)
        about = rng.sample(words, 3)
        description = f"{rng.choice(VERBS)} {about[0]}, {about[1]} and {about[2]} for {rng.choice(AUDIENCES)}."
        keywords = tuple(rng.sample(words, 5))
        a, b, c, d = rng.sample(words, 4)
        pattern = rf"\b({a}|{b})\b.{{0,40}}\b({c}|{d})\b"  # bounded: the gap reads at most 40 characters
        problem = pattern_problem(pattern)
        assert problem is None, problem
        examples = tuple(
            template.format(a=pair[0], b=pair[1], when=rng.choice(WHEN))
            for template, pair in zip(rng.sample(EXAMPLES, 5), (rng.sample(words, 2) for _ in range(5)), strict=True)
        )
        out.append(
            RouteTarget(
                name=f"{domain}-{role}",
                title=f"{domain.capitalize()} {role.capitalize()}",
                description=description,
                keywords=keywords,
                patterns=(pattern,),
                priority=rng.choice((40, 50, 60, 70)),
                examples=examples,
            )
        )
    return out


def synthetic(size: int, rng: random.Random) -> str:
    """A message of exactly ``size`` characters: a request and a pasted log."""
    lines = [rng.choice(REQUESTS)]
    length = len(lines[0])
    while length < size:
        second = rng.randrange(60 * 60 * 24)
        event = rng.choice(EVENTS).format(n=rng.randint(1, 9), m=rng.randint(10, 99_999))
        line = f"2026-12-07 {second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d} {rng.choice(LEVELS)} {event}"
        lines.append(line)
        length += len(line) + 1
    return "\n".join(lines)[:size]


def stats(samples_us: list[float]) -> dict[str, Any]:
    """p50 / p99 (nearest rank) and max in µs (None without samples), and the sample count."""
    ordered = sorted(samples_us)
    n = len(ordered)

    def rank(q: float) -> float | None:
        return round(ordered[min(n - 1, max(0, math.ceil(q * n) - 1))], 1) if n else None

    return {"p50_us": rank(0.5), "p99_us": rank(0.99), "max_us": rank(1.0), "samples": n}


async def timed(router: Router, config: RoutingSection, text: str) -> tuple[float, float, RouteDecision]:
    """One decision: its wall-clock µs (what a chat waits), its CPU µs (this thread's: what it costs, without the
    time other processes of a busy machine took) and the decision."""
    cpu = time.thread_time_ns()
    started = time.perf_counter_ns()
    decision = await router.decide(text, config, "rule")
    wall = time.perf_counter_ns() - started
    return wall / 1000, (time.thread_time_ns() - cpu) / 1000, decision


async def timings(
    router: Router, config: RoutingSection, texts: list[str], passes: int
) -> tuple[list[float], list[float], list[RouteDecision]]:
    """One warm-up pass over ``texts``, then ``passes`` timed ones: the wall and CPU µs of each decision, and the
    last pass's decisions."""
    for text in texts:
        await router.decide(text, config, "rule")
    walls: list[float] = []
    cpus: list[float] = []
    decisions: list[RouteDecision] = []
    for _ in range(passes):
        decisions = []
        for text in texts:
            wall, cpu, decision = await timed(router, config, text)
            walls.append(wall)
            cpus.append(cpu)
            decisions.append(decision)
    return walls, cpus, decisions


def p50(samples: list[float]) -> float:
    return float(stats(samples)["p50_us"])


async def latencies(
    router: Router,
    config: RoutingSection,
    short: list[str],
    long: list[str],
    sized: dict[str, str],
    passes: int,
) -> dict[str, Any]:
    short_us, short_cpu_us, decisions = await timings(router, config, short, passes)
    long_us, long_cpu_us, _ = await timings(router, config, long, passes)
    cpu = stats(short_cpu_us)
    out: dict[str, Any] = {
        "short": stats(short_us),
        "short_cpu_p50_us": cpu["p50_us"],
        "short_cpu_p99_us": cpu["p99_us"],
        "long_p50_us": p50(long_us),
        "long_cpu_p50_us": p50(long_cpu_us),
        "long_samples": len(long_us),
    }
    for name, text in sized.items():
        sized_us, sized_cpu_us, _ = await timings(router, config, [text], SIZED_RUNS)
        out[f"{name}_p50_us"] = p50(sized_us)
        out[f"{name}_cpu_p50_us"] = p50(sized_cpu_us)
    out["sized_samples_each"] = SIZED_RUNS
    encoder = sorted({str(d.factors.get("encoder")) for d in decisions})
    out["encoder_state_seen"] = encoder  # "none" without the encoder, "ready" with it
    out["by_meaning"] = sum("meaning" in d.factors for d in decisions)  # of the last pass's short decisions
    return out


def _load() -> float | None:
    """The 1-minute load average (other processes' work slows the wall-clock figures, not the CPU ones)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _blas_threads() -> int | None:
    """The BLAS threads numpy's matrix products may use (the encoder limits its own to 1; the space's products
    against the corpus and the agents run with these: on a busy machine, waiting for a second thread shows in the
    wall-clock figures and not in the CPU ones)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return max((int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"), default=None)


def build_settings() -> Settings:
    agents = {"dirs": [str(AGENTS_DIR)], "user_dir": str(ROOT / "no-user-agents")}
    return load_settings(None, env={}, user_config=ROOT / "no-user.yaml", overrides={"agents": agents})


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=3, help="timed passes over the messages (after a warm-up)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    began_run = time.perf_counter_ns()
    load_start = _load()
    rng = random.Random(args.seed)
    settings = build_settings()
    config = settings.routing
    limit = settings.limits.route_chars
    catalog = AgentCatalog.load(settings.agents, settings.plan)
    builtins = ("chat", "react", "plan")
    targets4 = catalog.targets()
    files4 = sorted(t.name for t in targets4 if t.name not in builtins)
    assert len(files4) == 4, files4
    extra = generated_agents(36, rng)
    targets40 = [*targets4, *extra]
    assert len({t.name for t in targets40}) == len(targets40) == 43
    rows = read_labelled(MESSAGES)
    short = [text[:limit] for _, text in rows if len(text) < SHORT_BELOW]  # the gateway routes this prefix
    long = [text[:limit] for _, text in rows if len(text) > LONG_ABOVE]
    sized = {name: synthetic(size, rng)[:limit] for name, size in SIZES.items()}
    model = OfflineModel()
    tune_process(settings.runtime)  # as `bot run` does: the collector thresholds and freeze, the switch interval

    # 1. Start-up: the encoder loads on its thread; the router decides meanwhile without waiting for it.
    rss_before = rss_mb()
    started = time.perf_counter_ns()
    meaning = Meaning.start(config.rule.encoder)
    start_call_ms = (time.perf_counter_ns() - started) / 1e6
    loading_router = Router(targets4, model, meaning=meaning)
    first_us, first_cpu_us, first = await timed(loading_router, config, short[0])
    during: list[float] = []
    said_loading = 0
    for text in short[1:]:  # one bounded pass, while the encoder is still loading
        if meaning.loader.done:
            break
        spent, _, decision = await timed(loading_router, config, text)
        during.append(spent)
        said_loading += decision.factors.get("encoder") == "loading"
    ready = meaning.wait(ENCODER_TIMEOUT_S)
    if not ready:
        raise SystemExit(f"the sentence encoder is {meaning.state}: routing by meaning cannot be measured")
    ready_s = (time.perf_counter_ns() - started) / 1e9
    for thread in threading.enumerate():  # a placement the loading router began when the encoder turned ready
        if thread.name == "routing-space":
            thread.join(ENCODER_TIMEOUT_S)
    rss_encoder = rss_mb()
    placed: dict[int, Router] = {}
    place_ms: dict[int, float] = {}
    rss_placed: dict[int, float] = {}
    for count, targets in ((4, targets4), (40, targets40)):
        router = Router(targets, model, meaning=meaning)
        assert router.view is not None
        began = time.perf_counter_ns()
        space = router.view.build()  # what router.prepare() does once the encoder is ready
        place_ms[count] = (time.perf_counter_ns() - began) / 1e6
        assert space is not None, meaning.state
        placed[count] = router
        rss_placed[count] = rss_mb()
    startup = {
        "meaning_start_call_ms": round(start_call_ms, 1),
        "encoder_ready_s": round(ready_s, 2),
        "encoder_state": meaning.state,
        "first_decision_while_loading_us": round(first_us, 1),
        "first_decision_while_loading_cpu_us": round(first_cpu_us, 1),
        "first_decision_encoder": first.factors.get("encoder"),
        "first_decision_agent": first.agent,
        "first_decision_did_not_wait": first.factors.get("encoder") == "loading",
        "decisions_while_loading": stats(during),
        "decisions_while_loading_said_loading": said_loading,
        "place_4_agents_ms": round(place_ms[4], 1),
        "place_40_agents_ms": round(place_ms[40], 1),
    }
    memory = {
        "rss_before_meaning_mb": round(rss_before, 1),
        "encoder_added_mb": round(rss_encoder - rss_before, 1),
        "placed_4_agents_added_mb": round(rss_placed[4] - rss_encoder, 1),
        "placed_40_agents_added_mb": round(rss_placed[40] - rss_placed[4], 1),
        "rss_after_all_mb": round(rss_placed[40], 1),
    }

    # 2. Triggers and the classifier alone (no encoder), then 3. by meaning (the encoder ready, agents placed).
    rules = {
        f"agents_{count}": await latencies(
            Router(targets, model, meaning=None), config, short, long, sized, args.passes
        )
        for count, targets in ((4, targets4), (40, targets40))
    }
    by_meaning = {
        f"agents_{count}": await latencies(router, config, short, long, sized, args.passes)
        for count, router in placed.items()
    }
    budget = {  # wall clock, as a chat waits; the CPU ones say whether a miss is this machine's other work
        "rules_short_p99_under_1000_us": all(r["short"]["p99_us"] < RULES_P99_BUDGET_US for r in rules.values()),
        "meaning_short_p99_under_5000_us": all(
            r["short"]["p99_us"] < MEANING_P99_BUDGET_US for r in by_meaning.values()
        ),
        "rules_short_cpu_p99_under_1000_us": all(r["short_cpu_p99_us"] < RULES_P99_BUDGET_US for r in rules.values()),
        "meaning_short_cpu_p99_under_5000_us": all(
            r["short_cpu_p99_us"] < MEANING_P99_BUDGET_US for r in by_meaning.values()
        ),
    }
    report = {
        "benchmark": "routing",
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_1m_at_start": load_start,
            "loadavg_1m_at_end": _load(),
            "blas_threads": _blas_threads(),
        },
        "strategy": "rule",
        "builtins": list(builtins),
        "file_agents": {"4": files4, "40": f"the 4 and {len(extra)} generated (seed {args.seed})"},
        "messages": {
            "short_under_200_chars": len(short),
            "long_over_400_chars": len(long),
            "sized_chars": {name: len(text) for name, text in sized.items()},
            "route_chars": limit,
        },
        "passes": args.passes,
        "startup": startup,
        "memory_mb": memory,
        "rules": rules,
        "meaning": by_meaning,
        "budget": budget,
        "wall_s": round((time.perf_counter_ns() - began_run) / 1e9, 1),
    }
    print(json.dumps(report, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
