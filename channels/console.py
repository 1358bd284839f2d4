"""The console channel: chat with the bot in a terminal or through a pipe.

Interactive on a TTY (a ``you>`` prompt); otherwise one message per input line,
each reply printed before the next line is read.  Buttons print as numbered
choices (``[1] Approve  [2] Deny``); typing the number or the label presses it.
What is printed has its control characters shown, not obeyed
(:func:`channels.terminal.terminal_safe`): a file a tool read cannot clear the
screen or paint a fake prompt.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Literal, TextIO

from pydantic import Field

from bot.events import Action, Button, ChatKey, InboundMessage, OutboundMessage, Sender
from bot.inbox import Inbox
from channels.base import BuildContext, ChannelSection
from channels.setup import ChannelSetup
from channels.terminal import terminal_safe


class ConsoleSettings(ChannelSection):
    """``channels.console``: on by default; the local user is allowed and an admin."""

    enabled: bool = True
    allow_from: list[str] = Field(default_factory=lambda: ["*"])
    admins: list[str] = Field(default_factory=lambda: ["*"])
    mention_policy: Literal["mention", "all"] = "all"
    streaming: bool = True
    """Print an answer as the model writes it."""
    user_id: str = "console-user"
    user_name: str = "you"


class ConsoleSetup(ChannelSetup):
    """``bot init``: nothing to ask; whoever sits at the terminal is allowed and an admin."""

    asks_admin = False
    comment = "chat in this terminal"


SETUP = ConsoleSetup()


class ConsoleChannel:
    """A single local chat (``console:local``) on stdin/stdout."""

    name = "console"
    forgets_messages = True
    """A terminal keeps nothing across a restart: the gateway shows a pending prompt again at start."""
    prints_as_written = True
    """Answers stream into the terminal as they are written (only the new text of each preview is printed)."""

    def __init__(
        self,
        *,
        join: Callable[[], Awaitable[None]] | None = None,
        started: Callable[[], Awaitable[object]] | None = None,
        user_id: str = "console-user",
        user_name: str = "you",
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        interactive: bool | None = None,
    ) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.interactive = self.stdin.isatty() if interactive is None else interactive
        self.chat = ChatKey(channel="console", chat_id="local")
        self.sender = Sender(id=user_id, name=user_name)
        self._join = join
        """Waits until the gateway handled everything so far (so each reply prints before the next line is read)."""
        self._started = started
        """Waits until start-up is over: the first ``you>`` comes after its lines (never ``you> Ready in 0.4 s.``)."""
        self.finished = asyncio.Event()
        """Set when the input ended and every line was answered."""
        self._ids = itertools.count(1)
        self._run_id = f"{time.time_ns():x}"
        self._buttons: list[Button] = []
        self._prompt_ref: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._printed: dict[str, str] = {}
        """An answer being printed as it is written: its reference → the text printed so far."""
        self._at_prompt = False
        """``you>`` is on the screen and the reader waits for a line: a message printed now (a reminder, a job's
        answer) draws the prompt again under it."""

    async def start(self, inbox: Inbox) -> None:
        self._task = asyncio.create_task(self._read_loop(inbox), name="console-reader")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def _lines(self) -> asyncio.Queue[str | None]:
        """Lines from stdin, read on a daemon thread so a blocked read never holds up exit."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()

        def pump() -> None:
            try:
                for line in self.stdin:
                    loop.call_soon_threadsafe(queue.put_nowait, line)
            except (OSError, ValueError):
                pass
            finally:
                try:
                    loop.call_soon_threadsafe(queue.put_nowait, None)
                except RuntimeError:
                    pass  # the loop is already closed

        threading.Thread(target=pump, name="console-stdin", daemon=True).start()
        return queue

    async def _read_loop(self, inbox: Inbox) -> None:
        lines = self._lines()
        try:
            if self._started is not None:
                await self._started()
            while True:
                self._prompt()
                line = await lines.get()
                self._at_prompt = False
                if line is None:
                    break
                text = line.strip()
                if not text:
                    continue
                await inbox.submit(self._event_for(text))
                if self._join is not None:
                    await self._join()
        finally:
            self.finished.set()

    def _event_for(self, text: str) -> InboundMessage | Action:
        n = next(self._ids)
        event_id = f"{self._run_id}-{n}"
        button = self._choice(text)
        if button is not None:
            return Action(
                id=event_id, chat=self.chat, sender=self.sender, payload=button.payload, message_ref=self._prompt_ref
            )
        return InboundMessage(
            id=event_id, chat=self.chat, sender=self.sender, text=text, is_direct=True, mentions_bot=True
        )

    def _choice(self, text: str) -> Button | None:
        if not self._buttons:
            return None
        if text.isdigit() and 1 <= int(text) <= len(self._buttons):
            return self._buttons[int(text) - 1]
        lowered = text.casefold()
        return next((b for b in self._buttons if b.label.casefold() == lowered), None)

    def _prompt(self) -> None:
        if self.interactive:
            self.stdout.write("you> ")
            self.stdout.flush()
            self._at_prompt = True

    def _prompt_again(self) -> str:
        """``you> `` when the person sits at the prompt (what was just printed went over it), else nothing."""
        return "you> " if self.interactive and self._at_prompt else ""

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing":
            return None
        if message.kind == "draft" or (message.edit_of is not None and message.edit_of in self._printed):
            return self._print_growing(message)
        ref = f"console-{next(self._ids)}"
        prefix = "bot (edited)> " if message.edit_of else "bot> "
        out = [prefix + terminal_safe(message.text) if message.text else prefix.rstrip()]
        if message.file is not None:  # a terminal shows where the file is
            file = message.file
            out.append(f"  📎 {terminal_safe(file.name)} ({file.kind}): {terminal_safe(file.path)}")
        flat = [b for row in message.buttons for b in row]
        if flat:
            out.append("  ".join(f"[{i}] {terminal_safe(b.label)}" for i, b in enumerate(flat, 1)))
            self._buttons, self._prompt_ref = flat, ref
        elif message.edit_of is not None and message.edit_of == self._prompt_ref:
            self._buttons, self._prompt_ref = [], None
        text = "\n".join(out)
        if self.interactive:
            text = "\r" + text
        self.stdout.write(text + "\n" + self._prompt_again())
        self.stdout.flush()
        return ref

    def _print_growing(self, message: OutboundMessage) -> str:
        """Print what is new in an answer being written; its final text ends the line."""
        ref = message.edit_of or f"console-{next(self._ids)}"
        printed = self._printed.get(ref)
        if printed is None:
            chunk = ("\r" if self.interactive else "") + "bot> " + terminal_safe(message.text)
        elif message.text.startswith(printed):
            chunk = terminal_safe(message.text[len(printed) :])
        else:  # the final answer differs from what was shown (a guardrail repaired it): show it whole
            chunk = "\nbot> " + terminal_safe(message.text)
        if message.kind == "draft":
            self._printed[ref] = message.text
        else:
            self._printed.pop(ref, None)
            chunk += "\n" + self._prompt_again()
        self.stdout.write(chunk)
        self.stdout.flush()
        return ref


def build(settings: ConsoleSettings, context: BuildContext) -> ConsoleChannel:
    """The channel plugin's factory (:mod:`channels.registry`)."""
    return ConsoleChannel(
        user_id=settings.user_id, user_name=settings.user_name, join=context.settled, started=context.started
    )
