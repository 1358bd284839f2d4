"""``bot route``: the routing decision for a message, and why, without running anything; ``--eval FILE.tsv`` measures
routing on a team's own labelled messages (accuracy, per-agent precision and recall, confusion, misroutes)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import typer

from bot.config.settings import Settings
from bot.routing import Correction, Router, parse_target
from bot.routing.decision import RouteDecision
from bot.routing.evaluate import EvalFileError, Outcome, Report, read_labelled, render
from channels.terminal import terminal_safe

ENCODER_WAIT_S = 120.0


def decision_json(text: str, decision: RouteDecision, elapsed_ms: float) -> dict[str, Any]:
    """Every part of a decision, as ``--json`` prints it (and the text form, key by key)."""
    out: dict[str, Any] = {
        "text": text,
        "agent": decision.agent,
        "method": decision.method,
        "strategy": decision.strategy,
        "confidence": round(decision.confidence, 3),
        "matched_keywords": decision.matched_keywords,
        "matched_patterns": decision.matched_patterns,
        "latency_ms": round(elapsed_ms, 3),
    }
    if decision.fallback:
        out["fallback"] = decision.fallback
    if decision.note:
        out["note"] = decision.note
    out["factors"] = decision.factors
    return out


async def _corrections(settings: Settings) -> list[Correction]:
    """The corrections stored by a running bot (read-only; none when there is no database yet)."""
    from bot.routing.policy import CORRECTIONS
    from bot.store.sql import store_from_settings

    try:
        store = store_from_settings(settings.store, read_only=True)
        await store.start()
    except Exception:  # no database yet, or one this command may not open: route without corrections
        return []
    try:
        view = await store.settings_view(CORRECTIONS)
        return [Correction.from_setting(k, v) for k, v in view.items() if isinstance(v, dict)]
    except Exception:
        return []
    finally:
        await store.close()


async def route_messages(
    settings: Settings, messages: list[str], strategy: str | None, as_json: bool, eval_file: Path | None
) -> int:
    from bot.gateway.parts import build_model
    from bot.routing.offline import start_meaning
    from bot.runs.catalog import AgentCatalog

    # Its warnings are printed here once, not logged as well.
    catalog = AgentCatalog.load(settings.agents, settings.plan, quiet=True)
    for error in catalog.errors:
        typer.echo(f"agent file skipped: {error}", err=True)
    model = build_model(settings)
    chosen = strategy or settings.routing.strategy
    if chosen == "llm" and not model.understands:
        typer.echo(
            "no model key (GEMINI_API_KEY or model.provider): the llm strategy needs a model; "
            "showing the offline decision",
            err=True,
        )
    logging.getLogger("bot.routing").setLevel(logging.ERROR)
    meaning = start_meaning(settings.routing.rule)
    router = Router(catalog.targets(), model, meaning=meaning)
    router.set_corrections(await _corrections(settings))
    if meaning is not None and not router.prepare(ENCODER_WAIT_S):
        typer.echo(f"routing by meaning is off here: the sentence encoder is {meaning.state}", err=True)
    try:
        if eval_file is not None:
            return await _evaluate(router, settings, catalog.agents.keys(), chosen, eval_file, as_json)
        for text in messages:
            out = await _one(router, settings, set(catalog.agents), text, chosen)
            if as_json:  # what was typed or read is shown, never obeyed by the terminal
                typer.echo(terminal_safe(json.dumps(out, ensure_ascii=False)))
            else:
                typer.echo(terminal_safe("\n".join(f"{k}: {_shown(v)}" for k, v in out.items() if k != "text")))
    finally:
        await model.aclose()
    return 0


async def _one(router: Router, settings: Settings, known: set[str], text: str, strategy: str) -> dict[str, Any]:
    started = time.perf_counter()
    targeting = parse_target(text, known)
    if targeting.error is not None:  # what the bot answers instead of routing (a typo in @agent or --strategy)
        return {
            "text": text,
            "agent": None,
            "method": "target",
            "strategy": strategy,
            "confidence": 0.0,
            "error": targeting.error,
        }
    if targeting.agent is not None:
        decision = RouteDecision(targeting.agent, "explicit", "explicit", 1.0, text=targeting.text)
    else:
        routed = targeting.text[: settings.limits.route_chars]
        decision = await router.decide(routed, settings.routing, targeting.strategy or strategy)
        decision = router.apply_fallback(decision, settings.routing)
    return decision_json(text, decision, (time.perf_counter() - started) * 1000)


async def _evaluate(router: Router, settings: Settings, agents: Any, strategy: str, path: Path, as_json: bool) -> int:
    try:
        rows = read_labelled(path)
    except (OSError, EvalFileError) as exc:
        typer.echo(f"cannot read {path}: {exc}", err=True)
        return 2
    report = Report()
    latencies = []
    for label, text in rows:
        out = await _one(router, settings, set(agents), text, strategy)
        latencies.append(out.get("latency_ms", 0.0))
        report.add(
            Outcome(
                label,
                text,
                out["agent"] or "(none)",
                out["method"],
                out["confidence"],
                out.get("note") or out.get("error") or "",
            )
        )
    summary = report.summary(unknown=[label for label, _ in rows if label not in agents])
    latencies.sort()
    if latencies:
        summary["latency_ms"] = {
            "p50": latencies[len(latencies) // 2],
            "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        }
    typer.echo(terminal_safe(json.dumps(summary, ensure_ascii=False, indent=1) if as_json else render(summary)))
    return 0


def _shown(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
