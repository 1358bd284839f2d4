"""Process tuning applied by ``bot run``: the collector's thresholds and the frozen start-up objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from bot.config.settings import RuntimeSection, load_settings
from bot.gateway.runtime import tune_gc


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_defaults_raise_the_young_threshold_and_freeze_start_up(restored_gc: None, tmp_path) -> None:
    settings = load_settings(None, env={}, user_config=tmp_path / "none.yaml")
    assert settings.runtime == RuntimeSection(gc_threshold=10_000, gc_freeze=True)
    _young, middle, old = gc.get_threshold()
    tune_gc(settings.runtime)
    assert gc.get_threshold() == (10_000, middle, old)
    assert gc.get_freeze_count() > 0


def test_zero_and_false_leave_the_collector_alone(restored_gc: None) -> None:
    before = gc.get_threshold()
    tune_gc(RuntimeSection(gc_threshold=0, gc_freeze=False))
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
