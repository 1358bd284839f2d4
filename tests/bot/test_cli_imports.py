"""``bot`` starts light: importing the command line loads no HTTP client, no platform library, no gateway, no
agent-file parser; each command imports what it needs when it runs (every ``bot …`` a person types, and every
test that starts the bot as a process, pays the import).  ``bot agents``/``bot mcp`` still work: their commands
are exercised in tests/bot/test_agents_cli.py and tests/bot/test_mcp_gateway.py."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "aiohttp",
    "aiogram",
    "discord",
    "slack_sdk",
    "slack_bolt",
    "google.genai",
    "openai",
    "mcp",
    "sqlalchemy",
    "numpy",
    "bot.gateway",
    "bot.store.sql",
    "bot.tracing.recorder",
    "bot.runs.catalog",
    "agents.spec",
    "agents.specs",
    "agents.tools.http",
    "agents.tools.mcp.manager",
)
"""Module trees the command line must not load at start (a name stands for itself and its submodules)."""


def test_importing_the_command_line_loads_no_client_platform_or_gateway() -> None:
    code = (
        "import sys\n"
        "import bot.cli.main\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted(n for n in sys.modules if any(n == h or n.startswith(h + '.') for h in heavy)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout


def test_the_settings_load_no_http_client() -> None:
    """The tools' section of the settings does not bring aiohttp with it (the ``http_get`` tool loads it when the
    first toolset is built)."""
    code = "import sys\nimport bot.config.settings\nprint('aiohttp' in sys.modules)\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
