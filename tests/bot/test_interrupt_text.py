"""Payloads, yes/no words and prompt buttons of interrupts."""

from __future__ import annotations

import time
import uuid

import pytest

from bot.ids import new_id, new_nonce
from bot.interrupts.text import (
    buttons_for,
    encode_payload,
    parse_payload,
    tool_confirm_choices,
    yes_no,
)


def test_payload_round_trip_and_size() -> None:
    payload = encode_payload(new_id(), new_nonce(), "o2")
    assert len(payload.encode()) <= 30
    press = parse_payload(payload)
    assert press is not None and press.choice == "o2"


@pytest.mark.parametrize(
    "payload",
    ["", "v2:abcdefgh:abcd:a", "v1:abc:abcd:a", "v1:abcdefgh:ab:a", "v1:abcdefgh:abcd:", "hello", "v1:a:b:c:d"],
)
def test_malformed_payloads_are_rejected(payload: str) -> None:
    assert parse_payload(payload) is None


@pytest.mark.parametrize("text", ["yes", "Yes!", "OK", "approve", "go", "同意", "确认", "批准", "好的", "请确认"])
def test_yes(text: str) -> None:
    assert yes_no(text) is True


@pytest.mark.parametrize("text", ["no", "No.", "deny", "cancel", "拒绝", "取消", "不要", "不行"])
def test_no(text: str) -> None:
    assert yes_no(text) is False


@pytest.mark.parametrize("text", ["maybe", "yes but change the path", "what does it do?", "好像不太对"])
def test_unclear(text: str) -> None:
    assert yes_no(text) is None


def test_choices_and_rows() -> None:
    one = tool_confirm_choices([{"name": "write_file"}], ["write_file"])
    assert [c for _, c in one] == ["a", "d", "g"]
    two = tool_confirm_choices([{"name": "write_file"}, {"name": "run_command"}], [])
    assert [c for _, c in two] == ["a", "d", "o1", "o2"]
    rows = buttons_for("abcdefghij", "nonce1", two)
    assert [len(r) for r in rows] == [3, 1]
    assert rows[0][0].payload == "v1:abcdefghij:nonce1:a"


def test_fast_ids_are_unique_and_sort_in_creation_order() -> None:
    from bot.ids import fast_id

    ids = [fast_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert ids == sorted(ids)
    parsed = uuid.UUID(ids[0])
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert abs(int(ids[0][:12], 16) / 1000 - time.time()) < 60  # Unix milliseconds up front
