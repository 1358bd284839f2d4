"""Evals run real gateways: settings from the built-in defaults in a temp dir (no developer files), the suite's
and the runner's overrides on top."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config.settings import Settings, load_settings
from bot.evals.runner import SettingsSource, merged


@pytest.fixture
def settings_source(tmp_path: Path) -> Callable[..., SettingsSource]:
    """``settings_source(**overrides)`` → what :func:`bot.evals.runner.run_suite` reads settings through."""

    def make(**overrides: Any) -> SettingsSource:
        base = merged(
            {
                "store": {"data_dir": str(tmp_path / "data")},
                "agents": {"dirs": []},
                "memory": {"summary": {"model": "extractive"}},
            },
            overrides,
        )

        def source(more: dict[str, Any]) -> Settings:
            return load_settings(None, env={}, user_config=tmp_path / "no-user.yaml", overrides=merged(base, more))

        return source

    return make
