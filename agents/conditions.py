"""Conditions over a run's state: a small, safe expression language, parsed once (at load), never ``eval``.

    analysis.can_auto_fix and not analysis.needs_human
    task.status == 'need-review'
    fix.attempts < 3 or review.verdict in ['approve', 'nit']

Names and dotted paths (``a.b.c``; a missing step is ``null``), literals (numbers, 'strings' or "strings",
``true``/``false``/``null``, ``[lists]``), comparisons ``== != < <= > >=``, ``in`` / ``not in``, ``and``,
``or``, ``not`` and parentheses. A comparison that cannot be made (``null < 3``, ``'a' < 1``) is false,
never an error: a condition answers yes or no about whatever state it meets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

MAX_CHARS = 500
MAX_DEPTH = 32

_TOKEN = re.compile(
    r"\s*(?:(?P<number>-?\d+(?:\.\d+)?)|(?P<string>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,)|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*))"
)
_WORDS = {"and", "or", "not", "in", "true", "false", "null", "none"}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: bool(a == b),
    "!=": lambda a, b: bool(a != b),
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


class ConditionError(ValueError):
    """A condition that does not parse: what is wrong, where (a caret under the text)."""

    def __init__(self, text: str, position: int, problem: str) -> None:
        self.text, self.position, self.problem = text, position, problem
        super().__init__(f"{problem} at character {position + 1}:\n  {text}\n  {' ' * position}^")


@dataclass(frozen=True)
class _Token:
    kind: str  # number, string, op, name, word, end
    value: Any
    at: int


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    at = 0
    while at < len(text):
        if text[at:].isspace():
            break
        match = _TOKEN.match(text, at)
        if match is None or match.end() == at:
            start = at + len(text[at:]) - len(text[at:].lstrip())
            raise ConditionError(text, start, f"unexpected {text[start]!r}")
        kind = match.lastgroup or ""
        raw = match.group(kind)
        start = match.start(kind)
        if kind == "number":
            out.append(_Token("number", float(raw) if "." in raw else int(raw), start))
        elif kind == "string":
            out.append(_Token("string", re.sub(r"\\(.)", r"\1", raw[1:-1]), start))
        elif kind == "name" and raw.lower() in _WORDS:
            out.append(_Token("word", raw.lower(), start))
        else:
            out.append(_Token(kind, raw, start))
        at = match.end()
    out.append(_Token("end", None, len(text)))
    return out


Node = tuple[Any, ...]
"""("lit", value) | ("path", (parts…)) | ("list", [nodes]) | ("not", node) | ("and"/"or", [nodes]) |
("cmp", op, left, right)"""


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def at(self, kind: str, value: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token.kind == kind and token.value == value

    def take(self) -> _Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def fail(self, problem: str, token: _Token | None = None) -> ConditionError:
        return ConditionError(self.text, (token or self.peek()).at, problem)

    def expect(self, kind: str, value: str) -> None:
        token = self.take()
        if token.kind != kind or token.value != value:
            raise self.fail(f"expected {value!r}", token)

    def parse(self) -> Node:
        node = self.either()
        if self.peek().kind != "end":
            raise self.fail(f"unexpected {self.peek().value!r}")
        return node

    def either(self) -> Node:
        parts = [self.both()]
        while self.at("word", "or"):
            self.take()
            parts.append(self.both())
        return parts[0] if len(parts) == 1 else ("or", parts)

    def both(self) -> Node:
        parts = [self.negation()]
        while self.at("word", "and"):
            self.take()
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else ("and", parts)

    def negation(self) -> Node:
        if self.at("word", "not"):
            self.take()
            return ("not", self.nested(self.negation))
        return self.comparison()

    def nested(self, parse: Callable[[], Node]) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nested more than {MAX_DEPTH} deep")
        try:
            return parse()
        finally:
            self.depth -= 1

    def comparison(self) -> Node:
        left = self.atom()
        token = self.peek()
        op = None
        if (token.kind == "op" and token.value in _COMPARE) or self.at("word", "in"):
            op = self.take().value
        elif self.at("word", "not") and self.at("word", "in", 1):
            self.i += 2
            op = "not in"
        if op is None:
            return left
        return ("cmp", op, left, self.atom())

    def atom(self) -> Node:
        token = self.take()
        if token.kind in ("number", "string"):
            return ("lit", token.value)
        if token.kind == "word" and token.value in ("true", "false", "null", "none"):
            return ("lit", {"true": True, "false": False}.get(token.value))
        if token.kind == "name":
            return ("path", tuple(token.value.split(".")))
        if token.kind == "op" and token.value == "(":
            node = self.nested(self.either)
            self.expect("op", ")")
            return node
        if token.kind == "op" and token.value == "[":
            items: list[Node] = []
            while not self.at("op", "]"):
                items.append(self.nested(self.atom))
                if self.at("op", ","):
                    self.take()
                elif not self.at("op", "]"):
                    raise self.fail("expected ',' or ']'")
            self.take()
            return ("list", items)
        if token.kind == "end":
            raise self.fail("the condition ends too early", token)
        raise self.fail(f"unexpected {token.value!r}", token)


def _lookup(state: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = state
    for part in path:
        if isinstance(value, Mapping):
            value = value.get(part)
        else:
            value = getattr(value, part, None) if hasattr(value, "model_fields") else None
        if value is None:
            return None
    return value


def _value(node: Node, state: Mapping[str, Any]) -> Any:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "path":
        return _lookup(state, node[1])
    if kind == "list":
        return [_value(item, state) for item in node[1]]
    return _truth(node, state)


def _truth(node: Node, state: Mapping[str, Any]) -> bool:
    kind = node[0]
    if kind == "and":
        return all(_truth(part, state) for part in node[1])
    if kind == "or":
        return any(_truth(part, state) for part in node[1])
    if kind == "not":
        return not _truth(node[1], state)
    if kind == "cmp":
        _, op, left, right = node
        try:
            return _COMPARE[op](_value(left, state), _value(right, state))
        except TypeError:
            return False
    return bool(_value(node, state))


@dataclass(frozen=True)
class Condition:
    """A parsed condition: :meth:`holds` evaluates it against a state (nested mappings)."""

    text: str
    tree: Node

    def holds(self, state: Mapping[str, Any]) -> bool:
        return _truth(self.tree, state)

    def paths(self) -> list[str]:
        """Every dotted path it reads, in order, once (to say what they were when it did not hold)."""
        return list(dict.fromkeys(".".join(parts) for parts in _paths(self.tree)))

    def explain(self, state: Mapping[str, Any]) -> str:
        """What the paths it reads are in ``state``: ``task.status is 'draft'``."""
        return ", ".join(f"{path} is {_shown(_lookup(state, tuple(path.split('.'))))}" for path in self.paths())

    def names(self) -> set[str]:
        """The first part of every path it reads (``analysis`` of ``analysis.can_auto_fix``): what a loader
        checks against the names the state can have."""
        return {parts[0] for parts in _paths(self.tree)}

    def __str__(self) -> str:
        return self.text


def _paths(node: Node) -> Iterator[tuple[str, ...]]:
    """The paths a condition's tree reads, in order."""
    kind = node[0]
    if kind == "path":
        yield node[1]
    elif kind in ("and", "or", "list"):
        for part in node[1]:
            yield from _paths(part)
    elif kind == "not":
        yield from _paths(node[1])
    elif kind == "cmp":
        yield from _paths(node[2])
        yield from _paths(node[3])


def _shown(value: Any) -> str:
    if value is None:
        return "not set"
    text = repr(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    return text if len(text) <= 60 else text[:59] + "…"


def as_condition(text: str) -> Condition | None:
    """``text`` as a condition when it is one: it parses, and it is more than one bare word (``done`` or
    "the cause is found" are prose for the model, ``fix.applied`` or ``status == 'done'`` conditions)."""
    try:
        condition = parse_condition(text)
    except ConditionError:
        return None
    tree = condition.tree
    if tree[0] == "path" and len(tree[1]) == 1:
        return None
    return condition


def parse_condition(text: str) -> Condition:
    """Parse ``text`` once; raises :class:`ConditionError` (with the position) when it is not a condition."""
    if not text.strip():
        raise ConditionError(text, 0, "the condition is empty")
    if len(text) > MAX_CHARS:
        raise ConditionError(text[:60] + "…", 0, f"the condition is longer than {MAX_CHARS} characters")
    return Condition(text.strip(), _Parser(text.strip()).parse())
