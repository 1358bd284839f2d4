"""The reference for bench/interrupts.py: the same cycle in LangGraph (interrupt + Command(resume)), all configs.

N chats (one thread each) send "purge the cache"; a zero-latency scripted model
asks for the risky tool; a node pauses on ``interrupt()`` for the approval; the
bench resumes it with ``Command(resume="approve")``; the tool runs and the model
answers "done".  SQLite checkpointer on a file, in every configuration LangGraph
offers (``--config all``, the default, runs each in turn):

- ``sync``: ``SqliteSaver`` with ``graph.invoke`` (LangGraph as most people run it);
  the chats take turns on one thread (``--threads N``: N threads share the saver,
  which serialises them on its lock);
- ``async``: ``AsyncSqliteSaver`` with ``graph.ainvoke``, the chats concurrent on one loop;
- each at SQLite ``synchronous`` NORMAL and FULL (the PRAGMA set on the connection
  the saver uses; the saver itself sets ``journal_mode=WAL`` in its ``setup``);
- each ``durability``: ``sync`` (every checkpoint committed before the step goes on),
  ``async`` (LangGraph's default: written on a background task while the next step runs),
  ``exit`` (written when the run ends: at the interrupt, and at the end).

Every mode must persist the checkpoint at an interrupt: after the timed run each
config pauses ``--verify`` more threads, checks with a second connection that each
pause is on disk when ``invoke`` returned, closes the saver, and a fresh process
(this script, ``--resume-check``) resumes every paused thread; failures are counted
(``not_persisted``, ``resume_failed``) and must be 0.

Prints one JSON line per config in the shape of bench/interrupts.py (cycles/s,
CPU ms per cycle, p50/p99 of a cycle), then a summary line (the best config at
each ``synchronous``).  Config names: ``<saver>-<synchronous>-<durability>``, e.g.
``sync-NORMAL-async``.

Needs LangGraph, which the gateway does not depend on; run it from its own venv:

    python -m venv /tmp/lg && /tmp/lg/bin/pip install "langgraph>=1.2,<1.3" langgraph-checkpoint-sqlite
    /tmp/lg/bin/python bench/langgraph_interrupts.py [--chats 50 --cycles 20] [--config all|sync-FULL-sync]

Run it interleaved with bench/interrupts.py (bench/vs_langgraph.py does): the
machine's speed drifts between runs, so only figures taken together compare.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import operator
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, TypedDict

import aiosqlite
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

SAVERS = ("sync", "async")
SYNCHRONOUS = ("NORMAL", "FULL")
DURABILITIES = ("sync", "async", "exit")
CONFIGS = [f"{s}-{y}-{d}" for s, y, d in itertools.product(SAVERS, SYNCHRONOUS, DURABILITIES)]


class State(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


def purge(target: str) -> str:
    return f"purged {target}"


def agent(state: State) -> dict[str, Any]:
    """The zero-latency scripted model: call the tool for a user message, answer after its result."""
    if state["messages"][-1]["role"] == "tool":
        return {"messages": [{"role": "assistant", "text": "done"}]}
    call = {"id": "c1", "name": "purge", "args": {"target": "cache"}}
    return {"messages": [{"role": "assistant", "tool_calls": [call]}]}


def after_agent(state: State) -> str:
    return "confirm" if state["messages"][-1].get("tool_calls") else END


def confirm(state: State) -> dict[str, Any]:
    """Ask the human (the pause), then run the approved call or record the denial."""
    call = state["messages"][-1]["tool_calls"][0]
    decision = interrupt({"tool": call["name"], "args": call["args"]})
    content = purge(**call["args"]) if decision == "approve" else "denied by the user"
    return {"messages": [{"role": "tool", "call_id": call["id"], "content": content}]}


async def agent_async(state: State) -> dict[str, Any]:
    return agent(state)


async def confirm_async(state: State) -> dict[str, Any]:
    return confirm(state)


def build(saver: Any, *, asynchronous: bool) -> Any:
    """The graph; with async nodes for ``ainvoke`` (sync nodes would run on the executor), sync ones for ``invoke``."""
    graph = StateGraph(State)
    graph.add_node("agent", agent_async if asynchronous else agent)
    graph.add_node("confirm", confirm_async if asynchronous else confirm)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", after_agent, ["confirm", END])
    graph.add_edge("confirm", "agent")
    return graph.compile(checkpointer=saver)


def written_bytes() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def thread(chat: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": chat}}


def user(n: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "text": f"purge the cache {n}"}]}


def paused_on_disk(path: Path, chat: str) -> bool:
    """Whether another connection sees ``chat`` paused (its latest checkpoint has the interrupt pending)."""
    with SqliteSaver.from_conn_string(str(path)) as saver:
        return bool(build(saver, asynchronous=False).get_state(thread(chat)).interrupts)


class Timing:
    """The timed window: wall clock, process CPU, bytes written and each cycle's latency."""

    def __init__(self) -> None:
        self.latencies: list[float] = []

    def start(self) -> None:
        self.written = written_bytes()
        self.began, self.cpu = time.perf_counter(), time.process_time()

    def stop(self) -> None:
        self.elapsed = time.perf_counter() - self.began
        self.cpu = time.process_time() - self.cpu
        self.written = written_bytes() - self.written


