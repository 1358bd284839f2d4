"""Runs of agents: the manager that records their start, pauses and finish (the loop itself is
:mod:`agents.loop`), the run context of each leg, recovery, the agent catalog, scheduled messages."""
