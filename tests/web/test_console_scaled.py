"""Scaled out (PostgreSQL, Redis): an answer given in the console of the gateway process goes through the chat's
partition stream and is resolved and resumed by the worker that handles the chat, not by the gateway."""

from __future__ import annotations

import re

from agents.models.scripted import ScriptedModel, call
from agents.tools.base import Tool, tool
from bot.gateway.app import Gateway
from channels.telegram import TelegramChannel
from tests.fakes.servers import PostgresServer, RedisServer
from tests.helpers.telegram import ALICE
from tests.web.harness import Browserless, WebEnv


def wrong_place(ran: list[str]) -> list[Tool]:
    @tool(risk="medium", confirm=True)
    async def delete_cache(path: str, keep_days: int = 0) -> str:
        """Delete a build cache directory."""
        ran.append(f"in the gateway: {path}")
        return "not here"

    return [delete_cache]


async def test_a_console_answer_is_resumed_by_the_worker(
    env: WebEnv, postgres: PostgresServer, redis: RedisServer
) -> None:
    redis.flush()
    base = env.configure_web()
    settings = base.model_copy(
        update={
            "store": base.store.model_copy(update={"url": postgres.url(postgres.create_database())}),
            "bus": base.bus.model_copy(update={"url": redis.url(), "partitions": 4, "lease_ms": 1500}),
        }
    )
    gateway = Gateway(
        settings,
        model=ScriptedModel([]),
        channels=[TelegramChannel(settings.channels.telegram)],
        tools=wrong_place(env.runs),
        role="gateway",
    )
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}), "Deleted /tmp/build."])
    worker = Gateway(settings, model=model, tools=env.tools(), role="worker")
    await worker.start()
    env.running.append(worker)
    await gateway.start()
    env.running.append(gateway)

    env.fake.push(env.fake.message("@react delete the build cache"))
    await env.prompt()
    web = Browserless(gateway)
    try:
        await web.login()
        [row] = await gateway.runs.all_pending()
        status, text, _r = await web.post(f"/web/inbox/{row.id}", {"nonce": row.nonce, "choice": "a"})
        assert status == 303, text
        await env.reply("Deleted /tmp/build.")
        # The read side on PostgreSQL: the search (LIKE … ESCAPE), the conversation, the run's timeline.
        await worker.tracing.flush()
        status, text, _r = await web.get("/web/chats?q=build+cache")
        assert status == 200 and f"telegram:{ALICE}" in text
        assert "No chat matches" in (await web.get("/web/chats?q=100%25_"))[1]
        status, text, _r = await web.get(f"/web/chats/telegram:{ALICE}")
        assert status == 200 and "Deleted /tmp/build." in text
        run_id = re.search(r'/web/runs/([A-Za-z0-9]+)"', text)
        assert run_id is not None
        status, text, _r = await web.get(f"/web/runs/{run_id.group(1)}")
        assert status == 200 and 'data-type="tool_call"' in text
    finally:
        await web.close()
    assert env.runs == ["/tmp/build"]  # the worker's tool; the gateway's was never called
    assert any("Approved by alice (web)" in t for t in env.edited_texts())
    model.assert_complete()
