"""Process tuning applied by ``bot run``: the collector's thresholds, the frozen start-up objects and the
interpreter's switch interval."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from bot.config.settings import RuntimeSection, load_settings
from bot.gateway.runtime import tune_process


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold, interval = gc.get_threshold(), sys.getswitchinterval()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        sys.setswitchinterval(interval)


def test_defaults_raise_the_young_threshold_freeze_start_up_and_shorten_the_switch_interval(
    restored_gc: None, tmp_path
) -> None:
    settings = load_settings(None, env={}, user_config=tmp_path / "none.yaml")
    assert settings.runtime == RuntimeSection(gc_threshold=10_000, gc_freeze=True, switch_interval_ms=0.2)
    _young, middle, old = gc.get_threshold()
    tune_process(settings.runtime)
    assert gc.get_threshold() == (10_000, middle, old)
    assert gc.get_freeze_count() > 0
    assert sys.getswitchinterval() == pytest.approx(0.0002)


def test_the_switch_interval_comes_from_the_environment(restored_gc: None, tmp_path) -> None:
    settings = load_settings(None, env={"BOT_RUNTIME__SWITCH_INTERVAL_MS": "1.5"}, user_config=tmp_path / "none.yaml")
    tune_process(settings.runtime)
    assert sys.getswitchinterval() == pytest.approx(0.0015)


def test_zero_and_false_leave_the_collector_and_the_interval_alone(restored_gc: None) -> None:
    before, interval = gc.get_threshold(), sys.getswitchinterval()
    tune_process(RuntimeSection(gc_threshold=0, gc_freeze=False, switch_interval_ms=0))
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert sys.getswitchinterval() == interval
