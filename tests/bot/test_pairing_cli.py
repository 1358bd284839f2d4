"""The first admin: ``bot pair list|approve|revoke`` on the command line, against the database a running gateway
uses (its stranger's code approved from the shell, ``--admin`` making the first admin, audited as ``cli:<user>``),
and admin ids checked per platform (``bot init --admin``, the ``admins`` key)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel
from bot.cli.main import app
from bot.cli.pair import cli_actor
from bot.clock import FakeClock
from bot.jobs.service import POLL_S
from bot.pairing import BELIEVED_S
from tests.waiting import eventually

CODE = re.compile(r"\b([A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4})\b")


def echo(request: ModelRequest) -> str:
    return "echo: " + (request.messages[-1].text or "")


async def bot(config: Path, *args: str) -> Any:
    """``bot ARGS -c CONFIG`` through the real CLI, on a thread (it runs its own event loop)."""
    return await asyncio.to_thread(CliRunner().invoke, app, [*args, "-c", str(config)])


async def test_the_operator_approves_the_first_admin_from_the_shell_while_the_bot_runs(
    make_harness: Any, tmp_path: Path
) -> None:
    clock = FakeClock()
    h = await make_harness(
        ScriptedModel([echo, echo]),
        allow=["u1"],
        admins=[],  # set up without an admin: nobody could answer /pair
        clock=clock,
        channels={"console": {"unknown_senders": "pair"}},
        pairing={"code_minutes": 60},
        limits={"unknown_sender_reply_s": 0},
    )
    config = tmp_path / "bot.yaml"
    config.write_text(yaml.safe_dump({"store": {"data_dir": str(h.gateway.settings.store.data_dir)}}))
    stranger = h.chat("dm-u9")

    told = await h.say("hello?", user="u9", chat=stranger)
    code = CODE.search(told[0]).group(1)  # type: ignore[union-attr]
    assert f"`bot pair approve {code} --admin`" in told[0], "with no admin, the operator is told how"

    listed = await bot(config, "pair", "list")
    assert listed.exit_code == 0, listed.output
    assert "  console:" in listed.output and f"{code}  user u9 (u9), asked 0 min ago, 60 min left" in listed.output

    approved = await bot(config, "pair", "approve", code.lower(), "--admin")
    assert approved.exit_code == 0, approved.output
    assert approved.output.startswith("✅ Paired console user u9 (u9) as an admin: they can talk to the bot now.")
    entry = (await h.gateway.runs.audit_log(1))[0]
    assert (entry["actor"], entry["scope"], entry["name"], entry["new"]) == (
        cli_actor(), "pairing", "pair_admin", "console:u9"
    )  # fmt: skip

    # The running gateway tells them, once (its job timer finds the notice within POLL_S) ...
    await clock.advance(POLL_S + 1)
    told_in = await eventually(lambda: [t for t in h.channel.texts(stranger) if t.startswith("✅ An admin let you in")])
    assert told_in == ["✅ An admin let you in: you can talk to me now. Send /help to see what I can do."]
    assert await h.gateway.jobs.tick() == 0, "sent once"
    # ... and lets them in at their next message, as an admin (no restart, no file edited).
    assert await h.say("now?", user="u9", chat=stranger) == ["echo: now?"]
    listing = await h.say("/pair", user="u9", chat=stranger)
    assert "console:u9 (u9), an admin" in listing[0], listing
    assert (await bot(config, "pair", "approve", code)).exit_code == 1, "a code is used up"

    # Another stranger now hears of an admin, not of the command line.
    other = await h.say("hi", user="u7", chat=h.chat("dm-u7"))
    assert "bot pair approve" not in other[0]

    revoked = await bot(config, "pair", "revoke", "console:u9")
    assert revoked.exit_code == 0 and revoked.output.startswith("Revoked console:u9"), revoked.output
    assert (await h.gateway.runs.audit_log(1))[0]["name"] == "unpair"
    await clock.advance(BELIEVED_S + 1)  # the gateway asks the store again
    again = await h.say("still here?", user="u9", chat=stranger)
    assert len(again) == 1 and CODE.search(again[0]), "a stranger again"
    missing = await bot(config, "pair", "revoke", "console:u9")
    assert missing.exit_code == 1 and "was not paired" in missing.output
    bad = await bot(config, "pair", "revoke", "u9")
    assert bad.exit_code == 2 and "give CHANNEL:ID" in bad.output and "'u9'" in bad.output


def test_pair_list_without_a_database_says_so(tmp_path: Path) -> None:
    config = tmp_path / "bot.yaml"
    config.write_text(yaml.safe_dump({"store": {"data_dir": str(tmp_path / "data")}}))
    result = CliRunner().invoke(app, ["pair", "list", "-c", str(config)])
    assert result.exit_code == 1 and "no database yet" in result.output
    assert not (tmp_path / "data" / "bot.db").exists(), "nothing created"


def test_admin_ids_are_checked_per_platform(tmp_path: Path) -> None:
    runner = CliRunner()
    for given, said in [
        ("telegram:@myname", ["'@myname' is a @name, not a user id", "/whoami"]),
        ("discord:42", ["'42' is not a Discord user id", "17 to 20 digits", "Developer Mode", "Copy User ID"]),
        ("slack:u0123abcd", ["'u0123abcd' is not a Slack user id", "Copy member ID"]),
    ]:
        channel = given.split(":")[0]
        result = runner.invoke(app, ["init", "--yes", "--dir", str(tmp_path), "--channels", channel, "--admin", given])
        assert result.exit_code == 2, result.output
        assert all(s in result.output for s in said), result.output
        assert not (tmp_path / "config").exists(), "nothing written"

    init = ["init", "--yes", "--force", "--dir", str(tmp_path), "--channels", "telegram"]
    none = runner.invoke(app, init)
    assert none.exit_code == 0, none.output
    assert "telegram has no admin yet" in none.output and "bot pair approve CODE --admin" in none.output
    one = runner.invoke(app, [*init, "--admin", "telegram:123456789"])
    assert one.exit_code == 0 and "no admin" not in one.output, one.output

    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"channels": {"telegram": {"admins": ["@me"]}}}))
    shown = runner.invoke(app, ["config", "show", "-c", str(config)])
    assert shown.exit_code == 2
    assert f"project file {config}: channels.telegram.admins: '@me' is a @name" in shown.output


async def test_run_names_each_platform_channel_without_an_admin_until_one_is_approved(
    make_harness: Any, tmp_path: Path
) -> None:
    from bot.access import AccessPolicy
    from bot.cli.pair import NO_ADMIN
    from bot.config.settings import load_settings

    h = await make_harness(ScriptedModel([]), admins=[])
    channels = {"telegram": {"enabled": True, "allow_from": ["111"]}, "slack": {"enabled": True, "admins": ["U0123AB"]}}
    settings = load_settings(
        None, env={}, user_config=tmp_path / "none.yaml", overrides={"channels": channels}, require_secrets=False
    )
    access = AccessPolicy(settings.channels, settings.web, h.gateway.pairing)
    assert await access.without_admin() == ["telegram"], "the console needs none; slack has one"
    warning = NO_ADMIN % ("telegram", "telegram")
    assert "bot pair approve CODE --admin" in warning and "channels.telegram.admins" in warning

    code = await h.gateway.pairing.store.issue("telegram", "222", "Ann", "telegram:222", 60, 10)
    assert code is not None
    config = tmp_path / "bot.yaml"
    config.write_text(yaml.safe_dump({"store": {"data_dir": str(h.gateway.settings.store.data_dir)}}))
    assert (await bot(config, "pair", "approve", code.code, "--admin")).exit_code == 0
    assert await access.without_admin() == [], "an admin let in by pairing counts"
    assert not access.is_admin("telegram", "222"), "not read yet by this process"
    assert await access.allows("telegram", "222") and access.is_admin("telegram", "222")
