"""Window calls are cached and resumed like whole passes (issue 28 item 3).

A long trajectory judged in 12 windows, stopped after 5 answers (the server fails the 6th, or the process is killed
while the 6th is in flight), re-sent all 12 on resume. Now the resume asks only the windows without an answer, and
the pass comes out as an uninterrupted one would.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adversarial.paidrun import kill_score_at
from judge import rundir
from judge.cli import app
from judge.estimate import estimate_run
from judge.judges.llm import LLMJudge
from judge.panel import PanelConfig, run_panel
from judge.schema import Verdict
from judge.testing.batch_servers import FakeBatchServer
from judge.testing.fake_provider import FakeProvider
from judge.testing.servers import FakeLLMServer, Scripted
from judge.testing.synthetic import make_trajectory

runner = CliRunner()
TURNS, MAX_INPUT_TOKENS, WINDOWS = 36, 3000, 12
REVIEW = re.compile(r'<trajectory turns="(\d+)" shown="T\d+-T\d+" review="T(\d+)-T(\d+)">')


def long_run():
    return make_trajectory("long", "Migrate the settings module.", [
        {"text": f"step {t} " + "lorem ipsum " * 60, "calls": [("bash", {"cmd": f"run step {t}"}, "ok " * 20, False, 0)]}
        for t in range(1, TURNS + 1)])


def reviewed(request: dict[str, Any]) -> tuple[int, int, int]:
    """The window a request reviews: (first turn, last turn, turns in the trajectory)."""
    text = "\n".join(str(m.get("content")) for m in request["messages"] if m.get("role") == "user")
    found = REVIEW.search(text)
    assert found, text[:300]
    return int(found.group(2)), int(found.group(3)), int(found.group(1))


def window_answer(request: dict[str, Any]) -> Scripted:
    """One issue at the first turn each window reviews, so the merged pass shows which windows it holds."""
    low, _, _ = reviewed(request)
    issue = {"turn": low, "description": f"Step {low} was unnecessary.", "evidence": f"run step {low}",
             "category": "semantic", "severity": "minor", "tag": None}
    return Scripted.ok({"reasoning": f"window from T{low}", "issues": [issue], "critical_turn": None,
                        "efficiency": "medium"}, usage={"input": 1000, "output": 10, "cached": 0})


def parts_kept(run_dir: Path) -> int:
    with sqlite3.connect(run_dir / rundir.STORE) as db:
        return int(db.execute("SELECT COUNT(*) FROM call_parts").fetchone()[0])


def test_the_trajectory_takes_twelve_windows() -> None:
    judge = LLMJudge("fake:m", {"provider": FakeProvider(), "max_input_tokens": MAX_INPUT_TOKENS})
    assert len(judge.plan_for(long_run()).calls) == WINDOWS


def panel(url: str) -> PanelConfig:
    return PanelConfig(judges=[f"openai-compatible:m@{url}"], passes=1, concurrency=1, max_retries=0,
                       max_input_tokens=MAX_INPUT_TOKENS, no_shared_cache=True)


def test_a_pass_stopped_after_five_windows_asks_only_the_other_seven(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    answered = [0]

    def responder(request: dict[str, Any]) -> Scripted:  # 5 answers, then the server fails: the run stops there
        answered[0] += 1
        return window_answer(request) if answered[0] <= 5 else Scripted.server_error(500)

    with FakeLLMServer("openai", responder=responder) as fake:
        first = asyncio.run(run_panel([long_run()], panel(fake.base_url), tmp_path, progress=False))
        (stopped,) = first.verdicts
        assert stopped.status == "unscored" and stopped.reason == "provider_error" and fake.request_count == 6
        assert parts_kept(tmp_path) == 5
        estimate = asyncio.run(estimate_run([long_run()], panel(fake.base_url), tmp_path))
        assert estimate.calls == WINDOWS - 5  # the dry run counts what the resume will ask

        fake.responder = window_answer
        before = fake.request_count
        asyncio.run(run_panel([long_run()], panel(fake.base_url), tmp_path, progress=False))
        resent = [reviewed(r) for r in fake.requests[before:]]
        asyncio.run(run_panel([long_run()], panel(fake.base_url), tmp_path, progress=False))
        assert fake.request_count == before + len(resent)  # a finished pass asks nothing
    assert len(resent) == WINDOWS - 5, f"the resume sent {len(resent)} window calls, 5 of which were answered before"
    assert resent[0][0] > 1  # it starts after the answered windows
    (verdict,) = rundir.read_jsonl(tmp_path / rundir.VERDICTS, Verdict)
    assert verdict.status == "ok" and verdict.windows == WINDOWS
    # The pass holds every window's issue (5 from the store, 7 new) and counts every answered window's tokens.
    assert len(verdict.issues) == WINDOWS and verdict.attempts == WINDOWS
    assert verdict.usage.input_tokens == WINDOWS * 1000
    assert parts_kept(tmp_path) == 0  # the verdict holds them now: stored once


def test_a_kill_after_five_windows_costs_at_most_one_call_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's reproduction: killed after 5 answers at --concurrency 1, the resume paid all 12 again."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    batch = tmp_path / "batch.jsonl"
    batch.write_text(long_run().to_json_line() + "\n")
    config = tmp_path / "panel.yaml"
    config.write_text(f"passes: 1\nmax-input-tokens: {MAX_INPUT_TOKENS}\nmax-retries: 0\nno-shared-cache: true\n")
    run_dir = tmp_path / "run"
    hang = threading.Event()
    hang.set()

    def responder(request: dict[str, Any]) -> Scripted:  # the 6th call never answers: it is in flight at the kill
        return Scripted.slow(30.0) if hang.is_set() and fake.request_count > 5 else window_answer(request)

    with FakeLLMServer("openai", responder=responder) as fake:
        kill_score_at(fake, 6, str(batch), "--out", str(run_dir), "--config", str(config), "--judge",
                      f"openai-compatible:m@{fake.base_url}", "--concurrency", "1", "--no-preflight", "--embedder",
                      "lexical")
        assert fake.request_count == 6
        hang.clear()

        resumed = runner.invoke(app, ["score", str(batch), "--out", str(run_dir), "--config", str(config), "--judge",
                                      f"openai-compatible:m@{fake.base_url}", "--concurrency", "1", "--no-preflight",
                                      "--embedder", "lexical"])
        assert resumed.exit_code == 0, resumed.output
        resent = fake.request_count - 6
    # Windows 6-12: the one in flight at the kill is the only call paid twice (at most --concurrency, as promised).
    assert resent == WINDOWS - 5, f"the resume sent {resent} window calls for 7 unanswered windows"
    assert "1 call(s) were in flight" in resumed.output
    (verdict,) = rundir.read_jsonl(run_dir / rundir.VERDICTS, Verdict)
    assert verdict.status == "ok" and verdict.windows == WINDOWS and len(verdict.issues) == WINDOWS
    assert json.loads((run_dir / rundir.MANIFEST).read_text())["budget"]["in_doubt_attempts"] == 1


def test_a_batch_resume_submits_only_the_windows_without_an_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows a direct invocation got answers for are not submitted again when the run resumes with --batch."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = FakeBatchServer("openai", responder=lambda request: Scripted.ok()).start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    try:
        server.queue(*[Scripted.ok()] * 5, Scripted.server_error(500))  # direct: 5 windows answered, then a failure
        config = PanelConfig(judges=["openai:gpt-4o"], passes=1, max_retries=0, max_input_tokens=MAX_INPUT_TOKENS,
                             no_shared_cache=True, concurrency=1, batch_poll_interval=0.01)
        asyncio.run(run_panel([long_run()], config, tmp_path, progress=False))
        assert server.request_count == 6
        result = asyncio.run(run_panel([long_run()], config.merged(batch=True), tmp_path, progress=False))
        assert server.request_count == 6 + WINDOWS - 5, "the batch asked again windows answered before"
    finally:
        server.stop()
    assert "7 request(s) submitted" in " ".join(result.batch_lines)
    (verdict,) = result.verdicts
    assert verdict.status == "ok" and verdict.windows == WINDOWS and verdict.attempts == WINDOWS
