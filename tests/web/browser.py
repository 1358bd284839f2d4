"""A real browser for the console's tests: Playwright driving Debian's chromium (installed when missing, as root;
skipped, saying why, where it cannot be).

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
    """The chromium binary: Debian's package, installed here when missing (root with apt-get, as ``.ci/run`` does);
    where it is missing and cannot be installed the test is skipped, saying why."""
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    if not shutil.which("apt-get") or os.geteuid() != 0:
        why = "not root" if shutil.which("apt-get") else "no apt-get"
        pytest.skip(f"no chromium at {CHROMIUM} and it cannot be installed here ({why}): apt install chromium")
    install = ["apt-get", "install", "-y", "-q", "chromium"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, timeout=300, check=False)
        done = subprocess.run(install, capture_output=True, text=True, timeout=600, check=False)
    if not os.path.exists(CHROMIUM):
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"no chromium at {CHROMIUM}: `apt-get install chromium` failed (exit {done.returncode}: {said})")
    return CHROMIUM


def artifacts(name: str) -> Path:
    folder = Path(os.environ.get("TEST_ARTIFACTS") or ROOT / ".artifacts") / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
