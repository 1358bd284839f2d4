"""Runs of agents: the manager that drives them, checkpoints, recovery, the agent catalog, scheduled messages."""
