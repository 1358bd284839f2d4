"""The platform libraries' own reconnect loops (slack-sdk's Socket Mode client, discord.py's gateway) are told
once per change with a count, like ours, not at every try: the lines are the libraries' own, logged on their
own loggers, and the texts recognised are checked against the installed versions."""

from __future__ import annotations

import inspect
import logging

import discord.client
import discord.gateway
import pytest
import slack_sdk.socket_mode.aiohttp as socket_mode

from channels.discord import adapter as discord_adapter
from channels.retry_logs import RetryLogs
from channels.slack import adapter as slack_adapter
from channels.slack.adapter import _bolt_logger


def refused() -> ConnectionRefusedError:
    return ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")


def test_the_texts_recognised_are_the_installed_libraries_own() -> None:
    slack = inspect.getsource(socket_mode)
    assert "Failed to connect (error:" in slack and "Failed to check the current session" in slack
    assert "A new session (" in slack
    assert "'Attempting a reconnect in %.2fs'" in inspect.getsource(discord.client)
    gateway = inspect.getsource(discord.gateway)
    assert "has connected to Gateway" in gateway and "RESUMED session" in gateway


def test_discord_reconnect_tries_are_one_warning_and_a_count(caplog: pytest.LogCaptureFixture) -> None:
    installed = discord_adapter.quiet_retries(
        ("discord.client", "discord.gateway"),
        discord_adapter.log,
        "discord: the gateway connection failed",
        failing=("Attempting a reconnect in",),
        working=("has connected to Gateway", "RESUMED session"),
        every_s=1024,
    )  # fmt: skip — as DiscordChannel.start installs it
    installed.outage.recovered()  # whatever an earlier test left
    caplog.set_level(logging.INFO)
    caplog.clear()
    library = logging.getLogger("discord.client")
    for delay in (1.2, 3.9, 8.1, 15.0):
        try:
            raise OSError("Cannot connect to host gateway.discord.gg:443") from refused()
        except OSError:
            library.exception("Attempting a reconnect in %.2fs", delay)
    logging.getLogger("discord.gateway").info("Shard ID %s has successfully RESUMED session %s.", None, "abc")
    ours = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
    assert ours == [
        ("channels.discord.adapter", "WARNING",
         "discord: the gateway connection failed (connection refused); retrying every ≤1024 s, quiet until it changes"),
        ("channels.discord.adapter", "WARNING", "discord: connected again after 4 failed tries"),
    ]  # fmt: skip
    assert not any(r.exc_info for r in caplog.records), "no traceback per try"


def test_slack_socket_mode_tries_are_one_warning_per_kind_without_the_ticket(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    logger = _bolt_logger()  # the Socket Mode client logs on bolt's logger
    for found in logger.filters:
        if isinstance(found, RetryLogs):
            found.outage.recovered()  # whatever an earlier test left
    caplog.clear()
    url = "wss://wss-primary.slack.com/link/?ticket=0f1e2d3c-secret-ticket&app_id=A1"
    for _ in range(3):
        logger.error(f"Failed to check the current session (s1) or reconnect to the server (error: {url})")
    try:
        raise TimeoutError()
    except TimeoutError as e:
        logger.exception(f"Failed to connect (error: {e}); Retrying...")
    logger.info("A new session (s2) has been established")
    ours = [r.getMessage() for r in caplog.records if r.name == slack_adapter.log.name]
    assert len(ours) == 3, ours  # the first failure, the new kind (a timeout), the count
    assert ours[0].startswith("slack: the Socket Mode connection failed (ConnectionError: Failed to check")
    assert "ticket" not in "\n".join(ours) and "?…" in ours[0]
    assert ours[1].startswith("slack: the Socket Mode connection failed (timed out)")
    assert ours[2] == "slack: connected again after 4 failed tries"
    assert "A new session (s2) has been established" in caplog.text  # the library's own line stays
