"""A run's temporary folder never outlives it: removed when the run ends, when it is stopped by SIGTERM or SIGINT
(exit 128 + the signal, nothing saved), and — when it was killed outright — by the next run, which sweeps the
folders of runs whose process is gone.  Real ``bot eval`` processes, signalled while a turn waits on a model."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.evals.scratch import OWNER, scratch, sweep
from tests.evals.cli import bot_eval, command, environment, leftovers, operator_config
from tests.waiting import CEILING_S

SUITE = "name: waits\ncases:\n  - id: hello\n    turns: [{user: '@chat hello'}]\n"


@pytest.fixture
def silent_model() -> Iterator[socket.socket]:
    """An OpenAI-compatible endpoint that takes the request and never answers (a turn under way)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(CEILING_S)
    try:
        yield server
    finally:
        server.close()


def start_waiting_run(tmp_path: Path, server: socket.socket) -> tuple[subprocess.Popen[str], socket.socket]:
    """``bot eval`` with a trial under way: its model called, the answer never coming."""
    port = server.getsockname()[1]
    model = {"provider": "openai", "name": "slow", "base_url": f"http://127.0.0.1:{port}/v1", "max_retries": 0}
    operator_config(tmp_path, model={**model, "timeout_s": 600})
    (tmp_path / "waits.yaml").write_text(SUITE)
    process = subprocess.Popen(
        command(tmp_path, str(tmp_path / "waits.yaml")),
        cwd=tmp_path,
        env=environment(tmp_path, OPENAI_API_KEY="sk-test-0000000000000000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    connection, _ = server.accept()  # the turn is waiting on the model now
    assert [name.startswith(f"bot-eval-{process.pid}-") for name in leftovers(tmp_path)] == [True]
    return process, connection


def test_a_run_killed_outright_is_swept_by_the_next(tmp_path: Path, silent_model: socket.socket) -> None:
    process, connection = start_waiting_run(tmp_path, silent_model)
    process.kill()
    process.communicate(timeout=CEILING_S)
    connection.close()
    [left] = leftovers(tmp_path)
    assert json.loads((tmp_path / "tmp" / left / OWNER).read_text())["pid"] == process.pid

    (tmp_path / "quick.yaml").write_text(SUITE.replace("waits", "quick"))
    done = bot_eval(tmp_path, str(tmp_path / "quick.yaml"), "--model", "offline")
    assert done.returncode == 0, done.stdout + done.stderr
    assert leftovers(tmp_path) == [], "the killed run's folder was swept, the new one removed"


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_run_stopped_by_a_signal_removes_its_folder(
    tmp_path: Path, silent_model: socket.socket, sig: signal.Signals, code: int
) -> None:
    process, connection = start_waiting_run(tmp_path, silent_model)
    process.send_signal(sig)
    _, err = process.communicate(timeout=CEILING_S)
    connection.close()
    assert process.returncode == code, err
    assert f"stopped by {sig.name}: nothing saved; the run's temporary folder was removed" in err
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "data" / "evals").exists()


def test_the_sweep_leaves_live_foreign_and_unknown_folders(tmp_path: Path) -> None:
    live = tmp_path / f"bot-eval-{os.getpid()}-live"
    reused = tmp_path / f"bot-eval-{os.getpid()}-reused"
    unknown = tmp_path / "bot-eval-1234-unknown"  # no owner file: not a folder this version made
    for folder in (live, reused, unknown):
        folder.mkdir()
    with scratch(tmp_path) as mine:
        owner = json.loads((mine / OWNER).read_text())
        (live / OWNER).write_text(json.dumps(owner))
        (reused / OWNER).write_text(json.dumps({**owner, "started": "1"}))  # this pid, another process before
        assert sweep(tmp_path) == [reused]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, unknown.name])
