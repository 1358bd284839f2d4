"""Start-up recovery: nothing accepted is lost, nothing committed stays unsent.

Run before the channels start receiving:
1. outbox entries committed but not sent are sent (a prompt's reference is
   stored so it can still be edited);
2. runs left ``running`` or ``paused`` by a crash are resumed from their
   checkpoint with the resolution already recorded (the tool ledger keeps any
   call from running twice); runs cut off before a pause are re-run from their
   message (a call they finished gives its recorded result, it does not run
   again), unless a call with side effects was cut off mid-way: its outcome is
   unknown, so the person is told which call, with its arguments;
3. pending interrupts are scheduled to expire; those that expired while the
   gateway was down expire now.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from agents.messages import ToolCall
from agents.react import describe_call
from agents.resolutions import resolution_for
from bot.events import OutboundMessage
from bot.fencing import NO_FENCES, Fences, LeaseLost, fenced
from bot.ids import new_id
from bot.interrupts.service import DENIED_EXPIRED, InterruptService
from bot.runs.manager import RunManager
from bot.store.ports import Runs
from bot.store.rows import OutboxRow, RunRow

log = logging.getLogger(__name__)

LOST = "⚠️ I was restarted while working on your request and could not finish it. Please send it again."
CUT_OFF = (
    "⚠️ I was restarted while {call} was running, so I do not know whether it took effect, and I did not run it "
    "again. Check, and ask me again if it is still needed."
)

ChatWork = Callable[[], Awaitable[None]]
"""What one chat needs finished after a crash: its unsent replies sent, its runs that were cut off finished."""


@dataclass
class RecoveryReport:
    resent: int = 0
    resumed: list[str] = field(default_factory=list)
    rerun: list[str] = field(default_factory=list)
    reported: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    late_scheduled: int = 0
    inbox: int = 0
    """Inbound events committed before the restart and not handled: handed to the supervisor now."""


async def recover(
    runs: Runs,
    manager: RunManager,
    interrupts: InterruptService,
    owns: Callable[[str], bool] | None = None,
    fences: Fences = NO_FENCES,
    concurrency: int = 32,
) -> RecoveryReport:
    """Recover everything (one process), or only the chats ``owns`` selects: chats side by side, each in order.

    Each chat's part runs fenced by its partition (``fences``): a partition lost meanwhile refuses its writes and
    sends, and its next owner recovers it instead.
    """
    report = RecoveryReport()
    work = await recovery_work(runs, manager, report, owns)
    limit = asyncio.Semaphore(concurrency)

    async def chat(chat_key: str, job: ChatWork) -> None:
        async with limit:
            with fenced(fences.fence_for(chat_key)):
                try:
                    await job()
                except LeaseLost:
                    log.info("recovery: %s is left to its partition's next owner", chat_key)

    await asyncio.gather(*(chat(k, job) for k, job in work.items()))
    report.expired = await interrupts.reconcile(owns=owns)
    return report


async def recovery_work(
    runs: Runs, manager: RunManager, report: RecoveryReport, owns: Callable[[str], bool] | None = None
) -> dict[str, ChatWork]:
    """Per chat (of those ``owns`` selects): what a crash left unfinished there, to be run in the chat's order
    (a worker runs it as the first work of the chat's lane, beside the partition's new messages)."""
    mine = owns or (lambda _chat_key: True)
    unsent: dict[str, list[OutboxRow]] = {}
    cut: dict[str, list[RunRow]] = {}
    for entry in await runs.unsent():
        if mine(entry.chat_key):
            unsent.setdefault(entry.chat_key, []).append(entry)
    for run in await runs.runs_with_status("running", "paused"):
        if mine(run.chat_key):
            cut.setdefault(run.chat_key, []).append(run)

    def job(chat_key: str) -> ChatWork:
        return lambda: _recover_chat(unsent.get(chat_key, []), cut.get(chat_key, []), runs, manager, report)

    return {chat_key: job(chat_key) for chat_key in unsent.keys() | cut.keys()}


async def _recover_chat(
    unsent: list[OutboxRow], cut: list[RunRow], runs: Runs, manager: RunManager, report: RecoveryReport
) -> None:
    """Send the chat's committed replies in order, then finish its runs (:class:`LeaseLost` goes through)."""
    for entry in unsent:
        outbound = OutboundMessage.model_validate_json(entry.message)
        await manager.delivery.deliver(entry.id, outbound, entry.interrupt_id, again=True)
        report.resent += 1
    for run in cut:
        try:
            await _recover_run(run, runs, manager, report)
        except LeaseLost:
            raise
        except Exception:
            # One broken run must not keep the others from recovering: it ends as failed, and its chat is told.
            log.exception("recovery: run %s of %s could not be recovered", run.id, run.chat_key)
            await manager.finish(run, "failed", [], OutboundMessage(chat=run.chat, text=LOST, kind="notice"))
            report.reported.append(run.id)


async def _recover_run(run: RunRow, runs: Runs, manager: RunManager, report: RecoveryReport) -> None:
    latest = await runs.latest_interrupt(run.id)
    if latest is not None and latest.status == "pending":
        return  # waiting for a human; expiry is reconciled afterwards
    if run.checkpoint is not None and latest is not None:
        # Rows written before the per-kind resolutions hold the same keys: read by the interrupt's kind.
        resolution = resolution_for(latest.kind, latest.resolution, unanswered=DENIED_EXPIRED)
        log.info("recovery: resuming run %s of %s", run.id, run.chat_key)
        await manager.resume(run, resolution)
        report.resumed.append(run.id)
        return
    # Cut off before it paused: what did it start?  A call with side effects that started and never finished
    # may have taken effect: that is the one thing not to guess about.  Anything else is run again, and the calls
    # it finished give their recorded results instead of running twice.
    ledger = await runs.ledger_entries(run.id)
    unknown = [e for e in ledger if e.status == "started"]
    agent = manager.catalog.get(run.agent)
    message = await runs.message(run.history_cutoff) if run.history_cutoff else None
    if not unknown and agent is not None and message is not None:
        await runs.set_run(run.id, status="superseded")
        log.info("recovery: re-running run %s of %s (%d tool calls done)", run.id, run.chat_key, len(ledger))
        await manager.start(replace(run, id=new_id(16), status="running"), agent, message, rerun=ledger)
        report.rerun.append(run.id)
        return
    if unknown:
        call = describe_call(ToolCall(id=unknown[0].call_id, name=unknown[0].name, args=unknown[0].args or {}))
        text = CUT_OFF.format(call=call)
    else:
        text = LOST
    log.warning("recovery: run %s of %s was interrupted; telling the user", run.id, run.chat_key)
    await manager.finish(run, "failed", [], OutboundMessage(chat=run.chat, text=text, kind="notice"))
    report.reported.append(run.id)
