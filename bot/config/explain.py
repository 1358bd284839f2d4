"""A configuration that does not validate, told as the operator fixes it: the layer (the file, or the variable),
the field's dotted path, the reason, and for a mistyped key or value the nearest one that exists.

    project file config/bot.yaml: channels.telegram.tokn: unknown field (did you mean 'token'?)
    env BOT_ROUTING__STRATEGY: routing.strategy: Input should be 'rule', 'llm' or 'hybrid' (did you mean 'hybrid'?)
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Sequence
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from bot.config.secrets import SECRET_KEYS


def explain(exc: ValidationError, origin_of: Callable[[str], str], root: type[BaseModel]) -> str:
    """One line per error of ``exc`` (validating ``root``); ``origin_of`` names the layer that set a dotted key."""
    lines = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        dotted = ".".join(loc)
        if err["type"] == "extra_forbidden":
            reason = "unknown field" + did_you_mean(loc[-1], fields_at(root, loc[:-1]))
        elif err["type"] == "literal_error":
            expected = [str(v) for v in get_args(_annotation_at(root, loc))]
            reason = err["msg"] + did_you_mean(str(err.get("input", "")), expected)
        else:
            reason = err["msg"]
        if err["type"] != "extra_forbidden":
            reason += _shown_value(loc, err.get("input"))
        lines.append(f"{origin_of(dotted)}: {dotted}: {reason}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def _shown_value(loc: Sequence[str], value: Any) -> str:
    """``; the value is 'x'``: the bad value echoed, unless it is a secret's (or not a plain scalar)."""
    if any(part in SECRET_KEYS for part in loc) or not isinstance(value, str | int | float | bool):
        return ""
    if isinstance(value, str) and ("://" in value and "@" in value or len(value) > 80):  # a URL's password
        return ""
    return f"; the value is {value!r}"


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest of ``known`` to ``word``, or ''."""
    close = difflib.get_close_matches(word.lower(), [k.lower() for k in known], n=1, cutoff=0.6)
    if not close:
        return ""
    match = next(k for k in known if k.lower() == close[0])
    return f" (did you mean {match!r}?)"


def fields_at(root: type[BaseModel], path: Sequence[str]) -> list[str]:
    """The field names of the section at ``path`` (a ``dict`` of sections: a key picks its value's model)."""
    model = _model_of(_annotation_at(root, path))
    return list(model.model_fields) if model is not None else []


def _annotation_at(root: type[BaseModel], path: Sequence[str]) -> Any:
    """The type declared at ``path`` (None: the path leaves the declared sections)."""
    annotation: Any = root
    for part in path:
        model = _model_of(annotation)
        if model is not None and part in model.model_fields:
            annotation = model.model_fields[part].annotation
            continue
        inner = [a for a in get_args(annotation) if _model_of(a) is not None]
        if not inner:
            return None
        annotation = inner[-1]  # dict[str, Section] / list[Section]: the key or index picks a value
    return annotation


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):  # Optional[Section], Section | Literal[...]
        if inspect.isclass(arg) and issubclass(arg, BaseModel):
            return arg
    return None
