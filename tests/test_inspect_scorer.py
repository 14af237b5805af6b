"""judge.inspect.trajudge inside a real ``inspect_ai.eval`` run (inspect's mockllm model: no network), then the
eval's log back through ``judge import`` and ``judge score``, and ``inspect score --scorer judge/trajudge``
through the package's entry point. The importer's handling of trajudge scores is checked without inspect too."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.importers import load_trajectories
from judge.rundir import RunDir
from trajudge_socket_guard import child_pythonpath

ROOT = Path(__file__).resolve().parents[1]
needs_inspect = pytest.mark.skipif(find_spec("inspect_ai") is None,
                                   reason="inspect_ai is not installed (pip install -e '.[inspect]')")
runner = CliRunner()

# Each sample's model answers, by the sample's input: tool calls first, then the final text.
SCRIPTS: dict[str, list[tuple[str, dict[str, Any]] | str]] = {
    "Run the tests in tests/ and report.": [("run_tests", {"path": "tests"}), "All 3 tests pass."],
    "Run the tests, they live somewhere.": [("run_tests", {"path": "bad"}), ("run_tests", {"path": "tests"}),
                                            "All 3 tests pass."],
    "Say nothing.": [],  # the solver does not call the model: no assistant turn, nothing to judge
}


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """One eval of three samples with the trajudge scorer and inspect's own ``includes`` scorer."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.tool import ToolError, tool

    from judge.inspect import trajudge

    @tool
    def run_tests():  # type: ignore[no-untyped-def]
        async def execute(path: str) -> str:
            """Run the test suite of a folder.

            Args:
                path: the folder with the tests
            """
            if path != "tests":
                raise ToolError(f"no such folder: {path}")
            return "3 passed in 0.02s"

        return execute

    @solver
    def agent():  # type: ignore[no-untyped-def]
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if not SCRIPTS[state.input_text]:
                return state
            state.tools = [run_tests()]
            return await generate(state)  # the tool loop: calls run, results go back to the model

        return solve

    def respond(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        prompt = next(m.text for m in messages if m.role == "user")
        step = SCRIPTS[prompt][sum(1 for m in messages if m.role == "assistant")]
        output = (ModelOutput.for_tool_call("mockllm/model", step[0], step[1]) if isinstance(step, tuple)
                  else ModelOutput.from_content("mockllm/model", step))
        output.usage = ModelUsage(input_tokens=20, output_tokens=5, total_tokens=25)  # else mockllm counts with tiktoken
        return output

    dataset = [Sample(input=prompt, target="pass", id=f"s{i}") for i, prompt in enumerate(SCRIPTS, start=1)]
    task = Task(name="tiny", dataset=dataset, solver=agent(), scorer=[trajudge(embedder="lexical", task="tiny"), includes()])
    log_dir = tmp_path_factory.mktemp("inspect-logs")
    logs = eval(task, model=get_model("mockllm/model", custom_outputs=respond), log_dir=str(log_dir),
                log_format="json", display="none")
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return logs[0], Path(logs[0].location)


def _scores(log: Any) -> dict[str, Any]:
    return {sample.id: sample.scores["trajudge"] for sample in log.samples}


@needs_inspect
def test_the_scorer_gives_the_2_to_5_score_and_no_zero_for_an_unscored_sample(eval_log: tuple[Any, Path]) -> None:
    log, _ = eval_log
    scores = _scores(log)
    for sample_id in ("s1", "s2"):
        assert scores[sample_id].value in (2, 3, 4, 5)
        metadata = scores[sample_id].metadata
        assert metadata["trajectory_id"] == f"inspect-tiny-{sample_id}-e1" and metadata["panel"] == ["rules#1"]
        assert isinstance(metadata["release"], bool) and isinstance(metadata["issues"], list)
    # the failed call of s2 is a majority issue of the one-pass panel; s1 has none
    assert scores["s1"].metadata["issues"] == [] and scores["s1"].value == 4 and scores["s1"].metadata["release"]
    assert any(issue["turn"] == 1 and issue["category"] == "code" for issue in scores["s2"].metadata["issues"])
    assert scores["s1"].answer == scores["s2"].answer == "All 3 tests pass."  # the judged agent's final text
    silent = scores["s3"]
    assert silent.answer is None  # it never wrote any
    assert isinstance(silent.value, float) and math.isnan(silent.value)  # inspect's "no score": metrics skip it
    assert silent.reason == "no_response" and silent.metadata["unscored_passes"] == {"no_assistant_turn": 1}
    mean = next(m for m in log.results.scores if m.name == "trajudge").metrics["mean"].value
    assert mean == pytest.approx((scores["s1"].value + scores["s2"].value) / 2)  # s3 left out, not counted as 0


@needs_inspect
def test_the_log_round_trips_into_judge_import_with_the_judgment_kept_apart(eval_log: tuple[Any, Path], tmp_path: Path) -> None:
    log, path = eval_log
    out = tmp_path / "imported.jsonl"
    result = runner.invoke(app, ["import", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    trajectories = {t.metadata.extra["sample_id"]: t for t in load_trajectories(out)}
    assert sorted(trajectories) == ["s1", "s2", "s3"]
    scores = _scores(log)
    for sample_id, trajectory in trajectories.items():
        judged = trajectory.metadata.extra["trajudge"]["trajudge"]
        score = scores[sample_id]
        assert judged["score"] == (None if math.isnan(score.value) else score.value)
        assert judged["release"] == score.metadata["release"] and judged["issues"] == score.metadata["issues"]
        assert trajectory.id == score.metadata["trajectory_id"]
        # the recorded result comes from `includes` only: a judgment is not a reward, NaN is not unreadable
        outcome = trajectory.metadata.task_outcome
        assert outcome is not None and outcome.source == "scores.includes" and not outcome.unreadable
    assert trajectories["s1"].metadata.task_outcome.status == "success"  # type: ignore[union-attr]
    assert trajectories["s3"].metadata.task_outcome.status == "failure"  # type: ignore[union-attr]
    # the tool calls and their results (an error included) and the tools offered came through
    receipts = [m.receipt for m in trajectories["s2"].messages if m.receipt is not None]
    assert [r.is_error for r in receipts] == [True, False] and receipts[1].content == "3 passed in 0.02s"
    assert [t.name for t in trajectories["s2"].metadata.tools] == ["run_tests"]


@needs_inspect
def test_an_eval_format_log_imports_like_the_json_one(eval_log: tuple[Any, Path], tmp_path: Path) -> None:
    """inspect's default log format, ``.eval`` (a zip with zstd members), read through inspect_ai itself."""
    from inspect_ai.log import write_eval_log

    log, path = eval_log
    zipped = tmp_path / "logs" / "tiny.eval"
    zipped.parent.mkdir()
    write_eval_log(log, str(zipped), format="eval")
    from_json = load_trajectories(path)
    from_eval = load_trajectories(tmp_path / "logs")  # found by the folder walk
    assert len(from_eval) == 3
    for a, b in zip(from_json, from_eval):
        assert b.metadata.source_file == str(zipped)
        b.metadata.source_file = a.metadata.source_file
        assert a.model_dump() == b.model_dump()


def test_an_eval_log_without_inspect_installed_is_a_clear_reject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.importers import iter_records

    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if the extra were not installed
    path = tmp_path / "run.eval"
    path.write_bytes(b"PK")
    [reject] = list(iter_records(path))
    assert "needs inspect_ai" in reject.reason and "inspect log convert" in reject.reason


@needs_inspect
def test_a_broken_eval_log_is_a_reject_naming_the_file(tmp_path: Path) -> None:
    from judge.importers import iter_records

    path = tmp_path / "broken.eval"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    [reject] = list(iter_records(path))
    assert reject.source_file == str(path) and "cannot read the .eval log" in reject.reason


@needs_inspect
def test_judge_score_on_the_log_agrees_with_the_scorer(eval_log: tuple[Any, Path], tmp_path: Path) -> None:
    log, path = eval_log
    result = runner.invoke(app, ["score", str(path), "--out", str(tmp_path / "run"), "--embedder", "lexical"])
    assert result.exit_code == 4, result.output  # s3's pass is unscored no_assistant_turn
    by_id = RunDir(tmp_path / "run").scores_by_trajectory()
    for score in _scores(log).values():
        row = by_id[score.metadata["trajectory_id"]]
        assert row.score == (None if math.isnan(score.value) else score.value)
        assert row.release == score.metadata["release"] and row.reason == score.explanation


@needs_inspect
def test_inspect_score_finds_the_scorer_through_the_entry_point(eval_log: tuple[Any, Path], tmp_path: Path) -> None:
    """``inspect score LOG --scorer judge/trajudge``: inspect loads the ``inspect_ai`` entry point named after the
    namespace. The package's own entry point is installed with it; here a distribution in tmp_path declares the
    same one as pyproject.toml, so the checkout under test is what inspect loads."""
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    assert declared == {"judge": "judge.inspect"}
    info = tmp_path / "site" / "trajudge_under_test-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: trajudge-under-test\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[inspect_ai]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    _, path = eval_log
    rescored = tmp_path / "rescored.json"
    command = [sys.executable, "-m", "inspect_ai", "score", str(path), "--scorer", "judge/trajudge", "-S", "embedder=lexical",
               "--action", "overwrite", "--output-file", str(rescored), "--display", "none"]
    env = {**os.environ, "PYTHONPATH": child_pythonpath(ROOT, tmp_path / "site"), "INSPECT_LOG_DIR": str(tmp_path)}
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    samples = {s["id"]: s["scores"]["trajudge"] for s in json.loads(rescored.read_text())["samples"]}
    assert samples["s1"]["value"] == 4 and samples["s1"]["metadata"]["trajudge_version"]


# --- the importer, without inspect ----------------------------------------------------------------------


def _sample(scores: dict[str, Any]) -> dict[str, Any]:
    return {"eval": {"task": "t", "model": "m"}, "samples": [{
        "id": 1, "epoch": 1, "input": "Fix it.", "scores": scores,
        "messages": [{"role": "user", "content": "Fix it."}, {"role": "assistant", "content": "Fixed."}]}]}


JUDGMENT = {"value": 4, "explanation": "no majority issue", "metadata": {"trajudge_version": "0.1.0", "release": True, "issues": []}}
UNSCORED = {"value": float("nan"), "reason": "grader_failed", "metadata": {"trajudge_version": "0.1.0", "release": False}}


@pytest.mark.parametrize(
    ("scores", "status", "judged"),
    [
        ({"trajudge": JUDGMENT}, "unknown", 4),  # a 4 is not a reward of 4
        ({"trajudge": UNSCORED}, "unknown", None),  # NaN is not an unreadable result
        ({"trajudge": JUDGMENT, "match": {"value": "I"}}, "failure", 4),
        ({"match": {"value": "C"}, "trajudge": UNSCORED}, "success", None),
        ({"match": {"value": float("nan")}}, "unknown", "absent"),  # another scorer's NaN stays what it was
    ],
)
def test_the_importer_keeps_trajudge_judgments_out_of_the_task_outcome(scores: dict[str, Any], status: str, judged: Any,
                                                                       tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text(json.dumps(_sample(scores)))  # NaN written as inspect writes it
    [trajectory] = load_trajectories(path)
    outcome = trajectory.metadata.task_outcome
    assert outcome is not None
    if judged == "absent":
        assert "trajudge" not in trajectory.metadata.extra and outcome.unreadable
        return
    assert outcome.status == status and not outcome.unreadable
    assert trajectory.metadata.reward is None or "match" in scores
    kept = trajectory.metadata.extra["trajudge"]["trajudge"]
    assert kept["score"] == judged and kept["release"] is scores["trajudge"]["metadata"]["release"]


def test_the_scorer_module_uses_only_inspects_public_api() -> None:
    """No ``inspect_ai._private`` module: those may change in any release (issue 26)."""
    import ast

    tree = ast.parse((ROOT / "judge" / "inspect.py").read_text(encoding="utf-8"))
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    private = [name for name in imported if name.startswith("inspect_ai") and any(part.startswith("_") for part in name.split("."))]
    assert private == []
