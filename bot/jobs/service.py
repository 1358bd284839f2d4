"""Recurring jobs: create them (``schedule_job``, checked against the limits), fire them exactly once, follow
the agent runs they start, retry a failed one, and say what happened in the job's chat.

A fire is one transaction: the job's ``next_fire_at`` moves on under a guard (the claim), the fire is
recorded, and its action is enqueued with it: a fixed message as an outbox row, a prompt as an inbox event
from the job's owner (``@agent prompt``), handled like any message they sent, so its confirmations are asked in
the chat and wait like any other pause, budgets apply to them, and a crash anywhere after the commit is
recovered by the outbox and the inbox. Two processes that see a fire due race for the claim; one wins.

Fires missed while the bot was down: the most recent one runs at start when it is at most ``jobs.grace_s``
late; it and any older ones are otherwise recorded as missed and the chat is told once, with how many there were
and when the last was (found directly, not by stepping through them: a year's downtime costs no more than a day's).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from bot.aio import cancel_and_wait
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.jobs import JobsSection
from bot.events import ChatKey, InboundMessage, OutboundMessage, Sender, event_key
from bot.jobs.triggers import Trigger, TriggerError, zone
from bot.redaction import redact_text
from bot.store.ports import Change, JobRepo
from bot.store.values import Job as StoredJob
from bot.store.values import JobLimit

log = logging.getLogger(__name__)

Job = StoredJob[Trigger]

POLL_S = 30.0
"""The longest the timer sleeps: jobs other processes add, and run outcomes, are seen within it."""
SETTLED = ("done", "handled")


class JobError(ValueError):
    """A job that cannot be made (a limit, a bad trigger): the message is for the person or the model."""


class JobService:
    def __init__(
        self,
        config: JobsSection,
        jobs: JobRepo[Trigger],
        *,
        deliver: Callable[[int, OutboundMessage], Awaitable[object]],
        publish: Callable[[InboundMessage], Awaitable[None]],
        zone_of: Callable[[ChatKey], Awaitable[str]],
        clock: Clock = SYSTEM_CLOCK,
        counted: Callable[[str], None] | None = None,
    ) -> None:
        """``deliver``: send a committed outbox row; ``publish``: hand a committed inbox event to the bus;
        ``zone_of``: a chat's time zone (``/timezone``, else ``jobs.timezone``); ``counted``: told the outcome of
        every fire this process makes (a metric)."""
        self.config = config
        self.jobs = jobs
        self.deliver = deliver
        self.publish = publish
        self.zone_of = zone_of
        self.clock = clock
        self._counted = counted
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def now(self) -> datetime:
        return self.clock.now()

    # -- making jobs -------------------------------------------------------------------------------

    async def create(
        self,
        chat: ChatKey,
        owner: str,
        *,
        name: str,
        action: str,
        text: str,
        agent: str | None = None,
        cron: str | None = None,
        every_minutes: float | None = None,
        at: str | None = None,
        timezone: str | None = None,
    ) -> Job:
        """A new job in ``chat`` made by ``owner`` (``channel:user_id``); :class:`JobError` says what is wrong. A
        secret in its text or name is stored, sent and run as ``‹redacted: kind›`` (:mod:`bot.redaction`): a job
        that needs a password cannot have one."""
        if not text.strip():
            raise JobError("the job needs a message or a prompt")
        if sum(x is not None for x in (cron, every_minutes, at)) != 1:
            raise JobError("give exactly one of cron (e.g. '0 8 * * 1-5': weekdays at 08:00), every_minutes or at")
        zone_name = timezone or await self.zone_of(chat)
        now = self.now()
        try:
            if cron is not None:
                trigger = Trigger.cron(cron, zone_name)
            elif every_minutes is not None:
                trigger = Trigger.every(every_minutes * 60, zone_name, now + timedelta(minutes=every_minutes))
            else:
                trigger = Trigger.once(at or "", zone_name)
        except TriggerError as exc:
            raise JobError(str(exc)) from None
        gap = trigger.shortest_gap(now)
        if gap is not None and gap < self.config.min_interval_s:
            raise JobError(
                f"{trigger.describe()} would fire every {gap / 60:g} min; the shortest interval allowed is "
                f"{self.config.min_interval_s / 60:g} min (jobs.min_interval_s)"
            )
        first = trigger.next_after(None, now)
        if first is None:
            when = "is in the past" if trigger.kind == "once" else "does not fire in the next 50 years"
            raise JobError(f"{trigger.describe()} {when}")
        try:
            job = await self.jobs.add(
                chat_key=str(chat),
                owner=owner,
                name=redact_text(name.strip()[:200]) or redact_text(text.strip())[:60],
                trigger=trigger,
                action="prompt" if action == "prompt" else "message",
                text=redact_text(text.strip()),
                agent=agent,
                first=first,
                max_per_chat=self.config.max_per_chat,
                max_per_user=self.config.max_per_user,
            )
        except JobLimit as exc:
            raise JobError(str(exc)) from None
        self.wake()
        return job

    def wake(self) -> None:
        """Look at the jobs again now (one was added or resumed)."""
        self._wake.set()

    def when(self, job: Job) -> str:
        """The job's next fire in its own time zone."""
        if job.next_fire_at is None:
            return "no further fire"
        local = job.next_fire_at.astimezone(zone(job.trigger.timezone))
        return f"{local:%a %Y-%m-%d %H:%M} ({job.trigger.timezone})"

    def upcoming(self, job: Job, count: int = 3) -> str:
        """The job's next ``count`` fires in its own time zone ("Fri 2026-11-27 08:00, Mon …
        (Europe/Berlin)")."""
        if job.next_fire_at is None:
            return "no further fire"
        local = zone(job.trigger.timezone)
        fires = [job.next_fire_at, *job.trigger.upcoming(job.next_fire_at + timedelta(microseconds=1), count - 1)]
        shown = ", ".join(f"{f.astimezone(local):%a %Y-%m-%d %H:%M}" for f in fires[:count])
        return f"{shown} ({job.trigger.timezone})"

    # -- the timer ---------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("jobs: a pass over the due jobs failed; trying again shortly")
            soonest = await self._soonest()
            wait = POLL_S if soonest is None else (soonest - self.now()).total_seconds()
            self._wake.clear()
            await self.clock.wait(self._wake, max(0.0, min(POLL_S, wait)))

    async def _soonest(self) -> datetime | None:
        try:
            return await self.jobs.soonest()
        except Exception:
            return None

    async def tick(self) -> int:
        """Fire everything due now, start due retries, follow started runs; the number of fires made."""
        now = self.now()
        made = 0
        for job in await self.jobs.due(now):
            made += await self.fire(job, now)
        for job_id, due, attempt in await self.jobs.due_retries(now):
            retried = await self.jobs.get(job_id)
            if retried is not None and retried.status in ("active", "done"):
                made += await self._retry(retried, due, attempt)
            else:  # paused or deleted since: no more tries
                await self.jobs.commit([self.jobs.drop_retry_step(job_id, due, attempt)])
        await self.follow()
        return made

    # -- a fire ------------------------------------------------------------------------------------

    async def fire(self, job: Job, now: datetime) -> int:
        """Claim ``job``'s due fire and run its action (or record it missed); 1 when this process fired it."""
        due = job.next_fire_at
        assert due is not None
        chat = ChatKey.parse(job.chat_key)
        trigger = job.trigger
        if trigger.problem is not None:
            return await self._unreadable(job, due, chat)
        first = self._first_due(job, due)
        latest = trigger.last_until(now)
        if first is None or latest is None or latest < first:
            # ``due`` was reckoned by an older reading of the schedule and stands for no fire: move on quietly.
            await self.jobs.commit([self.jobs.move_step(job.id, due, trigger.next_after(None, now))])
            self.wake()
            return 0
        # Down a while: every fire from the first due to the last one before now was missed but that last one,
        # which runs when it is within the grace. Counted a day at a time, however many there were.
        missed = trigger.count(first, latest)
        following = trigger.next_after(latest, now)
        late = (now - latest).total_seconds()
        if late > self.config.grace_s and job.action != "notice":  # a notice is told however late (pairing)
            text = (
                f"⏰ Job {job.id} ({job.name}) missed {_fires(missed)} while I was offline "
                f"(the last at {_local(latest, job)}); next: {_local(following, job) if following else 'none'}."
            )
            # Keyed by the fire (Discord's nonce): the notice sent again after a crash is not posted twice.
            note = OutboundMessage(chat=chat, text=text, kind="notice", key=f"job:{job.id}:missed:{_stamp(latest)}")
            steps = self.jobs.claim_steps(job, due, following, status="missed", detail=f"{missed} missed", fired=latest)
            return await self._commit(steps, note, outcome="missed")
        detail = f"{missed - 1} earlier fire(s) missed" if missed > 1 else None
        if job.action in ("message", "notice"):
            body = f"⏰ {job.text}" + ("\n(late: I was offline when this was due)" if late > 60 else "")
            notice = job.action == "notice"
            message = OutboundMessage(
                chat=chat,
                text=job.text if notice else body,
                key=f"job:{job.id}:{int(latest.timestamp())}",
                kind="notice" if notice else "text",
            )
            steps = self.jobs.claim_steps(job, due, following, status="done", detail=detail, fired=latest)
            return await self._commit(steps, message, outcome="sent")
        event = self._event(job, latest, 0)
        steps = self.jobs.claim_steps(
            job, due, following, status="started", event_key=event_key(event), detail=detail, fired=latest
        )
        return await self._commit(steps, None, event, outcome="started")

    def _first_due(self, job: Job, due: datetime) -> datetime | None:
        """The fire ``due`` (the job's stored next fire) stands for: itself; for a time stored by an older reading
        of the schedule, the real fire just before it (APScheduler put a skipped 02:30 at 03:30, where cron
        fires at 03:00) when it is within the grace and not fired yet, else the next real fire."""
        stood = job.trigger.last_until(due)
        if stood == due:
            return due
        fired = job.last_fire_at
        if (
            stood is not None
            and (fired is None or stood > fired)
            and (due - stood).total_seconds() <= self.config.grace_s
        ):
            return stood
        return job.trigger.next_after(None, due)

    async def _unreadable(self, job: Job, due: datetime, chat: ChatKey) -> int:
        """A stored job whose expression cannot be read any more: paused, and the chat told once."""
        text = (
            f"⚠️ Job {job.id} ({job.name}) is paused: its schedule {job.trigger.describe()}. Ask me to make it "
            f"again with a standard cron expression, then /jobs delete {job.id}."
        )
        log.warning("jobs: job %s paused: %s", job.id, job.trigger.problem)
        note = OutboundMessage(chat=chat, text=text, kind="notice", key=f"job:{job.id}:paused:{_stamp(due)}")
        await self._commit([self.jobs.pause_step(job.id, due)], note)
        return 0

    async def _retry(self, job: Job, due: datetime, attempt: int) -> int:
        event = self._event(job, due, attempt)
        steps = [self.jobs.start_retry_step(job.id, due, attempt, event_key(event))]
        return await self._commit(steps, None, event, outcome="retried")

    def _event(self, job: Job, due: datetime, attempt: int) -> InboundMessage:
        chat = ChatKey.parse(job.chat_key)
        user = job.owner.split(":", 1)[1] if ":" in job.owner else job.owner
        text = f"@{job.agent} {job.text}" if job.agent else job.text
        return InboundMessage(
            id=f"job:{job.id}:{int(due.timestamp())}:{attempt}",
            chat=chat,
            sender=Sender(id=user, name=f"job {job.id}"),
            text=text,
            is_direct=chat.chat_id == user,
            mentions_bot=True,
        )

    async def _commit(
        self,
        steps: list[Change],
        message: OutboundMessage | None,
        event: InboundMessage | None = None,
        *,
        outcome: str | None = None,
    ) -> int:
        result = await self.jobs.commit(
            steps,
            outbox=(str(message.chat), message.model_dump_json()) if message is not None else None,
            inbox=(event_key(event), str(event.chat), event.model_dump_json()) if event is not None else None,
        )
        if not result.ok:
            return 0  # another process claimed it first
        if outcome is not None and self._counted is not None:
            self._counted(outcome)
        if message is not None and result.outbox_id is not None:
            await self.deliver(result.outbox_id, message)
        if event is not None:
            await self.publish(event)
        return 1

    # -- following the runs fires started ------------------------------------------------------------

    async def follow(self) -> None:
        """Settle the fires whose runs ended: done; failed (told in the chat, tried again per ``jobs.retry``);
        stopped by a budget (told, not tried again); cancelled by a person (as they are)."""
        for job_id, due, attempt, key in await self.jobs.started():
            outcome = await self.jobs.outcome(key)
            if outcome is None:
                continue
            if outcome in SETTLED or outcome not in ("failed", "stopped"):
                # Done, or ended by a person (/cancel, /reset): nothing to say or to try again.
                status = "done" if outcome in SETTLED else outcome
                await self.jobs.commit([self.jobs.settle_step(job_id, due, attempt, status)])
                continue
            job = await self.jobs.get(job_id)
            name = f"Job {job_id}" + (f" ({job.name})" if job is not None else "")
            chat = ChatKey.parse(job.chat_key) if job is not None else None
            retry = self.config.retry
            steps = [self.jobs.settle_step(job_id, due, attempt, "failed", outcome)]
            if outcome == "stopped":  # a budget is used up: trying again would stop again
                text = f"⚠️ {name} stopped: a model budget is used up (/usage); no more tries for this fire."
            elif attempt < retry.attempts and job is not None and job.status != "deleted":
                at = self.now() + timedelta(seconds=retry.delay_s)
                steps.append(self.jobs.retry_step(job_id, due, attempt + 1, at))
                text = (
                    f"⚠️ {name} did not finish ({outcome}); I will try again in {_minutes(retry.delay_s)} "
                    f"(try {attempt + 2} of {retry.attempts + 1})."
                )
            else:
                text = f"⚠️ {name} did not finish ({outcome}); no more tries for this fire."
            key = f"job:{job_id}:{_stamp(due)}:{attempt}:{outcome}"
            note = OutboundMessage(chat=chat, text=text, kind="notice", key=key) if chat is not None else None
            await self._commit(steps, note, outcome=outcome)


def _stamp(moment: datetime) -> int:
    """A fire's time in an idempotency key (whole seconds, as the job messages' keys have it)."""
    return int(moment.timestamp())


def _local(moment: datetime, job: Job) -> str:
    return f"{moment.astimezone(zone(job.trigger.timezone)):%Y-%m-%d %H:%M}"


def _fires(count: int) -> str:
    return "its fire" if count == 1 else f"{count:,} fires"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} min"
