"""Agents: model clients, tools, runners and agent specs.

This package never imports ``bot`` or ``channels``; the gateway meets it through
:class:`agents.context.RunContext` and the result types in :mod:`agents.results`.
"""
