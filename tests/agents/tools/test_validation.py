"""Tool arguments: the quick check never accepts what jsonschema would refuse."""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from agents.tools.base import Tool, ToolError, plainly_valid, tool

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {"target": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}},
        "required": ["target"],
        "additionalProperties": False,
    },
    {"type": "object", "properties": {"flag": {"type": "boolean", "default": False}, "none": {"type": "null"}}},
    {"type": "object", "properties": {}},
]
VALUES: list[Any] = ["s", "", 0, 1, -3, 1.0, 2.5, True, False, None, [], {}, ["a"]]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_quick_check_accepts_only_what_jsonschema_accepts(schema: dict[str, Any]) -> None:
    quick = plainly_valid(schema)
    assert quick is not None
    validator = jsonschema.Draft202012Validator(schema)
    keys = [*schema["properties"], "extra"]
    cases: list[Any] = [None, [], "x", {}]
    for key_a, key_b in itertools.combinations_with_replacement(keys, 2):
        for a, b in itertools.product(VALUES, repeat=2):
            cases.append({key_a: a, key_b: b})
    accepted = 0
    for args in cases:
        if quick(args):
            accepted += 1
            assert validator.is_valid(args), args
    assert accepted > 0


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
        {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}},
        {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "array"},
    ],
)
def test_other_schemas_are_left_to_jsonschema(schema: dict[str, Any]) -> None:
    assert plainly_valid(schema) is None


async def test_invalid_arguments_still_get_jsonschemas_explanation() -> None:
    @tool()
    async def purge(target: str, count: int = 1) -> str:
        """Purge."""
        return f"{target}{count}"

    assert await purge.invoke({"target": "a", "count": 2}) == "a2"
    assert await purge.invoke({"target": "b", "count": 1.0}) == "b1.0"  # 1.0 is an integer to JSON Schema
    with pytest.raises(ToolError, match="invalid arguments for purge: count: 'x' is not of type 'integer'"):
        await purge.invoke({"target": "a", "count": "x"})
    with pytest.raises(ToolError, match="'target' is a required property"):
        await purge.invoke({})
    assert isinstance(purge, Tool)
