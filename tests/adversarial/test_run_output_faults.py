"""Smaller faults of issue 12 item 11: --out is a file, a full disk, bidi and ANSI control characters from the
data, negative usage from a server, and a trajectory with no assistant turn."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.model import Message, Trajectory, TrajectoryMetadata, number_turns
from judge.panel import PanelConfig, run_panel
from judge.store import RunStore
from judge.testing.servers import FakeLLMServer, Scripted
from judge.testing.synthetic import make_trajectory, synthetic_batch
from trajudge_socket_guard import child_pythonpath

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
GOOD = {"reasoning": "Fine.", "issues": [], "efficiency": "high"}
RLO = "\u202e"
EVIL_ID = f"invoice-{RLO}fdp.exe"


def write_batch(path: Path, trajectories: list[Trajectory]) -> Path:
    path.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    return path


def score(*args: str):
    return runner.invoke(app, ["score", *args, "--embedder", "lexical"])


def test_out_is_an_existing_file(tmp_path: Path) -> None:
    batch = write_batch(tmp_path / "batch.jsonl", synthetic_batch(2)[0])
    out = tmp_path / "taken"
    out.write_text("not a directory\n")
    result = score(str(batch), "--out", str(out))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "is a file" in result.output
    assert out.read_text() == "not a directory\n"


def test_disk_full_is_one_line_and_the_run_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    batch = write_batch(tmp_path / "batch.jsonl", synthetic_batch(4)[0])
    run_dir = tmp_path / "run"
    import judge.panel as panel

    real_append, written = panel._append, []

    def append_until_full(handle, verdict, flush) -> None:
        if len(written) >= 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(run_dir / "verdicts.jsonl"))
        written.append(verdict)
        real_append(handle, verdict, flush)

    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(GOOD)) as fake:
        args = [str(batch), "--out", str(run_dir), "--judge", f"openai-compatible:m@{fake.base_url}", "--passes", "1",
                "--concurrency", "1", "--no-preflight"]
        monkeypatch.setattr(panel, "_append", append_until_full)
        full = score(*args)
        assert full.exit_code == 1, full.output
        assert "No space left on device" in full.output and "resume" in full.output
        assert "Traceback" not in full.output and len(full.output.strip().splitlines()[-1]) < 300
        monkeypatch.setattr(panel, "_append", real_append)
        paid = fake.request_count
        with RunStore.for_run(run_dir) as store:
            stored = store.count_verdicts()
        # two rows written, the third paid and in the store before its row failed; with --concurrency 1 at most
        # one more call was in flight when the failure stopped the run
        assert 3 <= stored <= paid <= 4
        resumed = score(*args)
        assert resumed.exit_code == 0, resumed.output
        assert fake.request_count == paid + 4 - stored  # the verdicts stored before the disk filled up were not paid again


def test_bidi_and_control_characters_in_ids_are_made_visible(tmp_path: Path) -> None:
    trajectory = make_trajectory(EVIL_ID, "q \x1b[31mred\x1b[0m", [{"text": "done \x1b]0;pwned\x07", "calls": [
        ("bash", {"cmd": "ls"}, "out \x1b[2J cleared", False, 0)]}])
    batch = write_batch(tmp_path / "batch.jsonl", [trajectory])
    result = score(str(batch), "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    for name in ("report.html", "report.md"):
        text = (tmp_path / "run" / name).read_text(encoding="utf-8")
        assert RLO not in text and "\x1b" not in text, name
        assert "invoice-\\u202efdp.exe" in text or "invoice-\\\\u202efdp.exe" in text, name
    env = {**os.environ, "PYTHONPATH": child_pythonpath(REPO)}
    env.pop("FORCE_COLOR", None)
    outputs = {}
    for extra in ([], ["--list"]):
        shown = subprocess.run([sys.executable, "-c", "from judge.cli import main; main()", "show", str(batch), *extra],
                               env=env, capture_output=True)  # piped: no terminal
        assert shown.returncode == 0, shown.stderr
        assert b"\x1b" not in shown.stdout and RLO.encode() not in shown.stdout, shown.stdout
        assert b"\\u202e" in shown.stdout
        outputs[bool(extra)] = shown.stdout
    assert b"\\x1b[2J" in outputs[False]  # the receipt's escape sequence, shown as text


def test_no_color_is_honoured_on_a_terminal(tmp_path: Path) -> None:
    pty = pytest.importorskip("pty")
    batch = write_batch(tmp_path / "batch.jsonl", synthetic_batch(1)[0])
    env = {**os.environ, "PYTHONPATH": child_pythonpath(REPO), "NO_COLOR": "1",
           "TERM": "xterm-256color"}
    env.pop("FORCE_COLOR", None)
    leader, follower = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", "from judge.cli import main; main()", "show", str(batch)],
                             env=env, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    child.wait()
    os.close(leader)
    output = b"".join(chunks)
    assert child.returncode == 0 and b"T1" in output
    assert b"\x1b[3" not in output and b"\x1b[1;3" not in output  # no colour escapes (rich may still bold)


def test_negative_usage_is_not_a_negative_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices:\n  '*': {input: 10.0, output: 10.0}\n")
    trajectories, _ = synthetic_batch(3)
    negative = {"input": -1_000_000, "output": -5, "cached": 0}
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(GOOD, usage=negative)) as fake:
        config = PanelConfig(judges=[f"openai-compatible:m@{fake.base_url}"], passes=1, max_cost_usd=1.0,
                             max_tokens=100, prices=str(prices))
        result = asyncio.run(run_panel(trajectories, config, tmp_path, progress=False))
    assert all(v.status == "ok" for v in result.verdicts)
    assert all(v.cost_usd is None or v.cost_usd >= 0 for v in result.verdicts)
    with RunStore.for_run(tmp_path) as store:
        attempts = store.attempts()
        assert all(a["cost_usd"] is None or a["cost_usd"] >= 0 for a in attempts)
        assert all(a["input_tokens"] is None or a["input_tokens"] >= 0 for a in attempts)
        assert any("usage" in (a.get("note") or "") for a in attempts)  # the note says why the cost is unknown
        assert store.spent_usd() > 0  # charged at the worst case, never credited back


def test_a_trajectory_with_no_assistant_turn_gets_no_score(tmp_path: Path) -> None:
    messages = [Message(role="system", content="You are a coding agent."), Message(role="user", content="Fix the bug.")]
    number_turns(messages)
    empty = Trajectory(id="no-turn", query="Fix the bug.", query_id="no-turn", messages=messages,
                       metadata=TrajectoryMetadata(source_format="synthetic"))
    batch = write_batch(tmp_path / "batch.jsonl", [empty, synthetic_batch(1)[0][0]])
    result = score(str(batch), "--out", str(tmp_path / "run"))
    rows = {json.loads(line)["trajectory_id"]: json.loads(line) for line in
            (tmp_path / "run" / "scores.jsonl").read_text().splitlines()}
    assert rows["no-turn"]["score"] is None and not rows["no-turn"]["release"]
    assert "no_assistant_turn" in rows["no-turn"]["reason"]
    assert result.exit_code == 4, result.output  # one trajectory could not be judged
