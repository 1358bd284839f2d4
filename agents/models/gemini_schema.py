"""JSON schemas and tool names made acceptable to the Gemini API.

Gemini takes function parameters and response schemas as an OpenAPI-3.0-like
``Schema`` (one ``type``, ``nullable``, string-only ``enum``, ``anyOf``; no
``$ref``, ``additionalProperties``, ``const`` or type lists).  Tools and MCP
servers hand us full JSON Schema, so :func:`sanitize_schema` rewrites it:

* ``$ref`` (``#/$defs/...``, ``#/definitions/...``, any local pointer) is inlined;
  a recursive reference is expanded at most :data:`MAX_REF_EXPANSIONS` times on
  one path and then cut to a bare object with a note in its description.
* ``anyOf``/``oneOf`` with ``{"type": "null"}`` and type lists with ``"null"``
  become ``nullable``; other type lists become ``anyOf``; ``allOf`` is merged.
* ``const`` becomes a one-value ``enum``; non-string enums and ``default`` move
  into the description (Gemini only takes string enums).
* Unknown or unsupported keywords are dropped; ``required`` keeps only declared
  properties; arrays always get ``items``.

The result uses Gemini's JSON field names (``anyOf``, ``minItems``, upper-case
types) and validates as ``google.genai.types.Schema``.

Tool names must match ``[A-Za-z_][A-Za-z0-9_.:-]{0,63}``; :class:`ToolNames`
maps other names reversibly (sanitised plus a short hash of the original).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

MAX_DEPTH = 40
"""Nesting depth past which a schema is refused (a guard against pathological input)."""
MAX_REF_EXPANSIONS = 2
"""How often one ``$ref`` may be inlined inside its own expansion before it is cut."""

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")
_MAX_NAME = 64
_TYPES = {"string", "number", "integer", "boolean", "array", "object"}
_FORMATS = {"string": {"enum", "date-time"}, "number": {"float", "double"}, "integer": {"int32", "int64"}}
_COPY = {
    "string": ("minLength", "maxLength", "pattern"),
    "number": ("minimum", "maximum"),
    "integer": ("minimum", "maximum"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


class SchemaError(ValueError):
    """The schema cannot be expressed for Gemini (too deep, unresolvable reference...)."""


# -- tool names ------------------------------------------------------------


def gemini_tool_name(name: str) -> str:
    """The name Gemini sees for ``name``: unchanged when valid, else sanitised + hash."""
    if _NAME_RE.fullmatch(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9_.:-]", "_", name)
    if not re.match(r"[A-Za-z_]", cleaned):
        cleaned = "_" + cleaned
    # The hash of the original keeps two names that sanitise alike apart.
    suffix = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned[: _MAX_NAME - len(suffix) - 1]}_{suffix}"


class ToolNames:
    """The reversible tool-name mapping for one request: our names to what the provider accepts
    (``mapper``; Gemini's rules by default) and back."""

    def __init__(self, names: Iterable[str] = (), mapper: Callable[[str], str] = gemini_tool_name) -> None:
        self._mapper = mapper
        self._back: dict[str, str] = {}
        for name in names:
            self.to(name)

    def to(self, name: str) -> str:
        mapped = self._mapper(name)
        known = self._back.setdefault(mapped, name)
        if known != name:
            raise SchemaError(f"tool names {known!r} and {name!r} map to the same provider name {mapped!r}")
        return mapped

    def back(self, name: str) -> str:
        """Our name for a name in the model's function call (unknown names pass through)."""
        return self._back.get(name, name)


# -- schemas ----------------------------------------------------------------


def sanitize_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A Gemini ``Schema`` dict equivalent (as far as Gemini can say it) to ``schema``."""
    if not isinstance(schema, dict):
        raise SchemaError("a schema must be a JSON object")
    return _Sanitizer(schema).convert(schema, 0, ())


def _describe(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class _Sanitizer:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#"):
            raise SchemaError(f"external $ref {ref!r} is not supported")
        node: Any = self.root
        for token in filter(None, ref[1:].split("/")):
            token = token.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or token not in node:
                raise SchemaError(f"$ref {ref!r} does not resolve")
            node = node[token]
        if not isinstance(node, dict):
            raise SchemaError(f"$ref {ref!r} is not a schema")
        return node

    def convert(self, node: Any, depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
        if depth > MAX_DEPTH:
            raise SchemaError(f"schema nested deeper than {MAX_DEPTH} levels")
        if node is True or node is None:
            return {}
        if not isinstance(node, dict):
            raise SchemaError(f"unexpected schema node {node!r}")
        if "$ref" in node:
            ref = node["$ref"]
            target = self.resolve(ref)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if refs.count(ref) >= MAX_REF_EXPANSIONS:
                note = "Recursive structure; deeper levels are not described."
                return {"type": "OBJECT", "description": _join(siblings.get("description"), note)}
            return self.convert({**target, **siblings}, depth + 1, (*refs, ref))
        if isinstance(node.get("allOf"), list):
            return self.convert(self.merge_all_of(node, depth), depth + 1, refs)

        notes: list[str] = []
        nullable = node.get("nullable") is True
        kind = node.get("type")
        branches = node.get("anyOf", node.get("oneOf"))
        if isinstance(kind, list) and not isinstance(branches, list):
            nullable = nullable or "null" in kind
            kinds = [k for k in kind if k in _TYPES]
            if len(kinds) > 1:
                rest = {k: v for k, v in node.items() if k not in ("type", "description", "default")}
                branches = [{**rest, "type": k} for k in kinds]
            kind = kinds[0] if len(kinds) == 1 else None

        if isinstance(branches, list):
            kept: list[dict[str, Any]] = []
            for branch in branches:
                if isinstance(branch, dict) and branch.get("type") == "null":
                    nullable = True
                else:
                    kept.append(self.convert(branch, depth + 1, refs))
            merged: dict[str, Any] = kept[0] if len(kept) == 1 else ({"anyOf": kept} if kept else {})
            return self.finish(merged, node, notes, nullable)

        if kind == "null":
            nullable, kind = True, None
        elif kind not in _TYPES:
            kind = None
        out: dict[str, Any] = {}
        enum = [node["const"]] if "const" in node else node.get("enum")
        if isinstance(enum, list):
            if None in enum:
                nullable = True
                enum = [v for v in enum if v is not None]
            if enum and all(isinstance(v, str) for v in enum) and kind in (None, "string"):
                kind = "string"
                out["enum"] = list(enum)
            elif enum:
                notes.append("Allowed values: " + ", ".join(_describe(v) for v in enum) + ".")
        if kind is None:
            if isinstance(node.get("properties"), dict):
                kind = "object"
            elif "items" in node:
                kind = "array"
        if kind is None:
            return self.finish(out, node, notes, nullable)

        out["type"] = kind.upper()
        fmt = node.get("format")
        if isinstance(fmt, str):
            if fmt in _FORMATS.get(kind, ()):
                out["format"] = fmt
            else:
                notes.append(f"Format: {fmt}.")
        for key in _COPY.get(kind, ()):
            value: Any = node.get(key)
            if key == "pattern":
                if isinstance(value, str):
                    out[key] = value
            elif _is_number(value):
                out[key] = value if key in ("minimum", "maximum") else int(value)
        for key, bound_key in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            bound = node.get(key)
            if kind in ("number", "integer") and _is_number(bound) and bound_key not in out:
                out[bound_key] = bound
                notes.append(f"{key}: {bound}.")
        if kind == "object":
            self._object(node, out, notes, depth, refs)
        elif kind == "array":
            items = node.get("items")
            if isinstance(items, list):  # old-style tuple validation: any of the positions
                items = {"anyOf": items} if len(items) > 1 else (items[0] if items else None)
            # Gemini rejects an ARRAY without items; a string item is the least surprising guess.
            out["items"] = self.convert(items, depth + 1, refs) if items not in (None, True, {}) else {"type": "STRING"}
        return self.finish(out, node, notes, nullable)

    @staticmethod
    def finish(out: dict[str, Any], node: dict[str, Any], notes: list[str], nullable: bool) -> dict[str, Any]:
        """Description (with the notes for what Gemini cannot express) and ``nullable``."""
        if node.get("default") not in (None, "", [], {}):
            notes.append(f"Default: {_describe(node['default'])}.")
        # The outer description says what the field means; it wins over an inlined branch's.
        own = node.get("description")
        description = _join(own if isinstance(own, str) else out.get("description"), *notes)
        if description:
            out["description"] = description
        if nullable:
            out["nullable"] = True
        return out

    def _object(
        self, node: dict[str, Any], out: dict[str, Any], notes: list[str], depth: int, refs: tuple[str, ...]
    ) -> None:
        props = node.get("properties")
        if isinstance(props, dict) and props:
            out["properties"] = {
                str(name): self.convert(sub, depth + 1, refs) for name, sub in props.items() if sub is not False
            }
            required = [r for r in node.get("required") or () if r in out["properties"]]
            if required:
                out["required"] = required
        elif isinstance(node.get("additionalProperties"), dict):
            value_type = node["additionalProperties"].get("type")
            notes.append("An object with arbitrary keys" + (f" and {value_type} values." if value_type else "."))

    def merge_all_of(self, node: dict[str, Any], depth: int) -> dict[str, Any]:
        """One schema for ``allOf``: properties and required united, otherwise the first value wins."""
        if depth > MAX_DEPTH:
            raise SchemaError(f"allOf nested deeper than {MAX_DEPTH} levels")
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        props: dict[str, Any] = dict(merged.get("properties") or {})
        required: list[str] = list(merged.get("required") or [])
        for part in node["allOf"]:
            if not isinstance(part, dict):
                continue
            if "$ref" in part:
                part = {**self.resolve(part["$ref"]), **{k: v for k, v in part.items() if k != "$ref"}}
            if isinstance(part.get("allOf"), list):
                part = self.merge_all_of(part, depth + 1)
            for key, value in part.items():
                if key == "properties" and isinstance(value, dict):
                    props.update({k: v for k, v in value.items() if k not in props})
                elif key == "required" and isinstance(value, list):
                    required += [r for r in value if r not in required]
                else:
                    merged.setdefault(key, value)
        if props:
            merged["properties"] = props
            merged.setdefault("type", "object")
        if required:
            merged["required"] = required
        return merged


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _join(*texts: str | None) -> str:
    return " ".join(t.strip() for t in texts if t and t.strip())
