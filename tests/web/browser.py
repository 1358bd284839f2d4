"""A real browser for the console's tests: Playwright driving Debian's chromium (installed when missing, as root).

Screenshots go to ``$TEST_ARTIFACTS`` (default ``.artifacts/`` at the project root), one folder per test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]


def need_chromium() -> str:
    """The chromium binary: Debian's package, installed here when missing (root with apt-get), else the test fails."""
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    if shutil.which("apt-get") and os.geteuid() == 0:
        install = ["apt-get", "install", "-y", "-q", "chromium"]
        if subprocess.run(install, capture_output=True, timeout=600, check=False).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, timeout=300, check=False)
            subprocess.run(install, capture_output=True, timeout=600, check=False)
    if not os.path.exists(CHROMIUM):
        pytest.fail("the browser tests need Debian's chromium (apt install chromium) at /usr/bin/chromium")
    return CHROMIUM


def artifacts(name: str) -> Path:
    folder = Path(os.environ.get("TEST_ARTIFACTS") or ROOT / ".artifacts") / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
