"""A run's results go through the redaction step before anything is printed or written: a password and an API key
typed in a turn, echoed in the answer, passed to a tool, and a configured key, are in none of the console output,
``--out``, ``--junit``, ``data_dir/evals/*.json`` or the store's ``eval_runs``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.evals.cli import bot_eval

PASSWORD = "hunter2-Correct-Horse"
API_KEY = "sk-live-9f8e7d6c5b4a39281706"
CONFIGURED = "plain-configured-value-48151623"
"""The operator's model key: no shape the detector knows, redacted because it is configured."""
SAID = f"@react my password is {PASSWORD} and my key is {API_KEY}, also {CONFIGURED}; what time is it?"

SUITE = f"""
name: secrets
cases:
  - id: leaky
    script:
      - {{call: get_current_time, args: {{timezone: "{PASSWORD} {API_KEY} {CONFIGURED}"}}}}
      - "Saved: password {PASSWORD}, key {API_KEY}, {CONFIGURED}."
    turns:
      - user: "{SAID}"
        expect: {{answer: nothing like this}}
"""


def test_results_printed_and_written_hold_no_secret(tmp_path: Path) -> None:
    (tmp_path / "secrets.yaml").write_text(SUITE)
    out, junit = tmp_path / "out" / "results.json", tmp_path / "out" / "junit.xml"
    done = bot_eval(
        tmp_path,
        str(tmp_path / "secrets.yaml"),
        "--model",
        "scripted",
        "--out",
        str(out),
        "--junit",
        str(junit),
        OPENAI_API_KEY=CONFIGURED,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the case fails: its answer and trace are kept
    [saved] = (tmp_path / "data" / "evals").glob("secrets-*.json")
    with sqlite3.connect(tmp_path / "data" / "bot.db") as db:
        [(stored,)] = db.execute("SELECT data FROM eval_runs").fetchall()
    places = {
        "console": done.stdout + done.stderr,
        "--out": out.read_text(),
        "--junit": junit.read_text(),
        "data/evals": saved.read_text(),
        "eval_runs": stored,
    }
    for place, text in places.items():
        for secret in (PASSWORD, API_KEY, CONFIGURED):
            assert secret not in text, f"{secret} in {place}"
        assert "‹redacted: " in text, f"{place} holds the run (redacted)"
    assert "my password is ‹redacted: " in places["--out"], "what the person typed"
    assert "saw Saved: password ‹redacted: " in places["console"], "the answer, in the failed check"
    assert '"timezone": "‹redacted: ' in places["--out"], "the tool's arguments"
