"""The reference for bench/interrupts.py: the same cycle in LangGraph (interrupt + Command(resume)).

N chats (one thread each) send "purge the cache"; a zero-latency scripted model
asks for the risky tool; a node pauses on ``interrupt()`` for the approval; the
bench resumes it with ``Command(resume="approve")``; the tool runs and the model
answers "done".  SQLite checkpointer (``AsyncSqliteSaver``, a file) with the
durability the checkpointer is asked for (``--durability sync`` commits every
checkpoint before the step returns, like our checkpoint-before-prompt).
Prints one JSON line in the shape of bench/interrupts.py.

Needs LangGraph, which the gateway does not depend on; run it from its own venv:

    python -m venv /tmp/lg && /tmp/lg/bin/pip install "langgraph>=1.2,<1.3" langgraph-checkpoint-sqlite
    /tmp/lg/bin/python bench/langgraph_interrupts.py --chats 50 --cycles 20

Run it back to back with bench/interrupts.py: the machine's speed drifts by
±30 % between runs, so only figures taken together compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import resource
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class State(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


async def purge(target: str) -> str:
    return f"purged {target}"


async def agent(state: State) -> dict[str, Any]:
    """The zero-latency scripted model: call the tool for a user message, answer after its result."""
    if state["messages"][-1]["role"] == "tool":
        return {"messages": [{"role": "assistant", "text": "done"}]}
    call = {"id": "c1", "name": "purge", "args": {"target": "cache"}}
    return {"messages": [{"role": "assistant", "tool_calls": [call]}]}


def after_agent(state: State) -> str:
    return "confirm" if state["messages"][-1].get("tool_calls") else END


async def confirm(state: State) -> dict[str, Any]:
    """Ask the human (the pause), then run the approved call or record the denial."""
    call = state["messages"][-1]["tool_calls"][0]
    decision = interrupt({"tool": call["name"], "args": call["args"]})
    if decision == "approve":
        content = await purge(**call["args"])
    else:
        content = "denied by the user"
    return {"messages": [{"role": "tool", "call_id": call["id"], "content": content}]}


def build(saver: AsyncSqliteSaver) -> Any:
    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("confirm", confirm)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", after_agent, ["confirm", END])
    graph.add_edge("confirm", "agent")
    return graph.compile(checkpointer=saver)


def written_bytes() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


async def run(chats: int, cycles: int, durability: str, fresh: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-langgraph-") as tmp:
        path = Path(tmp) / "checkpoints.db"
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            app = build(saver)

            async def cycle(chat: str, n: int) -> float:
                config = {"configurable": {"thread_id": f"{chat}-{n}" if fresh else chat}}
                started = time.perf_counter()
                first = await app.ainvoke(
                    {"messages": [{"role": "user", "text": f"purge the cache {n}"}]}, config, durability=durability
                )
                assert "__interrupt__" in first, first
                final = await app.ainvoke(Command(resume="approve"), config, durability=durability)
                assert final["messages"][-1]["text"] == "done", final["messages"][-1]
                return (time.perf_counter() - started) * 1000

            await asyncio.gather(*(cycle(f"w{i}", 0) for i in range(min(chats, 20))))
            before_bytes = written_bytes()
            latencies: list[float] = []
            started = time.perf_counter()
            cpu, loop_cpu = time.process_time(), time.thread_time()

            async def chat_loop(i: int) -> None:
                for n in range(cycles):
                    latencies.append(await cycle(f"c{i}", n))

            await asyncio.gather(*(chat_loop(i) for i in range(chats)))
            elapsed = time.perf_counter() - started
            cpu, loop_cpu = time.process_time() - cpu, time.thread_time() - loop_cpu
            written = written_bytes() - before_bytes
        conn = sqlite3.connect(path)
        synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        conn.close()
    total = chats * cycles
    latencies.sort()
    return {
        "benchmark": "langgraph_interrupts",
        "chats": chats,
        "cycles": total,
        "cycles_per_s": round(total / elapsed, 1),
        "cpu_ms_per_cycle": round(cpu * 1000 / total, 3),
        "loop_cpu_ms_per_cycle": round(loop_cpu * 1000 / total, 3),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(latencies[max(0, int(len(latencies) * 0.99) - 1)], 2),
        "bytes_written_per_cycle": round(max(0, written) / total),
        "durability": durability,
        "thread": "fresh per cycle" if fresh else "one per chat (its state grows)",
        "journal_mode": journal,
        "synchronous_of_a_new_connection": synchronous,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--durability", default="sync", choices=["sync", "async", "exit"])
    parser.add_argument("--fresh", action="store_true", help="a new thread per cycle (no state carried over)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.chats, args.cycles, args.durability, args.fresh))))


if __name__ == "__main__":
    main()
