"""MCP tool results → tool results for the model.

Text comes through; structured content (``structuredContent``) is preferred
when a server sends it, since its text part is usually the same data
serialised; images, audio and resources are summarised (a model that only
reads text gains nothing from base64), with the text of small embedded text
resources included.  ``isError`` becomes a :class:`ToolError`, so the model
sees an error result, not a success.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import mcp_types as types

from agents.tools.base import ToolError

MAX_RESOURCE_TEXT = 4000
"""Characters of an embedded text resource passed to the model."""


def convert_result(result: types.CallToolResult, tool: str) -> Any:
    """What the model sees for ``result`` of ``tool`` (raises :class:`ToolError` for ``isError``)."""
    parts = [_describe(block) for block in result.content]
    text = "\n\n".join(p for p in parts if p)
    if result.is_error:
        raise ToolError(text or f"{tool} failed (the server gave no details)")
    structured = result.structured_content
    if structured is not None:
        extra = [p for block, p in zip(result.content, parts, strict=True) if not isinstance(block, types.TextContent)]
        if extra:
            return {"result": structured, "attachments": extra}
        return structured
    return text


def _describe(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, types.ResourceLink):
        mime = f", {block.mime_type}" if block.mime_type else ""
        return f"[resource link: {block.name} <{block.uri}>{mime}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        mime = f", {resource.mime_type}" if resource.mime_type else ""
        if isinstance(resource, types.TextResourceContents):
            body = resource.text
            clipped = body[:MAX_RESOURCE_TEXT] + ("… (truncated)" if len(body) > MAX_RESOURCE_TEXT else "")
            return f"[resource <{resource.uri}>{mime}]\n{clipped}"
        return f"[resource <{resource.uri}>{mime}, {_size(resource.blob)}]"
    kind = getattr(block, "type", type(block).__name__)
    return f"[{kind} content]"


def _size(data: str) -> str:
    try:
        return f"{len(base64.b64decode(data, validate=False))} bytes"
    except (binascii.Error, ValueError):
        return f"{len(data)} base64 characters"
