"""An emptied, foreign or replaced store.sqlite cannot make a run forget its spend (issue 28 item 5, second half).

Before: with run.json recording spend and a cap, a deleted or swapped store.sqlite was taken as a new run - the
spend forgotten, the cap allowing it all again, 44 more calls, no warning. Now `judge score` stops (exit 1) with a
message naming run.json, store.sqlite and --reset-store; with --reset-store it goes on, keeping run.json's cap.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from adversarial.paidrun import FIXED_USAGE, score, setup_run
from judge.store import RunStore
from judge.testing.servers import FakeLLMServer, Scripted

# A call reserves about $0.022 (max-tokens 100) and costs $0.01: 0.025 allows one call, 0.045 two more after it.
FIRST_CAP, CAP = "0.025", "0.045"
SETTINGS = "no-shared-cache: true\nconcurrency: 1\n"  # each run pays for its own answers, one at a time


def drop_store(run_dir: Path) -> None:
    for name in ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm"):
        (run_dir / name).unlink(missing_ok=True)


def deleted(run_dir: Path, other: Path, older: Path) -> None:
    drop_store(run_dir)


def emptied(run_dir: Path, other: Path, older: Path) -> None:
    drop_store(run_dir)
    (run_dir / "store.sqlite").write_bytes(b"")


def foreign(run_dir: Path, other: Path, older: Path) -> None:
    drop_store(run_dir)
    shutil.copy(other / "store.sqlite", run_dir / "store.sqlite")


def older_copy(run_dir: Path, other: Path, older: Path) -> None:
    drop_store(run_dir)
    shutil.copy(older, run_dir / "store.sqlite")


@pytest.mark.parametrize("replace", [deleted, emptied, foreign, older_copy], ids=lambda f: f.__name__)
def test_a_store_that_lost_the_runs_spend_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        replace: Callable[[Path, Path, Path], None]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    batch, config = setup_run(tmp_path, settings=SETTINGS)
    run_dir, other, older = tmp_path / "run", tmp_path / "other", tmp_path / "older.sqlite"
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(usage=FIXED_USAGE)) as fake:
        assert score(batch, config, other, fake.base_url, "--max-cost", FIRST_CAP).exit_code == 3  # another run
        assert score(batch, config, run_dir, fake.base_url, "--max-cost", FIRST_CAP).exit_code == 3  # 1 call
        with RunStore.for_run(run_dir) as store:
            assert store.spent_usd() == pytest.approx(0.01)
        shutil.copy(run_dir / "store.sqlite", older)  # a copy taken then (a backup, a sync conflict...)
        assert score(batch, config, run_dir, fake.base_url, "--max-cost", CAP).exit_code == 3  # 2 more calls
        assert json.loads((run_dir / "run.json").read_text())["budget"]["spent_usd"] == pytest.approx(0.03)

        replace(run_dir, other, older)
        before = fake.request_count
        stopped = score(batch, config, run_dir, fake.base_url)
        assert fake.request_count == before, "a store that lost the run's spend was used: the cap forgot $0.03"
        assert stopped.exit_code == 1, stopped.output
        message = " ".join(stopped.output.split())
        assert str(run_dir / "run.json") in message and str(run_dir / "store.sqlite") in message
        assert "$0.0300 spent" in message and "--reset-store" in message and "Traceback" not in message

        taken = score(batch, config, run_dir, fake.base_url, "--reset-store")
        assert "--reset-store" in taken.output and "warning" in taken.output
        assert taken.exit_code == 3, taken.output  # run.json's cap holds for the store taken on
        with RunStore.for_run(run_dir) as store:
            assert store.setting("max_cost_usd") == pytest.approx(0.045)
            assert store.spent_usd() <= 0.045 + 1e-9
            store_id = store.setting("store_id")
        budget = json.loads((run_dir / "run.json").read_text())["budget"]
        assert budget["store_id"] == store_id and budget["spent_usd"] <= 0.045 + 1e-9

        calls = fake.request_count
        again = score(batch, config, run_dir, fake.base_url)  # the store is the run's now: no flag needed
        assert again.exit_code == 3 and fake.request_count == calls, again.output


def test_a_run_recorded_before_store_ids_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run.json without a store id (written by an earlier version) is checked by its spend alone."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    batch, config = setup_run(tmp_path, settings=SETTINGS)
    run_dir = tmp_path / "run"
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(usage=FIXED_USAGE)) as fake:
        assert score(batch, config, run_dir, fake.base_url, "--max-cost", CAP).exit_code == 3
        manifest = json.loads((run_dir / "run.json").read_text())
        manifest["budget"].pop("store_id")
        (run_dir / "run.json").write_text(json.dumps(manifest))
        resumed = score(batch, config, run_dir, fake.base_url, "--max-cost", "1")
        assert resumed.exit_code == 0, resumed.output
        assert fake.request_count == 6
        with RunStore.for_run(run_dir) as store:
            assert json.loads((run_dir / "run.json").read_text())["budget"]["store_id"] == store.setting("store_id")
