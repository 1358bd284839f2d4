"""Datasets: a case written once as a template and filled from rows (``vars:``), one case per row.

```yaml
cases:
  - id: time-in
    vars: cities.csv                  # or cities.jsonl, or inline: [{city: Tokyo, tz: Asia/Tokyo}, …]
    vars_id: city                     # the case of each row is ``time-in-<city>`` (none: ``time-in-<row number>``)
    turns:
      - user: what time is it in {{city}}?
        expect: {tool: {name: get_current_time, args: {timezone: "{{tz}}"}}}
```

A ``{{name}}`` in any text of the case's ``turns`` (their checks included), ``files`` (names and contents),
``script``, ``simulate`` and ``description`` is replaced by the row's value of the column ``name``, as text:
never evaluated, and a value that holds ``{{…}}`` itself is not filled again.  Elsewhere (``config``, ``user``,
``tags``) nothing is filled.  A data file is read from the suite's folder only (:mod:`bot.evals.confine`: no
``..``, no link out of it, at most :data:`DATA_BYTES`); a suite is untrusted input, so what its rows may make is
bounded too: at most :data:`MAX_ROWS` rows a case, :data:`MAX_CASES` cases a suite, :data:`FILLED_CHARS`
characters of filled text.

Mistakes are the suite's (``bot eval`` exits 2 before any model call), each with the suite's line and the row's:
a placeholder a row has no column for, a column no placeholder uses, an empty file, a CSV line with too many or
too few values, a JSONL line that is not a JSON object of plain values.

This module reads raw YAML data; :func:`bot.evals.suite.parse_suite` validates each filled case as a
:class:`~bot.evals.suite.Case` (a filled value that makes a case invalid, a ``files`` path with ``..`` say, is
reported at the template's line with the row's).
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError

from bot.evals.confine import OutsideError, confined, read_confined

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}")
"""``{{name}}`` (spaces inside the braces allowed): letters, digits, ``_`` and ``-``, not first a digit."""
COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
FILLED = ("description", "files", "script", "simulate", "turns")
"""The parts of a case whose text is filled."""
MAX_ROWS = 1000
"""The most rows a case's ``vars`` has."""
MAX_CASES = 5000
"""The most cases a suite's rows make (a run is at most 5,000 trials anyway)."""
DATA_BYTES = 4 * 1024 * 1024
"""The largest data file (as large as a suite file may be)."""
FILLED_CHARS = 32_000_000
"""The most characters of text the rows of one suite make (a large template × many rows is refused)."""
SHOWN = 10
"""The most problems said of one data file (or of the cases one template's rows make)."""

Rows = Annotated[
    str | Annotated[list[dict[str, str | int | float | bool | None]], Field(min_length=1)] | None,
    BeforeValidator(
        lambda v: (
            [{str(k): x for k, x in r.items()} if isinstance(r, dict) else r for r in v] if isinstance(v, list) else v
        )
    ),
]
"""A case's ``vars``: a data file's name, or the rows (a column named by a number is text too)."""
KeyPath = list[Any]
Problem = tuple[int, str]
"""(the suite's line, ``where: what``)."""


@dataclass(frozen=True)
class Row:
    values: dict[str, str]
    number: int
    """1, 2, … in the order of the file (or the list)."""
    where: str
    """Where it was written: ``cities.csv line 4`` or ``line 12`` (an inline row)."""

    @property
    def named(self) -> str:
        return f"row {self.number} ({self.where})"

    @property
    def at(self) -> str:
        return f"row {self.number}, {self.where}"


@dataclass
class Filled:
    """A case a row made: its raw data (``id`` filled in, ``vars`` gone) and the row."""

    data: dict[str, Any]
    row: Row


class _TooMuch(Exception):
    pass


