"""Answers and usage are bounded (issue 28 item 5, first half).

A 400k-character answer claiming 100k output tokens took a $0.50 cap to $0.80, and 20 MB answers were accepted as
`ok` and stored in verdicts, store and shared cache. Now an answer over the size limit is unscored
`answer_too_large`, output tokens above the request's max_tokens (with a margin) are unscored `usage_implausible`,
both are charged at their worst case (the reservation: max_tokens priced), and neither is kept whole anywhere.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from judge.model import Usage
from judge.panel import PanelConfig, run_panel
from judge.store import RunStore
from judge.testing.servers import FakeLLMServer, Scripted
from judge.testing.synthetic import synthetic_batch

MARK = "END-OF-THE-HUGE-ANSWER"
ANSWER_TOO_LARGE, USAGE_IMPLAUSIBLE = "answer_too_large", "usage_implausible"  # the README's reason codes
BOUND_100 = 100 + 10 + 64  # max_tokens 100: believed up to 10% and 64 tokens over


def verdict_of(size: int) -> str:
    """A valid verdict of about ``size`` characters whose last words are :data:`MARK`."""
    return json.dumps({"reasoning": "x" * max(0, size - 80) + MARK, "issues": [], "efficiency": "high"})


@pytest.mark.parametrize(("chars", "output", "max_tokens", "limit", "reason"), [
    (100, 100, 100, 1000, None),
    (100, BOUND_100, 100, 1000, None),  # the margin
    (100, BOUND_100 + 1, 100, 1000, USAGE_IMPLAUSIBLE),
    (100, 100_000, 4096, 262_144, USAGE_IMPLAUSIBLE),
    (1001, 10, 100, 1000, ANSWER_TOO_LARGE),
    (400_000, 100_000, 4096, 262_144, ANSWER_TOO_LARGE),  # both: the size is named
    (100, None, 100, 1000, None),  # unknown usage: nothing to disbelieve
    (5000, 100_000, None, None, None),  # no bound set (a caller that gave none)
])
def test_over_bounds(chars: int, output: int | None, max_tokens: int | None, limit: int | None,
                     reason: str | None) -> None:
    from judge.pricing import over_bounds  # (main has none: the other tests of this file fail there one by one)

    found = over_bounds(chars, Usage(input_tokens=10, output_tokens=output), max_tokens, limit)
    assert (found[0] if found else None) == reason


def config(tmp_path: Path, url: str, **extra: Any) -> PanelConfig:
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices:\n  '*': {input: 10.0, output: 10.0}\n")
    return PanelConfig(judges=[f"openai-compatible:m@{url}"], passes=1, concurrency=1, max_retries=0, max_tokens=100,
                       prices=str(prices), cache_dir=str(tmp_path / "cache"), **extra)


def test_a_huge_answer_claiming_huge_usage_cannot_pass_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    trajectories, _ = synthetic_batch(5)
    huge = Scripted.ok(verdict_of(400_000), usage={"input": 1000, "output": 100_000, "cached": 0})  # $1.01 as claimed
    run_dir = tmp_path / "run"
    with FakeLLMServer("openai", responder=lambda request: huge) as fake:
        result = asyncio.run(run_panel(trajectories, config(tmp_path, fake.base_url, max_cost_usd=0.5), run_dir,
                                       progress=False))
    budget = json.loads((run_dir / "run.json").read_text())["budget"]
    assert budget["spent_usd"] <= 0.5  # each call counts at its worst case (about $0.02 at max_tokens 100)
    assert fake.request_count == 5  # and so the cap lets every pass be tried
    verdicts = list(result.verdicts)
    assert {(v.status, v.reason) for v in verdicts} == {("unscored", ANSWER_TOO_LARGE)}
    assert "over the limit of 262,144 (max-answer-chars)" in (verdicts[0].detail or "")
    with RunStore.for_run(run_dir) as store:
        attempts = store.attempts()
        assert all(a["cost_usd"] is None and a["reserved_usd"] > 0 for a in attempts)
        assert store.spent_usd() == pytest.approx(sum(a["reserved_usd"] for a in attempts))


def test_output_tokens_above_max_tokens_are_not_believed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    trajectories, _ = synthetic_batch(2)
    claims = iter([10, 100_000])  # within max_tokens 100, then 1000x over

    def responder(request: dict[str, Any]) -> Scripted:
        return Scripted.ok(usage={"input": 1000, "output": next(claims), "cached": 0})

    run_dir = tmp_path / "run"
    with FakeLLMServer("openai", responder=responder) as fake:
        result = asyncio.run(run_panel(trajectories, config(tmp_path, fake.base_url, max_cost_usd=5.0), run_dir,
                                       progress=False))
    believed, implausible = sorted(result.verdicts, key=lambda v: v.status)
    assert believed.status == "ok" and believed.cost_usd == pytest.approx(1010 * 10 / 1e6)
    assert implausible.status == "unscored" and implausible.reason == USAGE_IMPLAUSIBLE
    assert "100,000 output tokens" in (implausible.detail or "")
    assert implausible.raw  # a small answer is kept to look at
    with RunStore.for_run(run_dir) as store:
        charged = [a for a in store.attempts() if a["trajectory_id"] == implausible.trajectory_id]
        assert [a["cost_usd"] for a in charged] == [None] and charged[0]["reserved_usd"] < 0.05  # max_tokens priced, not $1
        assert "not believed" in charged[0]["note"]


def test_a_large_answer_is_stored_once_as_an_excerpt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    trajectories, _ = synthetic_batch(2)
    run_dir = tmp_path / "run"
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(verdict_of(2_000_000))) as fake:
        asyncio.run(run_panel(trajectories, config(tmp_path, fake.base_url), run_dir, progress=False))
    written = [path for path in [*run_dir.rglob("*"), *(tmp_path / "cache").rglob("*")] if path.is_file()]
    assert written
    for path in written:
        data = path.read_bytes()
        assert MARK.encode() not in data, f"{path} holds the whole answer"
        assert len(data) < 200_000, f"{path} is {len(data)} bytes after two 2 MB answers"


def test_the_answer_limit_is_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    trajectories, _ = synthetic_batch(1)
    answer = Scripted.ok(verdict_of(5000), usage={"input": 1000, "output": 90, "cached": 0})
    with FakeLLMServer("openai", responder=lambda request: answer) as fake:
        default = asyncio.run(run_panel(trajectories, config(tmp_path, fake.base_url, no_shared_cache=True),
                                        tmp_path / "a", progress=False))
        strict = asyncio.run(run_panel(trajectories, config(tmp_path, fake.base_url, no_shared_cache=True,
                                                            max_answer_chars=1000), tmp_path / "b", progress=False))
    assert [v.status for v in default.verdicts] == ["ok"]
    assert [(v.status, v.reason) for v in strict.verdicts] == [("unscored", ANSWER_TOO_LARGE)]
    assert PanelConfig.model_validate({"max_answer_chars": 1000}).max_answer_chars == 1000
