"""Two `judge score` processes on one --out: the second refuses, naming the holder (issue 12 item 5)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.testing.servers import FakeLLMServer, Scripted
from judge.testing.synthetic import synthetic_batch
from trajudge_socket_guard import child_pythonpath

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
SCORE = "import sys; from judge.cli import main; sys.argv = ['judge', 'score', *sys.argv[1:]]; main()"


def batch_file(tmp_path: Path, count: int = 3) -> Path:
    trajectories, _ = synthetic_batch(count)
    path = tmp_path / "batch.jsonl"
    path.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    return path


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = child_pythonpath(REPO)
    return env


def test_a_second_process_on_the_same_run_refuses_and_names_the_holder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    batch, run_dir = batch_file(tmp_path), tmp_path / "run"
    with FakeLLMServer("openai", responder=lambda request: Scripted.slow(0.4)) as fake:
        args = [str(batch), "--out", str(run_dir), "--judge", f"openai-compatible:m@{fake.base_url}", "--passes", "1",
                "--concurrency", "1", "--embedder", "lexical", "--no-preflight"]
        first = subprocess.Popen([sys.executable, "-c", SCORE, *args], env=child_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while fake.request_count == 0 and first.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert first.poll() is None, first.stdout.read().decode() if first.stdout else ""
            second = runner.invoke(app, ["score", *args])
            assert second.exit_code == 1, second.output
            assert f"pid {first.pid}" in second.output and socket.gethostname() in second.output
            assert "Traceback" not in second.output
        finally:
            output = first.communicate(timeout=120)[0].decode()
        assert first.returncode == 0, output
        assert fake.request_count == 3  # every call paid once: the refused process made none
    assert not (run_dir / "run.lock").exists()  # released at exit


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.lock").write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(),
                                                  "started_at": "2020-01-01T00:00:00+00:00", "command": "judge score"}))
    result = runner.invoke(app, ["score", str(batch_file(tmp_path)), "--out", str(run_dir), "--embedder", "lexical"])
    assert result.exit_code == 0, result.output
    assert f"stale lock of pid {dead.pid}" in result.output
    assert not (run_dir / "run.lock").exists()


def test_the_lock_is_reentrant_within_one_process_and_exclusive_across_processes(tmp_path: Path) -> None:
    from judge.runlock import RunLocked, run_lock

    with run_lock(tmp_path, "outer"), run_lock(tmp_path, "inner"):  # the CLI holds it, and so does run_panel
        holder = json.loads((tmp_path / "run.lock").read_text())
        assert holder["pid"] == os.getpid() and holder["command"] == "outer"
        probe = ("import sys; from judge.runlock import RunLocked, run_lock\n"
                 "try:\n    run_lock(sys.argv[1], 'probe').__enter__()\n"
                 "except RunLocked as error:\n    print(error); sys.exit(7)\n")
        other = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], env=child_env(), capture_output=True, text=True)
        assert other.returncode == 7 and f"pid {os.getpid()}" in other.stdout
    assert not (tmp_path / "run.lock").exists()
    with run_lock(tmp_path, "again"):  # released means free again
        pass
    assert RunLocked.__doc__
