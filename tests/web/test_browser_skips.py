"""Where chromium is missing and cannot be installed, the browser tests are skipped, saying why (not failed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.web import browser


def test_no_chromium_and_not_root_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", str(tmp_path / "chromium"))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(pytest.skip.Exception, match=r"cannot be installed here \((not root|no apt-get)\)"):
        browser.need_chromium()


def test_an_install_that_fails_skips_with_apt_s_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    apt = bin_dir / "apt-get"
    apt.write_text("#!/bin/sh\necho 'E: Unable to locate package chromium' >&2\nexit 100\n")
    apt.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(browser, "CHROMIUM", str(tmp_path / "chromium"))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(pytest.skip.Exception, match=r"failed \(exit 100: E: Unable to locate package chromium\)"):
        browser.need_chromium()


def test_here_chromium_is_found() -> None:
    if not os.path.exists(browser.CHROMIUM):
        pytest.skip("no chromium on this machine")
    assert browser.need_chromium() == browser.CHROMIUM
