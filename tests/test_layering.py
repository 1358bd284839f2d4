"""The dependency direction: agents imports neither bot nor channels."""

from __future__ import annotations

import subprocess
import sys


def test_agents_does_not_load_bot_or_channels() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import agents\n"
        "for m in pkgutil.walk_packages(agents.__path__, 'agents.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('bot', 'channels'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_channels_import_only_bot_contracts() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import channels\n"
        "for m in pkgutil.walk_packages(channels.__path__, 'channels.'):\n"
        "    importlib.import_module(m.name)\n"
        "allowed = {'bot', 'bot.events', 'bot.inbox', 'bot.config', 'bot.config.settings', 'bot.config.checks'}\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] == 'bot' and n not in allowed)\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
