"""YAML is read within limits everywhere (``agents.yaml_safe``): a billion laughs, a recursive alias, nesting
thousands deep or a huge text is refused with a YAML error naming its line — in an eval suite, an agent file and
a configuration file alike — while anchors, aliases and merge keys a person writes read as before."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents import yaml_safe
from agents.specs.files import SpecFileError, parse_agent_text
from bot.config.layers import read_yaml
from bot.errors import ConfigError
from bot.evals.suite import SuiteError, parse_suite
from tests.helpers.yaml_bomb import bomb


@pytest.mark.parametrize("limits", [yaml_safe.DEFAULT, yaml_safe.SUITE])
def test_a_billion_laughs_is_refused_where_it_would_expand(limits: yaml_safe.Limits) -> None:
    with pytest.raises(yaml_safe.LimitError, match="its aliases expand to more than 100,000 values") as refused:
        yaml_safe.load(bomb(9), limits=limits)
    assert refused.value.problem_mark is not None and refused.value.problem_mark.line == 0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: &a [1, *a]", "an alias refers to a value that holds it (a recursive alias)"),
        ("[" * 5000 + "]" * 5000, "nested more than"),
        ("a: [" * 60 + "1" + "]" * 60, "nested more than 64 deep"),
        ("x: &x " + "[" * 40 + "1" + "]" * 40 + "\ny: " + "[" * 40 + "*x" + "]" * 40, "nested more than 64 deep"),
        ("a: " + "x" * 4_000_001, "the text is 4,000,004 characters long; at most 4,000,000 are read"),
    ],
)
def test_what_a_suite_may_not_hold(text: str, problem: str) -> None:
    with pytest.raises(yaml_safe.LimitError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        yaml_safe.load(text, limits=yaml_safe.SUITE)


def test_the_pure_python_parser_is_kept_from_recursing_too_deep() -> None:
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(yaml_safe.LimitError, match="nested too deep"):
        yaml_safe.load(deep, fast=yaml.SafeLoader)  # PyYAML without libyaml: no RecursionError escapes
    with pytest.raises(yaml.YAMLError):  # libyaml's error on a broken deep text, not a RecursionError
        yaml_safe.load("[" * 900 + "]" * 900 + "\n: :")


def test_anchors_and_merge_keys_read_as_before() -> None:
    text = "base: &base {a: 1, b: [x, y]}\none: {<<: *base, c: 2}\ntwo: *base\nglob: get_*\nstar: '*'\n"
    assert yaml_safe.load(text) == yaml_safe.load(text, limits=yaml_safe.SUITE) == yaml.safe_load(text)
    assert yaml_safe.load("") is None
    defaults = (Path(__file__).resolve().parents[2] / "bot" / "defaults" / "bot.yaml").read_text()
    assert yaml_safe.load(defaults) == yaml.safe_load(defaults)


def test_an_agent_file_and_a_config_file_with_a_bomb_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecFileError, match="front matter: invalid YAML at line 3, .*its aliases expand"):
        parse_agent_text(f"---\nname: x\nexamples: {bomb(9)}\n---\nbody\n")
    config = tmp_path / "bot.yaml"
    config.write_text(f"routing: {bomb(9)}\n")
    with pytest.raises(ConfigError, match="invalid YAML: its aliases expand to more than 100,000 values"):
        read_yaml(config)


def test_a_suites_yaml_error_names_its_line() -> None:
    with pytest.raises(SuiteError) as refused:
        parse_suite(f"name: bomb\ncases:\n  - id: c\n    config: {bomb(9)}\n    turns: [{{user: hi}}]\n")
    assert refused.value.problems == ["line 4: refused: its aliases expand to more than 100,000 values (a YAML bomb?)"]
