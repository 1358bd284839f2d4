"""Model answers of a planner: a plan and a direct answer."""

from __future__ import annotations

import json

from agents.models.base import ModelResponse


def plan(*steps: str) -> ModelResponse:
    return ModelResponse(text=json.dumps({"steps": list(steps)}), parsed={"steps": list(steps)})


def respond(answer: str) -> ModelResponse:
    data = {"action": "respond", "answer": answer}
    return ModelResponse(text=json.dumps(data), parsed=data)
