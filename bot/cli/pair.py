"""``bot pair``: pairing from the command line: who waits with a code, who was let in, approve a code (``--admin``:
the first admin of a bot set up without one), let someone out again.

It goes through the store the bot uses (SQLite or PostgreSQL, ``store:``), so it works beside a running bot: the
person approved is let in at their next message (a scaled-out worker reads the store about a sender it does not
know; every process reads it again within :data:`bot.pairing.BELIEVED_S`).  Each change is in the audit log with
the actor ``cli:<the operating-system user>``, as ``/pair`` writes the admin's id.
"""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from bot.cli.settings import ConfigOpt, cli_settings
from bot.config.settings import Settings

if TYPE_CHECKING:
    from bot.access import AccessPolicy
    from bot.events import OutboundMessage
    from bot.pairing import Pairing

T = TypeVar("T")

NO_ADMIN = (
    "channel %s has no admin: nobody can let a colleague in from a chat (their pairing code waits for an admin) "
    "or use the admin commands. Fix: `bot pair list`, then `bot pair approve CODE --admin` (works while the bot "
    "runs), or set channels.%s.admins"
)
"""The warning ``bot run`` logs at start for each enabled platform channel without an admin (channel twice)."""

pair_app = typer.Typer(
    help="Pairing from the command line: who waits with a code, approve one (--admin: the first admin), revoke.",
    add_completion=False,
    no_args_is_help=True,
)


def cli_actor() -> str:
    """Who the audit log names for a change made here: ``cli:<the operating-system user>``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        user = "operator"
    return f"cli:{user}"


async def _with_pairing(settings: Settings, act: Callable[[Pairing, AccessPolicy], Awaitable[T]]) -> T | None:
    """``act(pairing, access)`` on the configured store (None, with the reason printed, when it cannot be opened)."""
    from bot.access import AccessPolicy
    from bot.pairing import Pairing
    from bot.store.base import StoreError
    from bot.store.sql import store_from_settings
    from bot.store.sql.repos.pairing import PairingStore
    from bot.store.sql.repos.runs import RunStore

    url = settings.store.database_url()
    if url.startswith("sqlite") and not Path(url.split(":///", 1)[1]).is_file():
        typer.echo(
            f"no database yet at {url.split(':///', 1)[1]}: nobody has written to the bot "
            "(start it with `bot run`; a stranger who writes to it gets a code)",
            err=True,
        )
        return None
    store = store_from_settings(settings.store, secrets=settings.secrets())
    try:
        await store.start()
    except StoreError as exc:
        typer.echo(f"cannot open the database: {exc}", err=True)
        return None
    try:
        pairing = Pairing(settings.pairing, PairingStore(store), RunStore(store), store.clock)
        access = AccessPolicy(settings.channels, settings.web, pairing)
        return await act(pairing, access)
    finally:
        await store.close()


def _ago(then: datetime, now: datetime) -> str:
    minutes = max(0, round((now - then).total_seconds() / 60))
    return f"{minutes} min ago" if minutes < 120 else f"{minutes / 60:.0f} h ago"


@pair_app.command("list")
def list_command(config: ConfigOpt = None) -> None:
    """The codes waiting for an approval (per channel, with the sender and its age) and who was let in."""
    settings = cli_settings(config, secrets=False)

    async def act(pairing: Pairing, access: AccessPolicy) -> list[str]:
        from bot.store.values import shown_code

        now = pairing.clock.utcnow()
        waiting, paired = await pairing.store.waiting(), await pairing.store.paired()
        lines = []
        if waiting:
            lines.append("Waiting to be let in (bot pair approve CODE, --admin to make them an admin):")
            for channel in sorted({c.channel for c in waiting}):
                lines.append(f"  {channel}:")
                for code in (c for c in waiting if c.channel == channel):
                    who = f" ({code.user_name})" if code.user_name else ""
                    left = max(0, round((code.expires_at - now).total_seconds() / 60))
                    lines.append(
                        f"    {shown_code(code.code)}  user {code.user_id}{who}, asked {_ago(code.created_at, now)}"
                        f", {left} min left"
                    )
        else:
            lines.append("Nobody is waiting to be let in (a stranger who writes to the bot directly gets a code).")
        if paired:
            lines.append("Let in by pairing (bot pair revoke CHANNEL:ID lets one out):")
            for p in paired:
                who = f" ({p.user_name})" if p.user_name else ""
                admin = ", an admin" if p.is_admin else ""
                lines.append(f"  {p.account}{who}{admin}, by {p.approved_by} on {p.approved_at:%Y-%m-%d %H:%M} UTC")
        for name in await access.without_admin():
            lines.append(
                f"⚠ {name} has no admin yet: `bot pair approve CODE --admin` makes the person with that code one "
                f"(or set channels.{name}.admins)"
            )
        return lines

    lines = asyncio.run(_with_pairing(settings, act))
    if lines is None:
        raise typer.Exit(1)
    typer.echo("\n".join(lines))


@pair_app.command("approve")
def approve_command(
    code: Annotated[
        str, typer.Argument(help="The code the person was given, e.g. K7QM-3XPA (case and dash optional).")
    ],
    admin: Annotated[bool, typer.Option("--admin", help="Make them an admin of their channel too.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Let in the person a code was given to (works beside a running bot; audited as cli:<you>)."""
    settings = cli_settings(config, secrets=False)

    async def act(pairing: Pairing, _access: AccessPolicy) -> tuple[bool, str]:
        approval = await pairing.approve(code, cli_actor(), admin=admin)
        if approval.tell is not None:
            await _tell(pairing, approval.tell)
        return approval.tell is not None, approval.reply

    done = asyncio.run(_with_pairing(settings, act))
    if done is None:
        raise typer.Exit(1)
    approved, reply = done
    if not approved:
        typer.echo(reply.replace("/pair lists them", "bot pair list lists them"), err=True)
        raise typer.Exit(1)
    typer.echo(reply.replace("they can talk to me now", "they can talk to the bot now").split(" (/unpair ")[0] + ".")
    typer.echo(
        "They are told in their chat by the running bot (within 30 s; at its next start if it is not running), and "
        "their next message is answered. `bot pair revoke CHANNEL:ID` lets them out again."
    )


