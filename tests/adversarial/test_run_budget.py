"""--max-cost holds per run, across restarts, and calls in flight at a kill are counted (issue 12 items 6, 10)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from adversarial.paidrun import FIXED_USAGE, kill_score_at, score, setup_run
from judge.store import RunStore
from judge.testing.servers import FakeLLMServer, Scripted


def test_the_cap_holds_for_the_run_not_for_each_invocation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    batch, config = setup_run(tmp_path)
    run_dir = tmp_path / "run"
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(usage=FIXED_USAGE)) as fake:
        for _ in range(3):  # the reproduction: three invocations at one cap
            result = score(batch, config, run_dir, fake.base_url, "--max-cost", "0.035", "--concurrency", "2")
            assert result.exit_code == 3, result.output  # stopped by the budget
        paid = fake.request_count * 0.01
        assert paid <= 0.035 + 1e-9, f"three invocations paid {paid:.3f} under a 0.035 cap for the run"
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["budget"]["max_cost_usd"] == 0.035
        assert manifest["budget"]["spent_usd"] == pytest.approx(paid)

        # A resume without --max-cost keeps the recorded cap, and says how to raise it.
        before = fake.request_count
        resumed = score(batch, config, run_dir, fake.base_url)
        assert resumed.exit_code == 3 and fake.request_count == before, resumed.output
        assert "0.0350" in resumed.output and "--max-cost" in resumed.output

        raised = score(batch, config, run_dir, fake.base_url, "--max-cost", "1")
        assert raised.exit_code == 0, raised.output
        assert fake.request_count == 6  # every pass judged exactly once over the four invocations
        assert json.loads((run_dir / "run.json").read_text())["budget"]["max_cost_usd"] == 1.0
    with RunStore.for_run(run_dir) as store:
        assert store.setting("max_cost_usd") == 1.0 and store.spent_usd() == pytest.approx(0.06)


def test_calls_in_flight_at_a_kill_are_counted_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    batch, config = setup_run(tmp_path)
    run_dir = tmp_path / "run"
    hang = threading.Event()

    def responder(request: dict) -> Scripted:  # the first process's calls never answer: they are in flight at the kill
        return Scripted.slow(30.0, None) if hang.is_set() else Scripted.ok(usage=FIXED_USAGE)

    hang.set()
    with FakeLLMServer("openai", responder=responder) as fake:
        kill_score_at(fake, 4, str(batch), "--out", str(run_dir), "--config", str(config), "--judge",
                      f"openai-compatible:m@{fake.base_url}", "--concurrency", "4", "--max-cost", "1", "--no-preflight")
        assert fake.request_count == 4
        hang.clear()

        resumed = score(batch, config, run_dir, fake.base_url)
        assert resumed.exit_code == 0, resumed.output
        assert "4 call(s) were in flight" in resumed.output
        budget = json.loads((run_dir / "run.json").read_text())["budget"]
        assert budget["in_doubt_attempts"] == 4
        # Each in-doubt call is counted at its worst case (it may have been billed), beside the 6 paid calls.
        assert budget["in_doubt_usd"] > 0 and budget["spent_usd"] == pytest.approx(0.06 + budget["in_doubt_usd"])
        assert fake.request_count == 4 + 6  # the 4 lost answers had to be asked again: the README says so
