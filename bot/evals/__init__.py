"""Evaluations: know before you ship an agent, a prompt or a model change (``bot eval``).

A suite (:mod:`bot.evals.suite`) is a YAML file of cases, each a conversation of turns (messages, button presses,
attached files) with checks per turn.  The runner (:mod:`bot.evals.runner`) plays each case through a real gateway
on a fresh store and workspace, against one or several models, repeated and in parallel, within a budget; the
seat (:mod:`bot.evals.seat`) is the person's side of it.  Checks (:mod:`bot.evals.checks`, the judge in
:mod:`bot.evals.judge`) read what each turn did from its messages and trace events.  Results
(:mod:`bot.evals.results`) are saved as JSON and in the store (:mod:`bot.evals.store`), compared with the last run
and reported for people and CI (:mod:`bot.evals.report`).  Recorded conversations become cases through
:mod:`bot.evals.traces`.
"""