def run_sync(path: Path, synchronous: str, durability: str, chats: int, cycles: int, threads: int, verify: int) -> Any:
    timing = Timing()
    not_persisted = 0
    conn = sqlite3.connect(str(path), check_same_thread=False)  # as SqliteSaver.from_conn_string opens it
    try:
        saver = SqliteSaver(conn)
        saver.setup()  # journal_mode=WAL, the tables
        conn.execute(f"PRAGMA synchronous={synchronous}")
        app = build(saver, asynchronous=False)

        def cycle(chat: str, n: int) -> float:
            began = time.perf_counter()
            first = app.invoke(user(n), thread(chat), durability=durability)
            assert "__interrupt__" in first, first
            final = app.invoke(Command(resume="approve"), thread(chat), durability=durability)
            assert final["messages"][-1]["text"] == "done", final["messages"][-1]
            return (time.perf_counter() - began) * 1000

        def chat_loop(i: int) -> None:
            for n in range(cycles):
                timing.latencies.append(cycle(f"c{i}", n))

        for i in range(min(chats, 20)):
            cycle(f"w{i}", 0)
        timing.start()
        if threads <= 1:
            for n in range(cycles):  # the chats take turns, as one thread serving them would
                for i in range(chats):
                    timing.latencies.append(cycle(f"c{i}", n))
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(chat_loop, range(chats)))
        timing.stop()
        for i in range(verify):
            paused = app.invoke(user(0), thread(f"v{i}"), durability=durability)
            assert "__interrupt__" in paused, paused
            not_persisted += not paused_on_disk(path, f"v{i}")
        settings = conn.execute("PRAGMA synchronous").fetchone()[0], conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    return timing, not_persisted, settings


async def run_async(path: Path, synchronous: str, durability: str, chats: int, cycles: int, verify: int) -> Any:
    timing = Timing()
    not_persisted = 0
    async with aiosqlite.connect(str(path)) as conn:  # as AsyncSqliteSaver.from_conn_string opens it
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        await conn.execute(f"PRAGMA synchronous={synchronous}")
        app = build(saver, asynchronous=True)

        async def cycle(chat: str, n: int) -> float:
            began = time.perf_counter()
            first = await app.ainvoke(user(n), thread(chat), durability=durability)
            assert "__interrupt__" in first, first
            final = await app.ainvoke(Command(resume="approve"), thread(chat), durability=durability)
            assert final["messages"][-1]["text"] == "done", final["messages"][-1]
            return (time.perf_counter() - began) * 1000

        async def chat_loop(i: int) -> None:
            for n in range(cycles):
                timing.latencies.append(await cycle(f"c{i}", n))

        await asyncio.gather(*(cycle(f"w{i}", 0) for i in range(min(chats, 20))))
        timing.start()
        await asyncio.gather(*(chat_loop(i) for i in range(chats)))
        timing.stop()
        for i in range(verify):
            paused = await app.ainvoke(user(0), thread(f"v{i}"), durability=durability)
            assert "__interrupt__" in paused, paused
            not_persisted += not await asyncio.to_thread(paused_on_disk, path, f"v{i}")
        async with conn.execute("PRAGMA synchronous") as cur:
            sync_value = (await cur.fetchone())[0]
        async with conn.execute("PRAGMA journal_mode") as cur:
            journal = (await cur.fetchone())[0]
    return timing, not_persisted, (sync_value, journal)


