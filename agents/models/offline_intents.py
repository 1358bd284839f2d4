"""What the offline model understands: a few plain requests, matched by patterns, each mapped to the built-in
tool a language model would call (the time, a reminder, a file written or read, a web page, a question back
to the user, a handoff), plus plans and re-plans for the plan agent.  Deterministic, so tests and demos
behave the same every time; anything else gets a labelled answer saying what to try.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any
from zoneinfo import available_timezones

from agents.clock import SYSTEM_CLOCK
from agents.models.base import ToolDeclaration
from agents.models.offline_when import reminder

_TIME = re.compile(
    r"\b(what(?:'s| is)? the (?:time|date)|what time|time is it|current time|time now|today'?s date|what day)\b"
    r"|几点|现在.*时间|时间是",
    re.IGNORECASE,
)
_IN_PLACE = re.compile(r"\bin ([A-Z][\w .'-]{1,40}?)(?:[?.!,]|$| right now| now| today)", re.IGNORECASE)
_EVERY = re.compile(
    r"\bevery (?P<days>day|weekday|monday|tuesday|wednesday|thursday|friday|saturday|sunday) at "
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))? ?(?P<half>am|pm)?,? (?:remind me (?:to |of |that )?)?(?P<what>.+)",
    re.IGNORECASE,
)
_CRON_DAYS = {"day": "*", "weekday": "mon-fri"}
_WRITE = re.compile(
    r"\b(?:write|save|put)\s+[\"“']?(?P<content>.+?)[\"”']?\s+(?:to|into|in)\s+(?:the file\s+)?"
    r"(?P<path>[\w./-]+\.\w{1,8})\b",
    re.IGNORECASE,
)
_READ = re.compile(
    r"\b(?:read|show|open|cat|print)\s+(?:me\s+)?(?:the\s+)?(?:file\s+)?(?P<path>[\w./-]+\.\w{1,8})\b", re.I
)
_LIST = re.compile(r"\b(?:list|show)\s+(?:me\s+)?(?:the\s+|my\s+)?(?:files|workspace|folder)\b", re.IGNORECASE)
_REMEMBER = re.compile(
    r"^\s*(?:please\s+)?(?:remember|note)(?: that)?[,:]?\s+(?P<fact>.{3,})|^\s*(?:请)?记住[：:，,]?\s*(?P<zh>.{2,})",
    re.IGNORECASE,
)
_RECALL = re.compile(
    r"\bwhat do you (?:remember|know) about me\b|\bdo you remember\b|你记得|你知道我.{0,6}什么", re.IGNORECASE
)
_URL = re.compile(r"https?://[^\s<>\"')]+")
_CHOOSE = re.compile(r"\bhelp me (?:choose|decide|pick)\b|\bwhich (?:one )?should i\b|帮我选", re.IGNORECASE)
_GREETING = re.compile(r"^\s*(hi|hello|hey|good (?:morning|evening|afternoon)|你好)\b", re.IGNORECASE)
_THANKS = re.compile(r"\b(thanks|thank you|thx)\b|谢谢", re.IGNORECASE)
_PLAN_WORDS = re.compile(r"^\s*(?:please\s+)?(?:make\s+(?:me\s+)?a\s+)?plan(?:\s+for)?\s+(?:to\s+)?", re.IGNORECASE)
_ALIASES = {
    "beijing": "Asia/Shanghai",
    "new york": "America/New_York",
    "san francisco": "America/Los_Angeles",
    "washington": "America/New_York",
    "mumbai": "Asia/Kolkata",
    "delhi": "Asia/Kolkata",
    "munich": "Europe/Berlin",
    "utc": "UTC",
}

TRY = (
    'Try: "what time is it in Tokyo?", "remind me in 2 minutes to stretch", "write hello to notes.txt", '
    '"read notes.txt", "plan a weekend trip to Paris", "@react help me choose a laptop", '
    '"remember that I like green tea".'
)
"""Every suggestion works as typed (a test sends each one through the gateway)."""


@cache
def _cities() -> dict[str, str]:
    found = {name.rsplit("/", 1)[-1].replace("_", " ").lower(): name for name in available_timezones() if "/" in name}
    return {**found, **_ALIASES}


def zone_in(text: str) -> str | None:
    """The IANA zone of a place the text names ("in Tokyo" → Asia/Tokyo), or None."""
    for match in _IN_PLACE.finditer(text):
        words = match.group(1).strip().lower().split()
        for size in range(min(3, len(words)), 0, -1):  # "new york city" → "new york"
            zone = _cities().get(" ".join(words[:size]))
            if zone:
                return zone
    lowered = text.lower()
    return next(
        (zone for city, zone in _cities().items() if len(city) > 3 and re.search(rf"\b{city}\b", lowered)), None
    )


def tool_call(
    text: str, tools: dict[str, ToolDeclaration], now: Callable[[], datetime] | None = None, zone: str = "UTC"
) -> tuple[str, dict[str, Any]] | None:
    """The built-in tool (and arguments) a plain request asks for, among ``tools``; a reminder at a wall-clock
    time is read in ``zone`` at ``now()`` (an aware datetime)."""
    if "remember" in tools and (found := _REMEMBER.search(text)):
        return "remember", {"fact": (found.group("fact") or found.group("zh")).strip().rstrip(".!。！")}
    if "recall" in tools and _RECALL.search(text):
        return "recall", {"query": text}
    if "get_current_time" in tools and _TIME.search(text):
        return "get_current_time", {"timezone": zone_in(text) or "UTC"}
    if "schedule_job" in tools and (found := _EVERY.search(text)):
        return "schedule_job", _every(found)
    if "schedule_message" in tools and (asked := reminder(text)) is not None:
        # The gateway marks a scheduled message with ⏰ itself.
        if asked.clock is None:
            return "schedule_message", {"text": f"Reminder: {asked.what}", "in_minutes": asked.in_minutes}
        due = asked.due((now or SYSTEM_CLOCK.now)(), zone)
        return "schedule_message", {"text": f"Reminder: {asked.what}", "at": due.isoformat(timespec="seconds")}
    if "write_file" in tools and (found := _WRITE.search(text)):
        return "write_file", {"path": found.group("path"), "content": found.group("content").strip() + "\n"}
    if "read_file" in tools and (found := _READ.search(text)) and not _URL.search(text):
        return "read_file", {"path": found.group("path")}
    if "list_dir" in tools and _LIST.search(text):
        return "list_dir", {"path": "."}
    if "http_get" in tools and (url := _URL.search(text)):
        return "http_get", {"url": url.group(0).rstrip(".,")}
    if "ask_user" in tools and _CHOOSE.search(text):
        subject = _CHOOSE.split(text, maxsplit=1)[-1].strip(" ?.") or "this"
        question = f"To help you choose {subject}: what matters most to you?"
        return "ask_user", {"question": question, "choices": ["Price", "Quality", "Speed"]}
    return None


def _every(found: re.Match[str]) -> dict[str, Any]:
    """``every weekday at 8 remind me to stretch`` → a cron job sending the reminder."""
    hour = int(found.group("hour")) % 24
    if (found.group("half") or "").lower() == "pm" and hour < 12:
        hour += 12
    days = found.group("days").lower()
    what = found.group("what").strip().rstrip(".!")
    cron = f"{int(found.group('minute') or 0)} {hour} * * {_CRON_DAYS.get(days, days[:3])}"
    return {"name": what[:40], "message": f"Reminder: {what}", "cron": cron}


def handoff(text: str, tools: dict[str, ToolDeclaration]) -> tuple[str, dict[str, Any]] | None:
    """A ``transfer_to_<agent>`` tool whose agent's description shares words with the request."""
    lowered = text.lower()
    best, score = None, 0
    for name, tool in tools.items():
        if not name.startswith("transfer_to_"):
            continue
        words = {w for w in re.findall(r"\w+", f"{name[12:]} {tool.description}".lower()) if len(w) > 3}
        found = sum(1 for w in words if re.search(rf"\b{re.escape(w)}", lowered))
        if found > score:
            best, score = name, found
    if best is None:
        return None
    return best, {"reason": "the request matches this agent", "summary": text[:200]}


