"""``judge:`` checks: a model scores a turn's answer against a rubric, from 0 to 1; the check passes at the
threshold.  The whole prompt, the score and the judge's reason are kept with the result, with its tokens and
cost.  The offline model cannot judge: its checks are skipped (reported as such, never passed)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agents.messages import Message
from agents.models.base import Model, ModelError, Usage
from bot.evals.results import CheckResult, JudgeRecord

SYSTEM = (
    "You grade a chat bot's answer against a rubric. If what the rubric says is true of the answer (given the "
    "person's message), the answer passes. Answer with a JSON object only: "
    '{"reason": string, "pass": boolean, "score": number from 0 to 1}.\n\n'
    "Example:\n<Message>hi</Message>\n<Answer>Hello! How can I help?</Answer>\n<Rubric>Greets the person</Rubric>\n"
    '{"reason": "it says Hello", "pass": true, "score": 1.0}'
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "pass": {"type": "boolean"}, "score": {"type": "number"}},
    "required": ["reason", "pass", "score"],
}
_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def json_object(parsed: Any, text: str) -> dict[str, Any] | None:
    """The JSON object a model answered (the judge's verdict, a pairwise verdict, a simulated person's action):
    the decoded one when a schema was asked for, else the text's, in a fenced block or with words around it."""
    if isinstance(parsed, dict):
        return parsed
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("{"), text.rfind("}")
    candidates += [text.strip()] + ([text[start : end + 1]] if 0 <= start < end else [])
    for candidate in candidates:
        try:
            found = json.loads(candidate)
        except ValueError:
            continue
        return found if isinstance(found, dict) else None
    return None


def prompt_of(said: str, answer: str, rubric: str) -> str:
    return f"<Message>\n{said}\n</Message>\n<Answer>\n{answer}\n</Answer>\n<Rubric>\n{rubric}\n</Rubric>"


async def judge(
    model: Model,
    label: str,
    *,
    rubric: str,
    said: str,
    answer: str,
    threshold: float,
    cost: Callable[[str, Usage], float],
) -> CheckResult:
    """Ask ``model`` (named ``label``) to score ``answer``; the check with the judge's record."""
    expected = f"{rubric!r} scores ≥ {threshold:g}"
    prompt = prompt_of(said, answer, rubric)
    record = JudgeRecord(model=label, prompt=f"{SYSTEM}\n\n{prompt}", threshold=threshold)
    if not model.understands:
        seen = f"{label} cannot judge (the offline stand-in): skipped; give --judge provider/name"
        return CheckResult(check="judge", expected=expected, passed=None, seen=seen, judge=record)
    try:
        response = await model.request([Message.user(prompt)], system=SYSTEM, response_schema=SCHEMA)
    except Exception as exc:  # a judge that fails (or a client's bug) fails the check, not the run
        seen = f"the judge failed: {exc}" if isinstance(exc, ModelError) else f"the judge failed: {exc!r}"
        return CheckResult(check="judge", expected=expected, passed=False, seen=seen, judge=record)
    usage = response.usage
    record.input_tokens, record.output_tokens = usage.input_tokens, usage.output_tokens
    record.cached = response.from_cache
    record.cost = 0.0 if response.from_cache else cost(response.model or label, usage)
    verdict = _verdict(response.parsed, response.text or "")
    if verdict is None:
        seen = f"the judge did not answer with a score: {(response.text or '')[:200]!r}"
        return CheckResult(check="judge", expected=expected, passed=False, seen=seen, judge=record)
    score, reason = verdict
    record.score, record.reason = score, reason
    return CheckResult(
        check="judge", expected=expected, passed=score >= threshold, seen=f"{score:g}: {reason}", judge=record
    )


def _verdict(parsed: Any, text: str) -> tuple[float, str] | None:
    data = json_object(parsed, text)
    if data is None:
        return None
    try:
        score = float(data["score"])
    except (KeyError, TypeError, ValueError):
        return None
    return min(1.0, max(0.0, score)), str(data.get("reason") or "")