def resume_check(path: Path, verify: int) -> int:
    """In a fresh process: resume each paused ``v<i>`` thread; how many did not finish with "done"."""
    failed = 0
    with SqliteSaver.from_conn_string(str(path)) as saver:
        app = build(saver, asynchronous=False)
        for i in range(verify):
            try:
                final = app.invoke(Command(resume="approve"), thread(f"v{i}"))
                failed += final["messages"][-1].get("text") != "done"
            except Exception:  # a thread with no pause to resume
                failed += 1
    return failed


def run(name: str, chats: int, cycles: int, threads: int, verify: int) -> dict[str, Any]:
    saver, synchronous, durability = name.split("-")
    with tempfile.TemporaryDirectory(prefix="bench-langgraph-") as tmp:
        path = Path(tmp) / "checkpoints.db"
        if saver == "sync":
            timing, not_persisted, (sync_value, journal) = run_sync(
                path, synchronous, durability, chats, cycles, threads, verify
            )
        else:
            timing, not_persisted, (sync_value, journal) = asyncio.run(
                run_async(path, synchronous, durability, chats, cycles, verify)
            )
        checked = subprocess.run(
            [sys.executable, __file__, "--resume-check", str(path), "--verify", str(verify)],
            capture_output=True,
            text=True,
            check=False,
        )
        resume_failed = int(checked.stdout.strip()) if checked.returncode == 0 else verify
    total = chats * cycles
    latencies = sorted(timing.latencies)
    return {
        "benchmark": "langgraph_interrupts",
        "config": name,
        "saver": "SqliteSaver + invoke" if saver == "sync" else "AsyncSqliteSaver + ainvoke",
        "synchronous": synchronous,
        "durability": durability,
        "chats": chats,
        "threads": threads if saver == "sync" else 1,
        "cycles": total,
        "cycles_per_s": round(total / timing.elapsed, 1),
        "cpu_ms_per_cycle": round(timing.cpu * 1000 / total, 3),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(latencies[max(0, int(len(latencies) * 0.99) - 1)], 2),
        "bytes_written_per_cycle": round(max(0, timing.written) / total),
        "verified": verify,
        "not_persisted": not_persisted,
        "resume_failed": resume_failed,
        "thread": "one per chat (its state grows)",
        "journal_mode": journal,
        "synchronous_of_the_connection": {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(sync_value, sync_value),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def summary(lines: list[dict[str, Any]]) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for level in SYNCHRONOUS:
        at = [line for line in lines if line["synchronous"] == level]
        if at:
            top = max(at, key=lambda line: line["cycles_per_s"])
            best[level] = {"config": top["config"], "cycles_per_s": top["cycles_per_s"]}
    return {
        "benchmark": "langgraph_interrupts_summary",
        "cycles_per_s": {line["config"]: line["cycles_per_s"] for line in lines},
        "best": best,
        "not_persisted": sum(line["not_persisted"] for line in lines),
        "resume_failed": sum(line["resume_failed"] for line in lines),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--config", default="all", choices=["all", *CONFIGS], help="one config, or all in turn")
    parser.add_argument("--threads", type=int, default=1, help="sync saver: threads sharing it (1: chats take turns)")
    parser.add_argument("--verify", type=int, default=20, help="threads paused, then resumed by a fresh process")
    parser.add_argument("--resume-check", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.resume_check is not None:
        print(resume_check(args.resume_check, args.verify))
        return
    emit: Callable[[dict[str, Any]], None] = lambda line: print(json.dumps(line), flush=True)  # noqa: E731
    lines = []
    for name in CONFIGS if args.config == "all" else [args.config]:
        lines.append(run(name, args.chats, args.cycles, args.threads, args.verify))
        emit(lines[-1])
    if args.config == "all":
        emit(summary(lines))


if __name__ == "__main__":
    main()
