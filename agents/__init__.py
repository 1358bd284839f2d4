"""Agents: model clients, tools, runners, the agent loop and agent specs.

This package never imports ``bot`` or ``channels``; the gateway meets it through
:class:`agents.context.RunContext`, the result types in :mod:`agents.results`, the
ports of :mod:`agents.loop` (persist a pause, ask a human) and the paused run's
:class:`agents.state.RunState`.
"""