class Expander:
    """Fills the cases of one suite (the characters filled are counted over all of its cases)."""

    def __init__(
        self, base_dir: Path | None, line_of: Callable[[KeyPath], int], where: Callable[[KeyPath], str]
    ) -> None:
        """``line_of(path)``: the suite's line of a path into the file's data; ``where(path)``: the path shown."""
        self.base_dir = base_dir
        self.line_of = line_of
        self.where = where
        self.chars = 0
        self.made = 0

    def cases(
        self, cases: list[Any], raw: list[dict[str, Any]], validate: Callable[[dict[str, Any]], Any]
    ) -> tuple[list[Any], list[Problem]]:
        """The suite's ``cases`` (as read; ``raw``: as written) with each that has ``vars`` replaced by the cases
        its rows make, each made by ``validate`` (a case's model) and what it attaches checked to be in the suite's
        folder; or the problems, each at the template's line, with the row's."""
        out: list[Any] = []
        found: list[Problem] = []
        for i, case in enumerate(cases):
            if case.vars is None:
                out.append(case)
                continue
            made, problems = self.expand(i, raw[i])
            for filled in made:
                try:
                    new = validate(filled.data)
                except ValidationError as exc:
                    for err in exc.errors(include_url=False):
                        path = ["cases", i, *(p for p in err["loc"] if not str(p).startswith("function-"))]
                        problems.append(self.problem(path, f"{err['msg'].removeprefix('Value error, ')}", filled.row))
                    continue
                problems += self._outside(i, new, filled.row)
                new._template = case.id
                out.append(new)
            found += problems[:SHOWN]
            if len(problems) > SHOWN:
                found.append((problems[SHOWN][0], f"cases[{i}]: … and {len(problems) - SHOWN} more"))
        counted = Counter(c.id for c in out)
        clashes = {c._template: c.id for c in out if c._template is not None and counted[c.id] > 1}
        for i, case in enumerate(cases):
            if case.id in clashes and case.vars is not None:
                what = f"a row makes the case {clashes[case.id]!r}, and another case has that id"
                found.append(self.problem(["cases", i, "id"], what))
        return out, found

    def _outside(self, index: int, case: Any, row: Row) -> list[Problem]:
        """What the case a row made attaches from outside the suite's folder (a path a row filled in)."""
        if self.base_dir is None:
            return []
        problems = []
        for j, turn in enumerate(case.turns):
            for k, name in enumerate(turn.attach):
                try:
                    confined(self.base_dir, name)
                except OutsideError as exc:
                    problems.append(self.problem(["cases", index, "turns", j, "attach", k], str(exc), row))
        return problems

    def problem(self, path: KeyPath, what: str, row: Row | None = None) -> Problem:
        return self.line_of(path), f"{self.where(path)}: {what}" + (f" ({row.at})" if row is not None else "")

    def expand(self, index: int, raw: dict[str, Any]) -> tuple[list[Filled], list[Problem]]:
        """The cases ``raw`` (the template ``cases[index]`` as read from the file) makes, one per row; or the
        problems that keep it from making them."""
        at: KeyPath = ["cases", index, "vars"]
        rows, problems = self._rows(raw["vars"], at)
        if not rows:
            return [], problems
        used = _placeholders(raw, ["cases", index])
        id_column = raw.get("vars_id")
        problems += self._columns(rows, used, id_column, at)  # of the rows read (a broken line said above)
        if problems:
            return [], problems
        if len(rows) > MAX_ROWS:
            return [], [self.problem(at, f"more than {MAX_ROWS:,} rows; a case has at most {MAX_ROWS:,} (split them)")]
        self.made += len(rows)
        if self.made > MAX_CASES:
            return [], [self.problem(at, f"the rows make more than {MAX_CASES:,} cases in the suite")]
        made: list[Filled] = []
        by_id: dict[str, Row] = {}
        for row in rows:
            name, trouble = _case_id(str(raw["id"]), row, id_column)
            if trouble:
                problems.append(self.problem(["cases", index, "vars_id"], f"{row.named}: {trouble}"))
                continue
            if name in by_id:
                first = by_id[name]
                problems.append(self.problem(at, f"{first.named} and {row.named} both make the case {name!r}"))
                continue
            by_id[name] = row
            try:
                data = {k: (self._fill(v, row.values) if k in FILLED else v) for k, v in raw.items()}
            except _TooMuch:
                what = f"the rows make more than {FILLED_CHARS:,} characters of cases; use fewer rows or less text"
                return [], [self.problem(at, what)]
            data["id"] = name
            data.pop("vars", None)
            data.pop("vars_id", None)
            made.append(Filled(data, row))
        return made, problems

    # -- the rows --------------------------------------------------------------------------------------

    def _rows(self, spec: Any, at: KeyPath) -> tuple[list[Row], list[Problem]]:
        if isinstance(spec, list):
            rows = [
                Row({str(k): _text(v) for k, v in item.items()}, n, f"line {self.line_of([*at, n - 1])}")
                for n, item in enumerate(spec, 1)
            ]
            return rows, []
        name = str(spec)
        suffix = PurePath(name).suffix.lower()
        if suffix not in (".csv", ".jsonl", ".ndjson"):
            return [], [self.problem(at, f"{name!r}: rows come from a .csv or .jsonl file (or a list of mappings)")]
        if self.base_dir is None:
            return [], [self.problem(at, f"{name!r}: a data file is read from the suite's folder; this suite has none")]
        try:
            data = read_confined(self.base_dir, name, DATA_BYTES)
        except OutsideError as exc:
            return [], [self.problem(at, str(exc))]
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            return [], [self.problem(at, f"{name!r} is not UTF-8 text (byte {exc.start})")]
        rows, errors = _csv(name, text) if suffix == ".csv" else _jsonl(name, text)
        if not errors and not rows:
            errors = [f"{name} has no rows" + (" (only a header)" if suffix == ".csv" and text.strip() else "")]
        more = [f"… and {len(errors) - SHOWN} more problems in {name}"] if len(errors) > SHOWN else []
        return rows, [self.problem(at, e) for e in [*errors[:SHOWN], *more]]

    def _columns(self, rows: list[Row], used: dict[str, KeyPath], id_column: str | None, at: KeyPath) -> list[Problem]:
        """Every placeholder has a value in every row; every column is used (by a placeholder or as the id)."""
        problems: list[Problem] = []
        columns = list(dict.fromkeys(c for row in rows for c in row.values))
        for name, path in used.items():
            lacking = next((row for row in rows if name not in row.values), None)
            if lacking is not None:
                near = difflib.get_close_matches(name, list(lacking.values), n=1)
                hint = f"; did you mean {{{{{near[0]}}}}}?" if near else ""
                what = f"{{{{{name}}}}}: {lacking.named} has no {name!r} (its columns: {_listed(lacking)}){hint}"
                problems.append(self.problem(path, what))
        if id_column is not None:
            lacking = next((row for row in rows if id_column not in row.values), None)
            if lacking is not None:
                what = f"{id_column!r}: {lacking.named} has no such column (its columns: {_listed(lacking)})"
                problems.append(self.problem([*at[:-1], "vars_id"], what))
        for column in columns:
            if column in used or column == id_column:
                continue
            first = next(row for row in rows if column in row.values)
            if not COLUMN.match(column):
                what = f"column {column!r} ({first.where}) cannot be named by a placeholder (letters, digits, _, -)"
            else:
                what = (
                    f"column {column!r} ({first.where}) is used by no {{{{{column}}}}} in the case's turns, files, "
                    "script or description (leave it out of the data, or use it)"
                )
            problems.append(self.problem(at, what))
        return problems

    # -- filling ---------------------------------------------------------------------------------------

    def _fill(self, value: Any, values: dict[str, str]) -> Any:
        if isinstance(value, str):
            return self._text(value, values)
        if isinstance(value, list):
            return [self._fill(v, values) for v in value]
        if isinstance(value, dict):
            return {
                (self._text(k, values) if isinstance(k, str) else k): self._fill(v, values) for k, v in value.items()
            }
        return value

    def _text(self, text: str, values: dict[str, str]) -> str:
        found = list(PLACEHOLDER.finditer(text)) if "{{" in text else []
        size = len(text) + sum(len(values[m.group(1)]) - len(m.group(0)) for m in found)
        self.chars += size
        if self.chars > FILLED_CHARS:
            raise _TooMuch
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], text) if found else text  # one pass: never again


