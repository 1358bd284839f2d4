"""Model clients: Gemini, a scripted model for tests, and an offline model."""

from agents.models.base import (
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelTimeout,
    ToolDeclaration,
    Usage,
)

__all__ = [
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelTimeout",
    "ToolDeclaration",
    "Usage",
]
