"""``log.format: json``: one JSON object per line, with the correlation id of the request a line concerns (the
trace id ``/trace`` shows), also when a button press resumes the request; secrets still redacted."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from agents.models.base import ModelUnavailable
from agents.models.scripted import ScriptedModel, call
from agents.tools.base import tool
from bot.cli.logs import CorrelationFilter, RedactingFilter, setup_logging

SECRET = "sk-live-0123456789abcdef"


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root.addHandler(handler)
    level = root.level
    try:
        setup_logging("INFO", {SECRET}, format="json")
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        for other in root.handlers:
            for f in [f for f in other.filters if isinstance(f, RedactingFilter | CorrelationFilter)]:
                other.removeFilter(f)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


async def test_json_lines_carry_the_correlation_id(make_harness: Any, json_lines: io.StringIO) -> None:
    ran: list[str] = []

    @tool(confirm=True)
    async def restart(service: str) -> str:
        """Restart a service."""
        ran.append(service)
        logging.getLogger("tests.tool").warning("restarting %s with key %s", service, SECRET)
        return "restarted"

    model = ScriptedModel([call("restart", {"service": "web"}), "Restarted."])
    h = await make_harness(model, tools=[restart])
    await h.say("@react restart web")
    await h.click("Approve")  # a new event (the press): the resumed run logs under the request's id
    assert ran == ["web"]
    records = lines(json_lines)
    assert records, "log lines were written as JSON"
    assert all({"ts", "level", "logger", "message", "correlation_id"} <= set(r) for r in records)
    [warning] = [r for r in records if r["logger"] == "tests.tool"]
    assert warning["correlation_id"] == "console:m1"
    assert warning["message"] == "restarting web with key ***"
    assert SECRET not in json_lines.getvalue()
    (events,) = await h.gateway.tracing.runs(str(h.chat()))
    assert {e.correlation_id for e in events} == {warning["correlation_id"]}


async def test_a_model_error_is_logged_under_its_request(make_harness: Any, json_lines: io.StringIO) -> None:
    h = await make_harness(ScriptedModel([ModelUnavailable("the provider is down")]))
    [reply] = await h.say("hello")
    assert "The model failed" in reply
    [line] = [r for r in lines(json_lines) if "model error" in r["message"]]
    assert line["level"] == "WARNING" and line["correlation_id"] == "console:m1"


def test_log_lines_lose_what_the_detector_finds(json_lines: io.StringIO) -> None:
    """Not only configured secrets: a token in a URL a library logs, a password an error quotes."""
    log = logging.getLogger("tests.detector")
    log.warning("GET https://api.example.com/v1/items?access_token=ya29QwErTy123456789 failed: 401")
    log.warning("connect to postgresql://bot:S3cr3t-pw@db:5432/bot refused")
    text = json_lines.getvalue()
    assert "ya29QwErTy123456789" not in text and "S3cr3t-pw" not in text
    assert "‹redacted: " in text and "api.example.com" in text
