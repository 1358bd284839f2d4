"""A Gemini tool declaration used by several Gemini tests."""

from __future__ import annotations

from agents.models.base import ToolDeclaration

WEATHER = ToolDeclaration(
    name="get_weather",
    description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
