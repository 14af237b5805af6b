"""Issue 24's speed budget, round P6B: what the analysis and the claim readers derive from a text alone (a receipt's
job state and tables, a sentence's numbers, an answer's sentences) is read once per config across analyses
(:meth:`~judge.facts.config.CompiledPatterns.read_once`): a batch's repeats and the offline editor's edited copies
read the same receipts again. The findings with those memos warm, in any order, must be the findings read afresh."""

from __future__ import annotations

import pytest
from test_facts_readback_contradictions import CASES, _trajectory

from judge.facts.config import default_config
from judge.rules import run_detectors


def _findings(name: str, query: str, steps: list[object]) -> list[tuple[int | None, str, str]]:
    trajectory = _trajectory("openai", name, query, steps)  # a new object: analysed afresh, its texts read again
    return [(i.turn, i.tag, i.description) for i in run_detectors(trajectory, config=default_config())]


def test_findings_with_warm_reader_memos_are_the_fresh_findings() -> None:
    memos = default_config().patterns.memo_readers
    fresh = {}
    for name, query, steps, _ in CASES:
        memos.clear()
        fresh[name] = _findings(name, query, steps)
    assert any(fresh.values())  # the table has findings to keep
    memos.clear()
    for order in (CASES, CASES[::-1], CASES):
        for name, query, steps, _ in order:
            assert _findings(name, query, steps) == fresh[name], name
    assert memos  # the readers did remember texts


@pytest.mark.parametrize("limit", [1, 2, 1000])
def test_read_once_reads_a_key_once_and_stays_bounded(limit: int, monkeypatch: pytest.MonkeyPatch) -> None:
    patterns = default_config().patterns
    monkeypatch.setattr(patterns, "memo_readers", {})
    monkeypatch.setattr(patterns, "MEMO_LIMIT", limit)
    calls: list[str] = []

    def read(text: str) -> list[str]:
        calls.append(text)
        return [text.upper()]

    texts = ["alpha", "beta", "alpha", "alpha", "beta"]
    values = [patterns.read_once("upper", text, lambda text=text: read(text), len(text)) for text in texts]
    assert values == [["ALPHA"], ["BETA"], ["ALPHA"], ["ALPHA"], ["BETA"]]
    # Each text is read once while it is remembered; a full memo is emptied and reads again.
    assert calls == (["alpha", "beta"] if limit >= 2 else ["alpha", "beta", "alpha", "beta"])
    assert len(patterns.memo_readers["upper"]) <= limit
    # Readers do not share a memo: another reader of the same text reads it.
    assert patterns.read_once("lower", "alpha", lambda: ["a"], 5) == ["a"]