async def _tell(pairing: Pairing, message: OutboundMessage) -> None:
    """Tell the person let in, through the running bot: a one-time notice job in their chat, due now. Every bot
    process looks for due jobs at least every :data:`bot.jobs.service.POLL_S` and one of them claims it, so it is
    sent once, whichever runs; a bot that is down sends it at its next start (within ``jobs.grace_s``)."""
    from bot.jobs.triggers import Trigger
    from bot.store.sql.repos.jobs import JobStore
    from bot.store.sql.repos.pairing import PairingStore
    from bot.store.sql.store import SqlStore

    held = pairing.store
    assert isinstance(held, PairingStore), "built on the SQL store by _with_pairing"
    assert isinstance(held.store, SqlStore), "the chat store: the job's inbox row is written there"
    now = pairing.clock.utcnow().replace(tzinfo=UTC)
    jobs = JobStore(held.store, Trigger)
    await jobs.add(
        chat_key=str(message.chat), owner=cli_actor(), name="let in", trigger=Trigger.once(now.isoformat(), "UTC"),
        action="notice", text=message.text, agent=None, first=now, max_per_chat=1_000_000, max_per_user=1_000_000,
    )  # fmt: skip


@pair_app.command("revoke")
def revoke_command(
    account: Annotated[str, typer.Argument(help="CHANNEL:ID, e.g. telegram:123456789 (bot pair list shows them).")],
    config: ConfigOpt = None,
) -> None:
    """Let someone let in by pairing out again (audited as cli:<you>)."""
    channel, _, user = account.partition(":")
    if not channel or not user:
        typer.echo(
            f"error: give CHANNEL:ID, e.g. telegram:123456789 (got {account!r}); bot pair list shows them", err=True
        )
        raise typer.Exit(2)
    settings = cli_settings(config, secrets=False)

    async def act(pairing: Pairing, _access: AccessPolicy) -> bool:
        return await pairing.revoke(account, cli_actor())

    revoked = asyncio.run(_with_pairing(settings, act))
    if revoked is None:
        raise typer.Exit(1)
    if revoked:
        typer.echo(f"Revoked {account}: a stranger to the bot again (a running bot stops answering them within 30 s).")
        return
    section = getattr(settings.channels, channel, None)
    if section is not None and (user in section.allow_from or user in section.admins):
        typer.echo(f"{account} was not let in by pairing: it is in channels.{channel}.allow_from or admins.", err=True)
    else:
        typer.echo(f"{account} was not paired; `bot pair list` shows who was.", err=True)
    raise typer.Exit(1)


async def paired_admin_channels(settings: Settings) -> set[str]:
    """The channels with an admin let in by ``bot pair approve CODE --admin`` (read-only; none when the database
    does not exist or cannot be read): what ``bot doctor`` counts beside ``admins``."""
    from bot.store.sql import store_from_settings
    from bot.store.sql.repos.pairing import PairingStore

    url = settings.store.database_url()
    if url.startswith("sqlite") and not Path(url.split(":///", 1)[1]).is_file():
        return set()
    store = store_from_settings(settings.store, read_only=True)
    try:
        await store.start()
        try:
            return await PairingStore(store).admin_channels()
        finally:
            await store.close()
    except Exception:  # an older schema, no server: doctor's database line says what is wrong
        return set()
