"""``judge score`` through the CLI: import, panel (rules or LLM via a local fake server), scoring, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge import rundir
from judge.cli import app
from judge.schema import Verdict
from judge.testing.servers import FakeLLMServer
from judge.testing.synthetic import synthetic_batch

runner = CliRunner()


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    trajectories, _ = synthetic_batch(3)
    path = tmp_path / "batch.jsonl"
    path.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    return path


def score(*args: str):
    result = runner.invoke(app, ["score", *args, "--embedder", "lexical"])
    return result


def verdicts(run_dir: Path) -> list[Verdict]:
    return list(rundir.read_jsonl(run_dir / rundir.VERDICTS, Verdict))


def test_default_is_the_offline_rules_judge(batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = score(str(batch), "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert "imported 3, rejected 0" in result.output
    assert "panel: 1 pass(es): rules#1" in result.output
    assert "scores (3 trajectories)" in result.output
    rows = verdicts(tmp_path / "run")
    assert [v.pass_key for v in rows] == ["rules#1"] * 3 and all(v.deterministic for v in rows)
    assert (tmp_path / "run" / "scores.jsonl").exists()


def test_llm_panel_through_a_local_server_then_cached(batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai") as fake:
        args = [str(batch), "--out", str(tmp_path / "run"), "--judge", "openai:judge-model", "--base-url", fake.base_url,
                "--concurrency", "3", "--timeout", "30"]
        first = score(*args)
        assert first.exit_code == 0, first.output
        assert fake.request_count == 9 and "calls made: 9" in first.output
        assert fake.requests[0]["model"] == "judge-model"
        second = score(*args)
        assert second.exit_code == 0, second.output
        assert fake.request_count == 9 and "calls made: 0" in second.output and "(9 from cache)" in second.output
    rows = verdicts(tmp_path / "run")
    assert len(rows) == 9 and {v.pass_index for v in rows} == {1, 2, 3}
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["panel"]["size"] == 3


def test_config_file_with_flag_override(batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai") as fake:
        config = tmp_path / "panel.yaml"
        config.write_text(f"judges: ['openai-compatible:m@{fake.base_url}']\npasses: 2\nconcurrency: 2\n")
        result = score(str(batch), "--out", str(tmp_path / "run"), "--config", str(config), "--passes", "1")
        assert result.exit_code == 0, result.output
        assert fake.request_count == 3


def test_nothing_imported_exits_non_zero(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json at all\n")
    result = score(str(bad), "--out", str(tmp_path / "run"))
    assert result.exit_code == 1
    assert "imported 0" in result.output


def test_strict_fails_on_rejects_but_still_scores(batch: Path, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(batch.read_text() + "{broken\n")
    result = score(str(mixed), "--out", str(tmp_path / "run"), "--strict")
    assert "imported 3, rejected 1" in result.output
    assert result.exit_code == 1
    assert (tmp_path / "run" / "scores.jsonl").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--judge", "nosuch:model"], "unknown judge"),
        (["--judge", "openai-compatible:m"], "needs a server URL"),
        (["--judge", "openai:gpt-4o"], "OPENAI_API_KEY is not set"),
        (["--judge", "replay:/no/such/run"], "no verdicts"),
    ],
)
def test_bad_judge_specs_are_clear_errors(batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    result = score(str(batch), "--out", str(tmp_path / "run"), *args)
    assert result.exit_code != 0
    assert message in result.output
