"""The example suite shipped for the built-in agents passes offline, as CI runs it: ``bot eval`` at the command
line, exit code, JUnit XML, the results file and the run recorded in the store."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_suite_passes_offline(tmp_path: Path) -> None:
    config = tmp_path / "bot.yaml"
    config.write_text(yaml.safe_dump({"store": {"data_dir": str(tmp_path / "data")}}))
    suite = ROOT / "evals" / "builtin.yaml"
    command = [sys.executable, "-m", "bot", "eval", str(suite), "--model", "offline", "--min-pass", "1"]
    command += ["--junit", str(tmp_path / "junit.xml"), "--out", str(tmp_path / "results.json"), "-c", str(config)]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Suite builtin: 9 cases × offline — 9/9 passed (100%)" in done.stdout
    assert "offline: 9/9 passed (100%)" in done.stdout
    [suite_xml] = ET.parse(tmp_path / "junit.xml").getroot().findall("testsuite")
    assert (suite_xml.get("name"), suite_xml.get("tests"), suite_xml.get("failures")) == ("builtin[offline]", "9", "0")
    results = json.loads((tmp_path / "results.json").read_text())
    assert len(results["trials"]) == 9 and all(t["passed"] for t in results["trials"])
    assert list((tmp_path / "data" / "evals").glob("builtin-*.json"))
    with sqlite3.connect(tmp_path / "data" / "bot.db") as db:
        assert db.execute("SELECT suite, status, trials, passed FROM eval_runs").fetchall() == [
            ("builtin", "passed", 9, 9)
        ]
    assert not (tmp_path / "data" / "workspace").exists(), "the cases wrote in their own workspaces"
