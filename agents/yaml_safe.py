"""Safe YAML, read fast and within limits.

Fast: libyaml's parser where PyYAML has one, much quicker than the pure-Python one (the built-in defaults are read
at every start and by every ``bot`` command; see bench/README.md, "YAML through libyaml").  A document libyaml
refuses is read once more by the pure-Python parser, whose error names the line where the problem starts
(libyaml's often names the end of the input).

Within limits: a document is composed first (its nodes, nothing built yet) and, when it holds an alias, measured
before anything is made of it, each alias counting the whole size of what it stands for.  So a "billion laughs"
(aliases of aliases: 1 KB that expands to a billion values, which whatever walks it next — a schema check, a
merge, a copy — would spend minutes and gigabytes on), a recursive alias, nesting hundreds deep or a huge text is
refused at once with a :class:`LimitError` (a :class:`yaml.YAMLError`) naming its line.  The default limits are
far above any configuration or agent file a person writes, and cost nothing on a text without an alias (libyaml
itself refuses nesting over 1,000 deep); eval suites, which come from anyone, are read with the :data:`SUITE`
limits, measured always.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

FAST: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


NESTING = 1000
"""How deep libyaml itself lets lists and mappings nest (its parser refuses deeper ones)."""
EXACT_CHARS = 64_000
"""A refused text up to this long is read again by the pure-Python parser, for the line of its error."""
EXACT_DEPTH = 50
"""… when it nests no deeper than this (that parser recurses, and slows down on deep flow nesting)."""


@dataclass(frozen=True)
class Limits:
    chars: int = 8_000_000
    """The longest text read."""
    nodes: int = 100_000
    """The most values (scalars, lists, mappings, keys included) once every alias is expanded (measured when the
    text has an alias: without one, a value is at least a character)."""
    depth: int = NESTING
    """The deepest nesting of lists and mappings (aliases expanded)."""


DEFAULT = Limits()
SUITE = Limits(chars=4_000_000, depth=64)
"""Eval suites (files anyone may hand the operator): smaller, still far above a real suite."""


class LimitError(yaml.MarkedYAMLError):
    """A document over one of the :class:`Limits` (a YAML bomb, or a text far larger than any real one)."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


def load(text: str, fast: type[Any] = FAST, exact: type[Any] = yaml.SafeLoader, limits: Limits = DEFAULT) -> Any:
    """The document in ``text`` (safe: no arbitrary objects); :class:`yaml.YAMLError` with the exact position,
    :class:`LimitError` (a :class:`yaml.YAMLError` too) for a document over ``limits``."""
    return load_document(text, fast, exact, limits)[0]


def load_document(
    text: str, fast: type[Any] = FAST, exact: type[Any] = yaml.SafeLoader, limits: Limits = DEFAULT
) -> tuple[Any, yaml.Node | None]:
    """:func:`load`, with the document's nodes (their marks say where each value is written)."""
    if len(text) > limits.chars:
        raise LimitError(f"the text is {len(text):,} characters long; at most {limits.chars:,} are read")
    try:
        return _load(text, fast, limits)
    except LimitError:
        raise
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(getattr(exc, "problem", "") or ""):
            mark = getattr(exc, "problem_mark", None)
            raise LimitError(f"nested more than {min(limits.depth, NESTING)} deep", mark) from None
        if len(text) > EXACT_CHARS or _depth_before_error(text, fast) > EXACT_DEPTH:
            raise
        try:
            return _load(text, exact, limits)
        except RecursionError:
            raise exc from None


def _load(text: str, loader_class: type[Any], limits: Limits) -> tuple[Any, yaml.Node | None]:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        if limits.depth < NESTING or _may_alias(text):  # no alias: nothing expands; libyaml caps the nesting
            measure(node, limits)
        return loader.construct_document(node), node
    except RecursionError:  # the pure-Python parser (PyYAML without libyaml) on deep nesting
        raise LimitError(f"nested too deep (more than {limits.depth} levels)") from None
    finally:
        loader.dispose()


def _may_alias(text: str) -> bool:
    """Whether ``text`` may hold an alias: a ``*`` at a line's start or after a space, a bracket, a comma, a
    colon or a question mark (a quoted ``"*"`` or a glob ``get_*`` is none)."""
    at = text.find("*")
    while at >= 0:
        if at == 0 or text[at - 1] in " \t\r\n[{,:?":
            return True
        at = text.find("*", at + 1)
    return False


def _depth_before_error(text: str, loader_class: type[Any]) -> int:
    """How deep ``text`` nests up to its first error (its events are read until then)."""
    depth = deepest = 0
    try:
        for event in yaml.parse(text, Loader=loader_class):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                deepest = max(deepest, depth)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        pass
    return deepest


def measure(root: yaml.Node, limits: Limits = DEFAULT) -> int:
    """How many values the document at ``root`` holds with every alias expanded; :class:`LimitError` when that,
    or its nesting, is over ``limits``, or an alias holds itself.  Each node is visited once (an alias reuses the
    size and height of the node it names), without recursion."""
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    path: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, finished = stack.pop()
        key = id(node)
        if finished:
            path.discard(key)
            children = _children(node)
            size = 1 + sum(sizes[id(c)] for c in children)
            if size > limits.nodes:
                raise LimitError(
                    f"its aliases expand to more than {limits.nodes:,} values (a YAML bomb?)", node.start_mark
                )
            sizes[key] = size
            heights[key] = 1 + max((heights[id(c)] for c in children), default=0)
            continue
        if key in sizes:  # an alias of a node measured already: its whole size again, as deep as it is here
            if depth - 1 + heights[key] > limits.depth:
                raise LimitError(f"nested more than {limits.depth} deep (aliases expanded)", node.start_mark)
            continue
        if key in path:
            raise LimitError("an alias refers to a value that holds it (a recursive alias)", node.start_mark)
        if isinstance(node, yaml.ScalarNode):
            sizes[key], heights[key] = 1, 0
            continue
        if depth > limits.depth:
            raise LimitError(f"nested more than {limits.depth} deep", node.start_mark)
        path.add(key)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in _children(node))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []
