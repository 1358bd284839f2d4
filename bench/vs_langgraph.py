"""Interrupt cycles, ours against every LangGraph configuration, interleaved: medians and ratios per durability.

Each round runs, for each SQLite ``synchronous`` level (NORMAL, then FULL), ``bench/interrupts.py
--synchronous LEVEL`` (ours) and each of LangGraph's six configurations at that level
(``bench/langgraph_interrupts.py --config <saver>-LEVEL-<durability>``: sync ``SqliteSaver`` + ``invoke`` and
``AsyncSqliteSaver`` + ``ainvoke``, durability sync / async / exit; the sync saver also with each thread count
of ``--lg-threads``, named ``...@Nt``: threads sharing the saver), one process each, so every pair runs in
the same minutes; odd rounds run ours after the peers, even rounds before (the machine's drift falls on both).
Then prints one JSON line: per level the median cycles/s of ours and of each peer config over ``--rounds``,
the best peer config (highest median), the ratio ours / best peer (and its range over the rounds, each
round's ours against that round's figure of the same config), the ratio against each config, and ours at FULL
(our default) against the best peer at NORMAL.  ``--verbose`` also prints every run's line as it comes.

LangGraph runs from its own venv (``--lg-python``, default /tmp/lg/bin/python; see bench/langgraph_interrupts.py).

    python bench/vs_langgraph.py [--rounds 5] [--chats 50] [--cycles 20] [--lg-threads 1,4] [--lg-python PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
LEVELS = ("NORMAL", "FULL")
PEERS = [f"{saver}-{{level}}-{durability}" for saver in ("sync", "async") for durability in ("sync", "async", "exit")]


def measure(command: list[str], verbose: bool) -> dict[str, Any]:
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=BENCH.parent)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    line: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if verbose:
        print(json.dumps(line), flush=True)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--lg-python", default="/tmp/lg/bin/python", help="the python of LangGraph's venv")
    parser.add_argument("--lg-threads", default="1,4", help="thread counts of the sync saver's configs (1: turns)")
    parser.add_argument("--verbose", action="store_true", help="print every run's JSON line too")
    args = parser.parse_args()
    size = ["--chats", str(args.chats), "--cycles", str(args.cycles)]
    ours: dict[str, list[float]] = {level: [] for level in LEVELS}
    peers: dict[str, list[float]] = {}
    failures = 0
    for round_ in range(args.rounds):
        for level in LEVELS:
            ours_cmd = [sys.executable, str(BENCH / "interrupts.py"), "--synchronous", level, *size]
            peer_cmds = {
                name.format(level=level) + ("" if threads == 1 else f"@{threads}t"): [
                    args.lg_python,
                    str(BENCH / "langgraph_interrupts.py"),
                    "--config",
                    name.format(level=level),
                    "--threads",
                    str(threads),
                    *size,
                ]
                for name in PEERS
                for threads in ([int(t) for t in args.lg_threads.split(",")] if name.startswith("sync") else [1])
            }
            if round_ % 2 == 0:
                ours[level].append(measure(ours_cmd, args.verbose)["cycles_per_s"])
            for name, command in peer_cmds.items():
                line = measure(command, args.verbose)
                peers.setdefault(name, []).append(line["cycles_per_s"])
                failures += line["not_persisted"] + line["resume_failed"]
            if round_ % 2 == 1:
                ours[level].append(measure(ours_cmd, args.verbose)["cycles_per_s"])
    result: dict[str, Any] = {"benchmark": "vs_langgraph", "rounds": args.rounds, "chats": args.chats}
    result["cycles"] = args.chats * args.cycles
    for level in LEVELS:
        at = {name: runs for name, runs in peers.items() if f"-{level}-" in name}
        medians = {name: statistics.median(runs) for name, runs in at.items()}
        best = max(medians, key=lambda name: medians[name])
        mine = statistics.median(ours[level])
        per_round = [o / p for o, p in zip(ours[level], at[best], strict=True)]
        result[level] = {
            "ours_cycles_per_s": round(mine, 1),
            "ours_runs": ours[level],
            "peer_cycles_per_s": {name: round(m, 1) for name, m in medians.items()},
            "best_peer": best,
            "ratio_vs_best": round(mine / medians[best], 2),
            "ratio_vs_best_range": [round(min(per_round), 2), round(max(per_round), 2)],
            "ratio_vs_each": {name: round(mine / m, 2) for name, m in medians.items()},
        }
    best_normal = result["NORMAL"]["best_peer"]
    result["ours_FULL_vs_best_NORMAL"] = {
        "peer": best_normal,
        "ratio": round(result["FULL"]["ours_cycles_per_s"] / result["NORMAL"]["peer_cycles_per_s"][best_normal], 2),
    }
    result["peer_persistence_failures"] = failures
    print(json.dumps(result))


if __name__ == "__main__":
    main()
