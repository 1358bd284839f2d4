"""A slash command whose text says ``payload`` is still the command: bolt reads any form body with ``payload`` in
it as an interaction (and, finding no ``payload`` field, as nothing at all), so the gate hands bolt the form's fields
as they are.  Through the real slack-bolt app of a real gateway, as Slack posts a slash command."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.slack_server import FakeSlack
from tests.helpers import slack

fake, make_slack = slack.fake, slack.make_slack
"""Fixtures of tests/helpers/slack.py, used by name below."""


def command(text: str, trigger: str) -> dict[str, str]:
    return {
        "token": "legacy",
        "team_id": "T1",
        "channel_id": "C1",
        "channel_name": "general",
        "user_id": "U1",
        "user_name": "ann",
        "command": "/bot",
        "text": text,
        "trigger_id": trigger,
        "api_app_id": "A1",
    }


async def test_a_slash_command_about_a_payload_is_a_command(make_slack: Any, fake: FakeSlack) -> None:
    fake.names["U1"] = "Ann"
    h = await make_slack()
    for n, text in enumerate(["whoami payload", "whoami payload=1", 'whoami {"payload": 1}']):
        status, body = await h.form(command(text, f"trigger-payload-{n}"))
        assert status == 200 and json.loads(body) == {"response_type": "in_channel"}, (text, status, body)
        await fake.wait_for(lambda n=n: len(fake.posts()) == n + 1)
    await h.settle()
    assert [p["text"] for p in fake.posts()] == ["You are U1 (ann), user, in chat slack:C1."] * 3
