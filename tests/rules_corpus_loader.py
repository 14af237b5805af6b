"""Load the rules corpus (tests/fixtures/rules_corpus/*.jsonl) through the real importers, with its truth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judge.importers import load_trajectories
from judge.model import Trajectory

CORPUS = Path(__file__).resolve().parent / "fixtures" / "rules_corpus"


def load_corpus() -> list[Trajectory]:
    """Every corpus trajectory; the importers reject nothing here (a reject raises, naming file and line)."""
    return load_trajectories(sorted(CORPUS.glob("*.jsonl")))


def expected_of(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The per-turn truth written into the record's ``metadata.expected``."""
    expected = trajectory.metadata.extra.get("expected")
    if not isinstance(expected, list):
        raise KeyError(f"{trajectory.id}: no metadata.expected list in the corpus record")
    return expected
