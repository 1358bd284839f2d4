"""Set-up mistakes found before any model call: the settings under the suite's ``config`` load for each model,
each model under test can be built (its provider's key is set), the suite's agent folders exist.  A run that would
otherwise fail every trial (and exit 1, like a regression) is refused with exit 2 and what is wrong, so CI tells a
bad set-up from a worse model.  (A single case's own ``config`` that does not load fails that case alone.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bot.errors import ConfigError
from bot.evals.trust import Refused

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.evals.models import ModelChoice
    from bot.evals.suite import Case, Suite

SHOWN = 10


class BadSetUp(Refused):
    """The suite cannot run as it is set up (``bot eval`` exits 2)."""


async def set_up_problems(
    suite: Suite,
    base_dir: Path,
    models: list[ModelChoice],
    settings_of: Callable[[Case, ModelChoice], Settings],
    *,
    replaying: bool = False,
) -> list[str]:
    """What keeps every trial of a model from running; ``settings_of(case, model)``: a trial's settings;
    ``replaying``: the answers come from a cassette, so a model without a key is no problem (it is never asked)."""
    from bot.evals.case_checks import unpriced
    from bot.evals.pycheck import load_problems
    from bot.evals.simulate import simulator_problems
    from bot.models import ModelCatalog

    problems = [
        f"agents: {base_dir / folder} is not a folder (the suite's agents: lists it)"
        for folder in suite.agents
        if not (base_dir / folder).is_dir()
    ]
    problems += unknown_tools(suite)
    problems += await simulator_problems(suite, models, settings_of, replaying=replaying)  # simulate: cases
    problems += load_problems(suite, base_dir)  # Python checks (the suite is trusted by now: see trust.py)
    if not suite.cases:
        return problems
    bare = suite.cases[0].model_copy(update={"config": {}})  # the suite's config alone: a case's own fails alone
    for model in models:
        try:
            settings = settings_of(bare, model)
        except ConfigError as exc:
            problems.append(f"config ({model.label}): {exc}")
            continue
        if model.make is not None:
            continue
        problems += unpriced(suite, settings)
        if replaying:
            continue
        try:
            catalog = ModelCatalog(
                settings.model, timezone=settings.jobs.timezone, inline_max_mb=settings.media.inline_max_mb
            )
        except ConfigError as exc:  # the provider's key is not set, an unknown provider
            problems.append(f"model {model.label}: {exc}")
        else:
            await catalog.aclose()
    return list(dict.fromkeys(problems))


def unknown_tools(suite: Suite) -> list[str]:
    """Tool names the checks give that no tool has (``no_tool: [wirte_file]`` would hold whatever ran), with a
    did-you-mean; MCP tools (``mcp.<server>.<tool>``) and handoffs (``transfer_to_<agent>``) are named freely."""
    from difflib import get_close_matches

    from agents.handoffs import PREFIX
    from bot.evals.simulate_format import checked
    from bot.runs.tool_names import known_tool_names

    known = sorted(known_tool_names())
    found = []
    for case in suite.cases:
        for where, expect in checked(case):  # each turn's (and a simulated conversation's)
            named = [t.name for t in expect.tool] + (expect.no_tool if isinstance(expect.no_tool, list) else [])
            for name in named:
                if name in known or name.startswith(("mcp.", PREFIX)):
                    continue
                near = get_close_matches(name, known, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                found.append(f"case {case.id}, {where}: no tool is named {name!r}{hint}")
    return found


def refusal(problems: list[str]) -> BadSetUp:
    more = f"\n  … and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    shown = "\n  ".join(problems[:SHOWN])
    return BadSetUp(f"the suite cannot run as it is set up (nothing was run):\n  {shown}{more}")
