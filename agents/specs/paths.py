"""Checking a condition's dotted paths against the JSON schema of the data they read, to the leaf.

``analysis.can_autofix`` against a payload schema whose ``analysis`` object declares ``can_auto_fix`` is a typo the
load refuses with a did-you-mean, instead of a condition that is never true at run time (``… is not set``).  A level
that declares no ``properties`` (a free object, or no schema at all) cannot be checked further and accepts any
name; a level that is not an object (a boolean, a string) has no fields at all.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

_BRANCHES = ("allOf", "anyOf", "oneOf")


def _properties(schema: Any) -> dict[str, Any] | None:
    """The properties a value of ``schema`` may have (of every branch), or None when it does not say."""
    if not isinstance(schema, Mapping):
        return None
    known: dict[str, Any] = {}
    if isinstance(schema.get("properties"), Mapping):
        known.update(schema["properties"])
    elif "patternProperties" in schema or isinstance(schema.get("additionalProperties"), Mapping):
        return None
    for key in _BRANCHES:
        for branch in schema.get(key) or ():
            more = _properties(branch)
            if more is None and isinstance(branch, Mapping) and _may_be_object(branch):
                return None
            known.update(more or {})
    if not known and not any(schema.get(key) for key in _BRANCHES):
        return None if _may_be_object(schema) else {}
    return known


def _may_be_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind is None or kind == "object" or (isinstance(kind, list) and "object" in kind)


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    return "/".join(kind) if isinstance(kind, list) else str(kind or "a value without fields")


def leaf_problem(path: str, schema: Any, owner: str) -> str | None:
    """Why the dotted ``path`` cannot be in a value whose first name has ``schema``, or None; ``owner`` says whose
    value it is (``the payload's``).

    ``leaf_problem("analysis.can_autofix", analysis_schema, "the payload's")`` → ``"the payload's 'analysis' has
    no 'can_autofix' (it has can_auto_fix, needs_human); did you mean 'can_auto_fix'?"``
    """
    head, *rest = path.split(".")
    walked = [head]
    for part in rest:
        where = f"{owner} '{'.'.join(walked)}'"
        if not isinstance(schema, Mapping):
            return None
        known = _properties(schema)
        if known is None:
            return None
        if not known and not _may_be_object(schema):
            return f"{where} is {_kind(schema)}: it has no field {part!r}"
        if part not in known:
            close = difflib.get_close_matches(part, sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            listed = f" (it has {', '.join(sorted(known))})" if known else ""
            return f"{where} has no {part!r}{listed}{hint}"
        schema = known[part]
        walked.append(part)
    return None


def first_problem(paths: Sequence[str], schemas: Mapping[str, Any], owner: str) -> str | None:
    """The first of ``paths`` (dotted, their first name a key of ``schemas``) that a value cannot have, as
    ``reads 'a.b', but …``; ``owner`` names whose values the schemas describe (``the payload's``)."""
    for path in paths:
        head = path.split(".", 1)[0]
        if head in schemas:
            problem = leaf_problem(path, schemas[head], owner)
            if problem is not None:
                return f"reads {path!r}, but {problem}"
    return None
