"""``judge score --batch`` against local servers speaking the OpenAI Batch API and Anthropic Message Batches, through
the real ``openai`` and ``anthropic`` SDKs: the same verdicts at the batch price, unanswered requests unscored with
their reasons, corrective retries sent directly, the budget, and a kill during polling resumed by batch id."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge import rundir
from judge.cli import app
from judge.model import Usage
from judge.panel import PanelConfig, run_panel
from judge.pricing import Price, PriceTable, batch_factor, load_price_table, price
from judge.schema import Verdict
from judge.store import RunStore
from judge.testing.batch_servers import FakeBatchServer
from judge.testing.servers import Scripted
from judge.testing.synthetic import synthetic_batch
from trajudge_socket_guard import child_pythonpath

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
FOUND = {"reasoning": "The agent claimed success after a failed call.", "efficiency": "medium", "critical_turn": 1,
         "issues": [{"turn": 1, "description": "Claims the fix worked although the test failed.", "evidence": "",
                     "category": "semantic", "severity": "severe", "tag": None, "recovered": None}]}
JUDGES = {"openai": "openai:gpt-4o", "anthropic": "anthropic:claude-sonnet-4-6"}


@pytest.fixture
def trajectories():
    return synthetic_batch(3)[0]


def serve(protocol: str, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> FakeBatchServer:
    server = FakeBatchServer(protocol, responder=lambda request: Scripted.ok(FOUND), **kwargs).start()
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL" if protocol == "openai" else "ANTHROPIC_BASE_URL", server.base_url)
    return server


def panel(protocol: str, **extra: Any) -> PanelConfig:
    settings: dict[str, Any] = {"judges": [JUDGES[protocol]], "passes": 3, "batch": True, "batch_poll_interval": 0.01,
                                "no_shared_cache": True, "max_retries": 0}
    return PanelConfig(**{**settings, **extra})


def judged(trajectories: list, config: PanelConfig, run_dir: Path):
    return asyncio.run(run_panel(trajectories, config, run_dir, progress=False))


def rows(run_dir: Path) -> list[Verdict]:
    return list(rundir.read_jsonl(run_dir / rundir.VERDICTS, Verdict))


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_batch_gives_the_verdicts_of_direct_calls_at_half_the_price(
        protocol: str, trajectories: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(protocol, monkeypatch)
    try:
        result = judged(trajectories, panel(protocol), tmp_path / "batch")
        assert len(server.created) == 1 and server.request_count == 9 and server.polls >= 1
        judged(trajectories, panel(protocol, batch=False), tmp_path / "direct")
        assert len(server.created) == 1 and server.request_count == 18  # the direct run made 9 ordinary requests
    finally:
        server.stop()
    assert "9 request(s) submitted in 1 batch(es)" in " ".join(result.batch_lines)
    batched, called = rows(tmp_path / "batch"), rows(tmp_path / "direct")
    assert [v.status for v in batched] == ["ok"] * 9
    for a, b in zip(batched, called):
        assert (a.trajectory_id, a.pass_key, a.issues, a.efficiency, a.critical_turn) == (
            b.trajectory_id, b.pass_key, b.issues, b.efficiency, b.critical_turn)
        assert a.usage == b.usage and a.attempts == 1
        assert a.cost_usd == pytest.approx(b.cost_usd * 0.5) and a.cost_usd > 0
    with RunStore.for_run(tmp_path / "batch") as store:
        attempts = store.attempts()
        assert [a["outcome"] for a in attempts] == ["ok"] * 9
        assert store.spent_usd() == pytest.approx(sum(v.cost_usd for v in batched))
        assert store.live_batches() == []
    assert result.budget is not None and result.budget.spent_usd == pytest.approx(sum(v.cost_usd for v in batched))


def test_requests_the_batch_did_not_answer_are_unscored_with_reasons_and_resubmitted_by_a_rerun(
        trajectories: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve("openai", monkeypatch)
    try:
        # In submission order: trajectory 1's passes 1-3, then trajectory 2's...
        server.queue(Scripted.expired(), Scripted.ok("not a verdict"), Scripted(status=400, error_message="bad params"),
                     Scripted.cancelled(), Scripted.ok('{"reasoning": "cut', finish_reason="__length__"))
        judged(trajectories, panel("openai", passes=2), tmp_path / "run")
        verdicts = {(v.trajectory_id, v.pass_index): v for v in rows(tmp_path / "run")}
        first, second, third = (t.id for t in trajectories)
        assert verdicts[(first, 1)].reason == "batch_expired" and "batch_expired" in verdicts[(first, 1)].detail
        # an unparseable batch answer gets its corrective retry as a direct request, and is then scored
        assert verdicts[(first, 2)].status == "ok" and verdicts[(first, 2)].attempts == 2
        assert server.requests[6].get("messages")[-1]["role"] == "user"  # the corrective turn, sent directly
        assert verdicts[(second, 1)].reason == "provider_error" and "bad params" in verdicts[(second, 1)].detail
        assert verdicts[(second, 2)].reason == "batch_cancelled"
        assert verdicts[(third, 1)].status == "ok" and verdicts[(third, 1)].attempts == 2  # truncated, corrected
        assert server.request_count == 6 + 2 and len(server.created) == 1
        # A rerun submits again only what got no answer; the answered requests are never asked again.
        judged(trajectories, panel("openai", passes=2), tmp_path / "run")
        assert len(server.created) == 2
        assert server.batches[server.created[1]]["request_counts"]["total"] == 3
        assert {v.status for v in rows(tmp_path / "run")} == {"ok"}
    finally:
        server.stop()


def test_an_answer_that_stays_unparseable_after_the_direct_corrective_retry_is_unscored(
        trajectories: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve("openai", monkeypatch)
    server.queue(Scripted.ok("nope"), Scripted.ok("still nope"))  # the batch's answer, then the direct correction's
    try:
        judged(trajectories[:1], panel("openai", passes=1), tmp_path / "run")
        assert server.request_count == 2 and len(server.created) == 1
    finally:
        server.stop()
    (verdict,) = rows(tmp_path / "run")
    assert (verdict.status, verdict.reason, verdict.attempts) == ("unscored", "parse_error", 2)
    assert verdict.raw == "still nope" and verdict.cost_usd and verdict.cost_usd > 0


def test_a_failed_batch_leaves_every_request_unscored_batch_failed(
        trajectories: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve("openai", monkeypatch)
    server.fail_next = True
    try:
        result = judged(trajectories, panel("openai", passes=1), tmp_path / "run")
    finally:
        server.stop()
    assert {(v.reason, "scripted validation failure" in (v.detail or "")) for v in rows(tmp_path / "run")} == {
        ("batch_failed", True)}
    assert result.unscored["batch_failed"] == 3 and server.request_count == 0
    with RunStore.for_run(tmp_path / "run") as store:
        assert store.spent_usd() == 0.0 and {a["outcome"] for a in store.attempts()} == {"batch_failed"}


def test_anthropic_expired_and_cancelled_requests(trajectories: list, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve("anthropic", monkeypatch)
    server.queue(Scripted.expired(), Scripted.cancelled(), Scripted.server_error(529))
    try:
        judged(trajectories, panel("anthropic", passes=1), tmp_path / "run")
    finally:
        server.stop()
    assert [v.reason for v in rows(tmp_path / "run")] == ["batch_expired", "batch_cancelled", "provider_error"]


def test_the_budget_cap_holds_for_batches(trajectories: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve("openai", monkeypatch)
    table = load_price_table()
    # Worst case of one request: its prompt plus max_tokens of output, at the batch price.
    worst = price("openai:gpt-4o", Usage(input_tokens=6000, output_tokens=4096), table, batch=True)
    try:
        result = judged(trajectories, panel("openai", passes=3, max_cost_usd=4 * worst), tmp_path / "run")
    finally:
        server.stop()
    reasons = [v.reason for v in rows(tmp_path / "run")]
    submitted = server.batches[server.created[0]]["request_counts"]["total"]
    assert 1 <= submitted < 9 and reasons.count("budget_exceeded") == 9 - submitted
    assert result.budget_exceeded and result.budget is not None and result.budget.spent_usd <= 4 * worst


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_refused_submission_is_unscored_charged_nothing_and_submitted_again_by_a_rerun(
        protocol: str, trajectories: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(protocol, monkeypatch)
    server.refuse_status = 400
    try:
        result = judged(trajectories, panel(protocol, passes=1), tmp_path / "run")
        assert server.created == [] and result.unscored["provider_error"] == 3
        assert all("batches are refused here" in (v.detail or "") for v in rows(tmp_path / "run"))
        with RunStore.for_run(tmp_path / "run") as store:
            assert store.spent_usd() == 0.0 and {a["outcome"] for a in store.attempts()} == {"bad_request"}
            assert store.live_batches() == []
        server.refuse_status = None
        judged(trajectories, panel(protocol, passes=1), tmp_path / "run")
        assert len(server.created) == 1 and {v.status for v in rows(tmp_path / "run")} == {"ok"}
    finally:
        server.stop()


def test_the_same_content_twice_is_asked_once(trajectories: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    twin = trajectories[0].model_copy(update={"id": "twin"})
    server = serve("openai", monkeypatch)
    try:
        judged([trajectories[0], twin], panel("openai", passes=1), tmp_path / "run")
    finally:
        server.stop()
    assert server.request_count == 1
    assert [(v.trajectory_id, v.status) for v in rows(tmp_path / "run")] == [(trajectories[0].id, "ok"), ("twin", "ok")]


KILLED = """
import sys
from judge.cli import main
sys.argv = ["judge", *sys.argv[1:]]
main()
"""


def test_a_kill_during_polling_resumes_the_recorded_batch(trajectories: list, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    batch_file = tmp_path / "batch.jsonl"
    batch_file.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    config = tmp_path / "panel.yaml"
    config.write_text(json.dumps({"batch-poll-interval": 0.05, "no-shared-cache": True}))
    server = serve("openai", monkeypatch)
    server.held = True
    args = ["score", str(batch_file), "--out", str(tmp_path / "run"), "--judge", JUDGES["openai"], "--batch",
            "--config", str(config), "--no-preflight", "--embedder", "lexical"]
    try:
        process = subprocess.Popen([sys.executable, "-c", KILLED, *args], env={**os.environ, "PYTHONPATH": child_pythonpath(ROOT)},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while server.polls < 3 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.polls >= 3, process.communicate(timeout=5)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        assert len(server.created) == 1 and server.request_count == 0
        with RunStore.for_run(tmp_path / "run") as store:
            assert [b["id"] for b in store.live_batches()] == server.created
            assert {a["outcome"] for a in store.attempts()} == {"batched"}
            assert store.spent_usd() > 0  # the requests in the batch count at their worst case meanwhile

        server.release()
        resumed = runner.invoke(app, args[:])
        assert resumed.exit_code == 0, resumed.output
        assert len(server.created) == 1, "the batch was submitted again"
        assert server.request_count == 9 and "resumed 1 batch(es)" in resumed.output
    finally:
        server.stop()
    verdicts = rows(tmp_path / "run")
    assert len(verdicts) == 9 and {v.status for v in verdicts} == {"ok"}
    with RunStore.for_run(tmp_path / "run") as store:
        assert store.live_batches() == [] and {a["outcome"] for a in store.attempts()} == {"ok"}
        assert store.spent_usd() == pytest.approx(sum(v.cost_usd for v in verdicts))


def test_an_interrupted_anthropic_run_resumes_its_batch(trajectories: list, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve("anthropic", monkeypatch)
    server.held = True
    config = panel("anthropic", passes=1)

    async def interrupted() -> None:
        task = asyncio.create_task(run_panel(trajectories, config, tmp_path / "run", progress=False))
        while server.polls < 2:
            await asyncio.sleep(0.01)
        task.cancel()  # what Ctrl-C does
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(interrupted())
        server.release()
        result = judged(trajectories, config, tmp_path / "run")
    finally:
        server.stop()
    assert len(server.created) == 1 and server.request_count == 3
    assert {v.status for v in rows(tmp_path / "run")} == {"ok"} and any("resumed" in line for line in result.batch_lines)


@pytest.mark.parametrize(("table", "key", "factor"), [
    (PriceTable(entries=(("a:*", Price(1, 1, 1)),), batch_discount=0.5), "a:m", 0.5),
    (PriceTable(entries=(("a:*", Price(1, 1, 1, batch_discount=0.25)),), batch_discount=0.5), "a:m", 0.75),
    (PriceTable(entries=(("a:*", Price(1, 1, 1)),)), "a:m", 1.0),  # a table that says nothing: full price
    (PriceTable(entries=(), batch_discount=0.5), "b:m", 0.5),
])
def test_batch_factor(table: PriceTable, key: str, factor: float) -> None:
    assert batch_factor(key, table) == factor


def test_the_bundled_table_halves_batch_prices() -> None:
    usage = Usage(input_tokens=1000, output_tokens=200)
    assert price("openai:gpt-4o", usage, batch=True) == pytest.approx(price("openai:gpt-4o", usage) / 2)


def test_a_bad_batch_discount_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("batch_discount: 1.5\nprices:\n  'a:b': {input: 1, output: 1}\n")
    with pytest.raises(ValueError, match="prices.yaml: batch_discount"):
        load_price_table(path)
