"""Identical trajectories in one run are judged once per pass (issue 28, optional item).

Three identical trajectories (the same query and messages under three ids) cost 9 calls with a 3-pass panel:
nothing deduplicated within a run. Now each pass is asked once; the other ids reuse its verdict, at no cost.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from judge.panel import PanelConfig, run_panel
from judge.testing.servers import FakeLLMServer, Scripted
from judge.testing.synthetic import synthetic_batch

USAGE = {"input": 1000, "output": 10, "cached": 0}


def test_three_identical_trajectories_cost_three_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    original = synthetic_batch(1)[0][0]
    copies = [original.model_copy(update={"id": f"copy-{n}"}) for n in range(3)]
    assert len({t.content_hash() for t in copies}) == 1
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices:\n  '*': {input: 10.0, output: 10.0}\n")
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(usage=USAGE)) as fake:
        config = PanelConfig(judges=[f"openai-compatible:m@{fake.base_url}"], passes=3, concurrency=8,
                             no_shared_cache=True, prices=str(prices))
        result = asyncio.run(run_panel(copies, config, tmp_path, progress=False))
        assert fake.request_count == 3, f"{fake.request_count} calls for 3 passes over one content"
        again = asyncio.run(run_panel(copies, config, tmp_path, progress=False))
        assert fake.request_count == 3 and again.calls == 0
    verdicts = list(result.verdicts)
    assert sorted((v.trajectory_id, v.pass_index) for v in verdicts) == [
        (f"copy-{n}", p) for n in range(3) for p in (1, 2, 3)]
    assert all(v.status == "ok" for v in verdicts)
    paid = [v for v in verdicts if v.attempts]
    reused = [v for v in verdicts if not v.attempts]
    assert len(paid) == 3 and len(reused) == 6 and sorted(v.pass_index for v in paid) == [1, 2, 3]
    call = 1010 * 10 / 1e6
    assert all(v.cached and v.cost_usd == 0 and v.original_cost_usd == pytest.approx(call) for v in reused)
    assert result.cost_usd == pytest.approx(3 * call)  # the run's cost counts each paid call once
    assert again.cost_usd == pytest.approx(3 * call)  # and so does a rerun from the store