def _placeholders(raw: dict[str, Any], at: KeyPath) -> dict[str, KeyPath]:
    """Each placeholder's name in the parts of ``raw`` filled, with the path of its first use."""
    found: dict[str, KeyPath] = {}

    def walk(value: Any, path: KeyPath) -> None:
        if isinstance(value, str):
            for match in PLACEHOLDER.finditer(value):
                found.setdefault(match.group(1), path)
        elif isinstance(value, list):
            for n, item in enumerate(value):
                walk(item, [*path, n])
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key, [*path, key])
                walk(item, [*path, key])

    for part in FILLED:
        if part in raw:
            walk(raw[part], [*at, part])
    return found


def _listed(row: Row) -> str:
    return ", ".join(row.values) or "none"


def _text(value: Any) -> str:
    """A row's value as text (``true``/``false``, numbers as written by JSON, nothing for null)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def _case_id(template: str, row: Row, column: str | None) -> tuple[str, str | None]:
    """The id of the case ``row`` makes: ``<template>-<n>``, or ``<template>-<the row's value of column>`` made
    an id (letters kept, accents dropped, other characters ``-``, cut to fit 80 characters)."""
    if column is None:
        return f"{template}-{row.number}", None
    value = row.values.get(column, "")
    ascii_ = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", ascii_).strip("-._")[: max(0, 79 - len(template))].strip("-._")
    if not slug:
        return "", f"its {column!r} ({value!r}) has no letter or digit to name its case by"
    return f"{template}-{slug}", None


# -- data files ----------------------------------------------------------------------------------------


def _csv(name: str, text: str) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    errors: list[str] = []
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    start = 1
    while len(rows) <= MAX_ROWS:
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            errors.append(f"{name} line {reader.line_num}: not CSV ({exc})")
            break  # the reader cannot go on from a broken quote
        line, start = start, reader.line_num + 1
        if not record:
            continue  # a blank line
        if header is None:
            header = [h.strip() for h in record]
            errors += _header(name, line, header)
            if errors:
                break
            continue
        if len(record) != len(header):
            values = f"{len(record)} value{'s' if len(record) != 1 else ''}"
            errors.append(f"{name} line {line}: {values} for {len(header)} columns ({', '.join(header)})")
            continue
        rows.append(Row(dict(zip(header, record, strict=True)), len(rows) + 1, f"{name} line {line}"))
    return rows, errors


def _header(name: str, line: int, header: list[str]) -> list[str]:
    errors = []
    if any(not h for h in header):
        errors.append(f"{name} line {line}: a column without a name in the header ({', '.join(header)})")
    twice = sorted({h for h in header if h and header.count(h) > 1})
    if twice:
        errors.append(f"{name} line {line}: the header names {', '.join(map(repr, twice))} more than once")
    return errors


def _jsonl(name: str, text: str) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    errors: list[str] = []
    for line, content in enumerate(text.split("\n"), 1):
        if not content.strip():
            continue
        if len(rows) > MAX_ROWS:
            break
        try:
            item = json.loads(content)
        except (ValueError, RecursionError) as exc:
            errors.append(f"{name} line {line}: not JSON ({exc})")
            continue
        if not isinstance(item, dict):
            errors.append(f'{name} line {line}: a row is a JSON object ({{"column": value, …}})')
            continue
        nested = [k for k, v in item.items() if isinstance(v, dict | list)]
        if nested:
            errors.append(f"{name} line {line}: {nested[0]!r} is not a plain value (text, number, true/false, null)")
            continue
        rows.append(Row({k: _text(v) for k, v in item.items()}, len(rows) + 1, f"{name} line {line}"))
    return rows, errors
