"""Set-up mistakes of ``bot eval`` found before the run starts (exit 2, before any model is called or a file
written): a ``--case``/``--tag`` the suite does not have, ``judge:`` checks no model can score, a results path that
cannot be written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bot.config.settings import Settings


def unknown_selection(suite: Any, cases: list[str], tags: list[str]) -> str | None:
    """A ``--case`` or ``--tag`` the suite does not have, named with what it has (a typo is a set-up error)."""
    from difflib import get_close_matches

    templates = [c._template for c in suite.cases if getattr(c, "_template", None)]  # a template: all its rows
    ids = list(dict.fromkeys([*templates, *(c.id for c in suite.cases)]))
    known_tags = sorted({t for c in suite.cases for t in c.tags})
    for flag, given, known in (("--case", cases, ids), ("--tag", tags, known_tags)):
        for name in given:
            if name not in known:
                near = get_close_matches(name, known, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                listed = ", ".join(known[:20]) + (" …" if len(known) > 20 else "") if known else "none"
                return f"{flag} {name!r}: no such {flag[2:]} in the suite{hint} (it has: {listed})"
    return None


def configured_label(settings: Settings) -> str:
    from bot.evals.models import configured

    return configured(settings.model).label


def unjudged(suite: Any, judge: str | None, models: list[str]) -> str | None:
    """``judge:`` checks that no model could score (the offline stand-in cannot judge): a suite whose meaning is
    in its rubrics would pass unjudged, so that is a set-up error, said before any model call."""
    from bot.evals.pairwise import unjudged_pairs
    from bot.evals.simulate_format import checked

    unpaired = unjudged_pairs(suite, judge, models)  # pairwise: checks of a run of two or more models
    if unpaired is not None:
        return unpaired
    cases = []
    for case in suite.cases:
        for _where, expect in checked(case):  # each turn's, and a simulated conversation's (success: too)
            for check in expect.judge:
                for model in models:
                    spec = check.model or judge or suite.judge.model or (None if model == "scripted" else model)
                    if spec in (None, "offline") and case.id not in cases:
                        cases.append(case.id)
    if not cases:
        return None
    return (
        f"{len(cases)} case(s) have judge: checks no model can score ({', '.join(cases[:5])}"
        f"{' …' if len(cases) > 5 else ''}): the offline stand-in cannot judge. Give --judge provider/name "
        "(or judge.model in the suite), or leave those cases out with --case/--tag"
    )


def unwritable(path: Path | None) -> str | None:
    """Why ``path`` cannot be written (None: it can, or no path): checked before the run."""
    if path is None:
        return None
    if path.is_dir():
        return "is a folder; give a file name"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the folders still to create go under the nearest one that exists
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "cannot be written (permission denied)"
    return None
