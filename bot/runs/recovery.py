"""Start-up recovery: nothing accepted is lost, nothing committed stays unsent.

Run before the channels start receiving:
1. outbox entries committed but not sent are sent (a prompt's reference is
   stored so it can still be edited);
2. runs left ``running`` or ``paused`` by a crash are resumed from their
   checkpoint with the resolution already recorded (the tool ledger keeps any
   call from running twice), re-run when they cannot have had side effects
   (Chat), or reported to the user;
3. pending interrupts are scheduled to expire; those that expired while the
   gateway was down expire now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agents.results import Resolution
from bot.events import OutboundMessage
from bot.fencing import NO_FENCES, Fences, LeaseLost, fenced
from bot.ids import new_id
from bot.interrupts.service import DENIED_EXPIRED, InterruptService
from bot.runs.manager import RunManager
from bot.store.runs import RunRow, RunStore

log = logging.getLogger(__name__)

LOST = "⚠️ I was restarted while working on your request and could not finish it. Please send it again."


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
    runs: RunStore,
    manager: RunManager,
    interrupts: InterruptService,
    owns: Callable[[str], bool] | None = None,
    fences: Fences = NO_FENCES,
) -> RecoveryReport:
    """Recover everything (one process), or only the chats ``owns`` selects (the partitions a worker just took).

    Each chat's part runs fenced by its partition (``fences``): a partition lost meanwhile refuses its writes and
    sends, and its next owner recovers it instead.
    """
    report = RecoveryReport()
    mine = owns or (lambda _chat_key: True)
    for entry in await runs.unsent():
        if not mine(entry.chat_key):
            continue
        outbound = OutboundMessage.model_validate_json(entry.message)
        with fenced(fences.fence_for(entry.chat_key)):
            try:
                await manager.delivery.deliver(entry.id, outbound, entry.interrupt_id)
            except LeaseLost:
                continue
        report.resent += 1
    for run in await runs.runs_with_status("running", "paused"):
        if not mine(run.chat_key):
            continue
        with fenced(fences.fence_for(run.chat_key)):
            try:
                await _recover_run(run, runs, manager, report)
            except LeaseLost:
                log.info("recovery: run %s of %s is left to the partition's next owner", run.id, run.chat_key)
            except Exception:
                # One broken run must not keep the gateway from starting: it ends as failed, and its chat is told.
                log.exception("recovery: run %s of %s could not be recovered", run.id, run.chat_key)
                notice = OutboundMessage(chat=run.chat, text=LOST, kind="notice")
                try:
                    await manager.finish(run, "failed", [], notice)
                except LeaseLost:
                    continue
                report.reported.append(run.id)
    report.expired = await interrupts.reconcile(owns=mine)
    return report


async def _recover_run(run: RunRow, runs: RunStore, manager: RunManager, report: RecoveryReport) -> None:
    latest = await runs.latest_interrupt(run.id)
    if latest is not None and latest.status == "pending":
        return  # waiting for a human; expiry is reconciled afterwards
    if run.checkpoint is not None and latest is not None:
        stored = latest.resolution
        resolution = Resolution.model_validate(stored) if stored else Resolution(reason=DENIED_EXPIRED)
        log.info("recovery: resuming run %s of %s", run.id, run.chat_key)
        await manager.resume(run, resolution)
        report.resumed.append(run.id)
        return
    agent = manager.catalog.get(run.agent)
    message = await runs.message(run.history_cutoff) if run.history_cutoff else None
    if agent is not None and agent.runs_as.replays_on_recovery and message is not None:
        # A Chat run has no side effects: answering again is safe.
        await runs.set_run(run.id, status="superseded")
        log.info("recovery: re-running chat run %s of %s", run.id, run.chat_key)
        await manager.start(replace(run, id=new_id(16), status="running"), agent, message)
        report.rerun.append(run.id)
        return
    log.warning("recovery: run %s of %s was interrupted; telling the user", run.id, run.chat_key)
    notice = OutboundMessage(chat=run.chat, text=LOST, kind="notice")
    await manager.finish(run, "failed", [], notice)
    report.reported.append(run.id)