def plan_steps(request: str) -> list[str]:
    """Three concrete steps for the goal in a planner's request (its feedback becomes a fourth)."""
    goal_line = request.split("\n", 1)[0].removeprefix("Request:").strip()
    goal = _PLAN_WORDS.sub("", goal_line).strip(" .?!") or goal_line
    steps = [
        f"List what {goal} needs (dates, budget, constraints)",
        f"Work out the options for {goal} and pick the best",
        f"Write up the plan for {goal} as a short checklist",
    ]
    feedback = re.search(r"Revise it with this feedback: (.+)", request, re.DOTALL)
    if feedback:
        steps.insert(2, f"Take this into account: {feedback.group(1).strip()}")
    return steps


def replan(request: str) -> dict[str, Any]:
    """The plan goes on while steps remain, then answers from what was done."""
    remaining = re.search(r"Remaining plan:\n(.*?)\nCompleted:", request, re.DOTALL)
    steps = [re.sub(r"^\d+\.\s*", "", line).strip() for line in (remaining.group(1) if remaining else "").splitlines()]
    steps = [s for s in steps if s and s != "(empty)"]
    if steps:
        return {"action": "plan", "steps": steps}
    goal = _PLAN_WORDS.sub("", request.split("\n", 1)[0].removeprefix("Goal:").strip())
    done = [_step_done(line) for line in request.split("Completed:", 1)[-1].splitlines() if line.startswith("- ")]
    listed = "\n".join(f"• {d}" for d in done)
    return {"action": "respond", "answer": f"The plan for {goal or 'your request'} is done:\n{listed}"}


def _step_done(line: str) -> str:
    """The step of a completed line ``- STEP: RESULT``; a step may hold colons itself (an edit's feedback does:
    ``Take this into account: cheaper hotels``), so it ends where the result, which the offline model labels, begins."""
    labelled = re.match(r"- (.+?): \[offline model\] ", line)
    return labelled.group(1) if labelled else line[2:].split(":", 1)[0]


def step_of(brief: str) -> str | None:
    """The step a plan executor was asked to do now."""
    found = re.search(r"Do this step now: (.+)$", brief, re.DOTALL)
    return found.group(1).strip() if found else None


def chat_reply(text: str) -> str:
    if _GREETING.search(text):
        return f"Hello! I am the offline stand-in, so I answer a few plain requests. {TRY}"
    if _THANKS.search(text):
        return "You're welcome!"
    if _CHOOSE.search(text):  # asking back takes the ask_user tool, which the chat agent does not have
        return f"To ask you what matters, I need the react agent: send “@react {text.strip()}”."
    shown = text if len(text) <= 120 else text[:117] + "…"
    return f"You said: “{shown}”. Without a language model I only understand a few requests. {TRY}"
