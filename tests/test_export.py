"""`judge export`: per-turn samples (history kept, only the current turn trained), query-disjoint split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge import rundir
from judge.export import (
    ExportOptions,
    anthropic_sample,
    exclusion_reason,
    expand,
    export_run,
    split_queries,
)
from judge.model import (
    Message,
    Receipt,
    ToolCall,
    Trajectory,
    TrajectoryMetadata,
    number_turns,
)
from judge.schema import ScoredIssue, ScoreRow


def make_trajectory(tid: str = "t1", query_id: str = "q1", reasoning: bool = True) -> Trajectory:
    messages = number_turns(
        [
            Message(role="system", content="You are a coding agent."),
            Message(role="user", content="Fix the bug."),
            Message(role="assistant", content="Let me look.", reasoning="think 1" if reasoning else None,
                    tool_calls=[ToolCall(id="c1", name="bash", arguments={"cmd": "ls"}, raw_arguments='{"cmd": "ls"}')]),
            Message(role="tool", content="a.py", receipt=Receipt(call_id="c1", name="bash", content="a.py")),
            Message(role="assistant", content="", reasoning="think 2" if reasoning else None,
                    tool_calls=[ToolCall(id="c2", name="edit", arguments={"path": "a.py"})]),
            Message(role="tool", content="error: no such line", receipt=Receipt(call_id="c2", content="error", is_error=True)),
            Message(role="assistant", content="Done.", reasoning="think 3" if reasoning else None),
        ]
    )
    return Trajectory(id=tid, query="Fix the bug.", query_id=query_id, messages=messages,
                      metadata=TrajectoryMetadata(source_format="openai"))


def score_row(tid: str, score: int | None = 4, release: bool = True, categories: tuple[str, ...] = ()) -> ScoreRow:
    issues = [ScoredIssue(cluster=f"c{i}", turn=1, category=c, severity="minor", description="x", votes=2)  # type: ignore[arg-type]
              for i, c in enumerate(categories)]
    return ScoreRow(trajectory_id=tid, score=score, reason="r", release=release, issues=issues, panel_size=3, valid_passes=3)


def test_one_sample_per_assistant_turn_with_full_history_and_only_the_last_turn_trained():
    rows = expand(make_trajectory())
    assert [r["turn"] for r in rows] == [1, 2, 3]
    for row in rows:
        assert (row["trajectory_id"], row["query_id"]) == ("t1", "q1")
        assistants = [m for m in row["messages"] if m["role"] == "assistant"]
        assert len(assistants) == row["turn"]
        assert [m["weight"] for m in assistants] == [0] * (row["turn"] - 1) + [1]
        assert row["messages"][-1]["role"] == "assistant"
        # native reasoning only on the trained turn
        assert [("reasoning" in m) for m in assistants] == [False] * (row["turn"] - 1) + [True]
        assert assistants[-1]["reasoning"] == f"think {row['turn']}"
    last = rows[2]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_openai_tool_calls_and_results_are_in_fine_tuning_format():
    messages = expand(make_trajectory())[2]["messages"]
    call = messages[2]["tool_calls"][0]
    assert call == {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}
    # arguments without source text are serialised to a JSON string
    assert json.loads(messages[4]["tool_calls"][0]["function"]["arguments"]) == {"path": "a.py"}
    assert messages[4]["content"] is None
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "a.py"}


def test_unpaired_tool_result_becomes_user_text():
    messages = number_turns([
        Message(role="user", content="go"),
        Message(role="assistant", content="```bash\nls\n```"),
        Message(role="tool", content="a.py", receipt=Receipt(content="a.py")),
        Message(role="assistant", content="done"),
    ])
    trajectory = Trajectory(id="t", query="go", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="x"))
    out = expand(trajectory)[1]["messages"]
    assert out[2]["role"] == "user" and out[2]["content"].endswith("a.py")
    assert all(m["role"] != "tool" for m in out)


def test_query_is_added_when_the_source_has_no_user_message():
    messages = number_turns([Message(role="system", content="s"), Message(role="assistant", content="hi")])
    trajectory = Trajectory(id="t", query="the task", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="x"))
    out = expand(trajectory)[0]["messages"]
    assert [m["role"] for m in out] == ["system", "user", "assistant"]
    assert out[1]["content"] == "the task"


def test_empty_assistant_message_is_not_a_target():
    messages = number_turns([Message(role="user", content="q"), Message(role="assistant", content=" "),
                             Message(role="user", content="more"), Message(role="assistant", content="ok")])
    trajectory = Trajectory(id="t", query="q", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="x"))
    assert [r["turn"] for r in expand(trajectory)] == [2]


def test_anthropic_form_alternates_masks_the_last_turn_and_keeps_thinking_only_there():
    sample = expand(make_trajectory(), "anthropic")[2]
    assert sample["system"] == "You are a coding agent."
    roles = [m["role"] for m in sample["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert sample["mask"] == [False] * 5 + [True]
    types = [[b["type"] for b in m["content"]] for m in sample["messages"]]
    assert types[1] == ["text", "tool_use"]  # no thinking on an untrained turn
    assert types[5] == ["thinking", "text"]
    result = sample["messages"][4]["content"][0]
    assert result == {"type": "tool_result", "tool_use_id": "c2", "content": "error: no such line", "is_error": True}


def test_anthropic_merges_tool_results_with_following_user_text():
    messages = number_turns([
        Message(role="user", content="q"),
        Message(role="assistant", content="", tool_calls=[ToolCall(id="a", name="x", arguments={})]),
        Message(role="tool", content="r", receipt=Receipt(call_id="a", content="r")),
        Message(role="user", content="and now?"),
        Message(role="assistant", content="ok"),
    ])
    sample = anthropic_sample(messages)
    assert [m["role"] for m in sample["messages"]] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in sample["messages"][2]["content"]] == ["tool_result", "text"]


@pytest.mark.parametrize(
    ("row", "options", "expected"),
    [
        (None, ExportOptions(), "not scored"),
        (score_row("t", release=False), ExportOptions(), "not released"),
        (score_row("t", release=False, score=3), ExportOptions(include_unreleased=True), None),
        (score_row("t", score=4), ExportOptions(min_score=5), "score 4 below --min-score 5"),
        (score_row("t", score=None, release=False), ExportOptions(include_unreleased=True, min_score=2), "score None below --min-score 2"),
        (score_row("t", score=5), ExportOptions(min_score=5), None),
        (score_row("t", categories=("code",)), ExportOptions(exclude_categories=("code",)), "has a majority code issue (excluded category)"),
        (score_row("t", categories=("semantic",)), ExportOptions(exclude_categories=("code",)), None),
    ],
)
def test_filters(row, options, expected):
    assert exclusion_reason(row, options) == expected


@pytest.mark.parametrize("test_size", [0.1, 0.25, 0.5])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_split_is_by_query_deterministic_and_near_the_ratio(test_size, seed):
    counts = {f"q{i}": 1 + i % 4 for i in range(60)}
    test = split_queries(counts, test_size, seed)
    assert test == split_queries(dict(reversed(list(counts.items()))), test_size, seed)  # input order does not matter
    held = sum(counts[q] for q in test)
    total = sum(counts.values())
    assert test_size * total <= held <= test_size * total + 4  # overshoot at most one query
    assert set(counts) - test  # train side never empty


def test_split_changes_with_the_seed_and_handles_degenerate_inputs():
    counts = {f"q{i}": 1 for i in range(50)}
    assert split_queries(counts, 0.2, 0) != split_queries(counts, 0.2, 1)
    assert split_queries(counts, 0.0, 0) == set()
    assert split_queries({"only": 5}, 0.5, 0) == set()
    assert len(split_queries({"a": 1, "b": 1}, 0.01, 0)) == 1


def test_reference_design_sized_batch_splits_disjoint_by_query():
    # 207 trajectories over 69 queries (3 trials each), ~10% test, like the reference design's 186/21.
    counts = {f"task-{i}": 3 for i in range(69)}
    test = split_queries(counts, 21 / 207, seed=0)
    assert sum(counts[q] for q in test) == 21


def write_run(run_dir: Path, trajectories: list[Trajectory], scores: list[ScoreRow]) -> None:
    rundir.write_jsonl(run_dir / rundir.TRAJECTORIES, trajectories)
    rundir.write_jsonl(run_dir / rundir.SCORES, scores)


def test_export_run_writes_files_counts_and_keeps_queries_on_one_side(tmp_path: Path):
    trajectories = [make_trajectory(f"t{i}", f"q{i // 3}") for i in range(30)]  # 10 queries x 3 trials
    scores = [score_row(t.id) for t in trajectories]
    scores[0] = score_row("t0", release=False)
    write_run(tmp_path / "run", trajectories, scores)
    record = export_run(tmp_path / "run", tmp_path / "out", ExportOptions(test_size=0.2, seed=3))

    train = [json.loads(l) for l in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    test = [json.loads(l) for l in (tmp_path / "out" / "test.jsonl").read_text().splitlines()]
    assert {r["query_id"] for r in train}.isdisjoint({r["query_id"] for r in test})
    assert all({"trajectory_id", "query_id", "turn", "messages"} <= set(r) for r in train + test)
    assert record["train"]["samples"] == len(train) and record["test"]["samples"] == len(test)
    assert record["train"]["trajectories"] + record["test"]["trajectories"] == 29
    assert len(train) + len(test) == 29 * 3
    assert record["excluded"] == {"trajectories": 1, "by_reason": {"not released": 1}}
    assert record["disjoint_by_query"] is True and record["query_overlap"] == []
    assert json.loads((tmp_path / "out" / "split.json").read_text()) == record
    # deterministic: same seed, same files
    again = export_run(tmp_path / "run", tmp_path / "out2", ExportOptions(test_size=0.2, seed=3))
    assert again["test_queries"] == record["test_queries"]
    assert (tmp_path / "out2" / "test.jsonl").read_text() == (tmp_path / "out" / "test.jsonl").read_text()


def test_cli_export_prints_counts_and_rejects_missing_run(tmp_path: Path):
    from judge.cli import app

    trajectories = [make_trajectory(f"t{i}", f"q{i}") for i in range(10)]
    write_run(tmp_path / "run", trajectories, [score_row(t.id) for t in trajectories])
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--out", str(tmp_path / "o"), "--format", "anthropic",
                                      "--test-size", "0.2"])
    assert result.exit_code == 0, result.output
    assert "train: 8 trajectories, 8 queries, 24 samples" in result.output
    assert "split disjoint by query: yes" in result.output
    row = json.loads((tmp_path / "o" / "train.jsonl").read_text().splitlines()[0])
    assert "mask" in row and "system" in row
    missing = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["export", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert missing.exit_code == 1  # a usage/input error (README exit-code table)
    assert "trajectories.jsonl not found: `judge export` needs a scored run directory" in missing.output


DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


@pytest.mark.shared
def test_tau_airline_trials_of_one_task_stay_on_one_side(tmp_path: Path):
    """200 real trajectories = 50 tasks x 4 trials: the split must keep every task's trials together."""
    source = DATASETS / "tau_bench_trajectories" / "gpt-4o-airline.json"
    if not source.exists():
        pytest.skip(f"shared dataset not available: {source}")
    from judge.pipeline import import_to_run
    from judge.rundir import RunDir

    run = tmp_path / "run"
    import_to_run([source], run, None)
    trajectories = list(RunDir(run).trajectories())
    # Scores are made up here (all released): this test is about the split, not the gate.
    rundir.write_jsonl(run / rundir.SCORES, [score_row(t.id) for t in trajectories])
    record = export_run(run, tmp_path / "out", ExportOptions(test_size=0.1, seed=0))
    assert record["train"]["queries"] + record["test"]["queries"] == 50
    assert (record["train"]["trajectories"], record["test"]["trajectories"]) == (180, 20)
    assert record["disjoint_by_query"] is True
    sides = {}
    for side in ("train", "test"):
        for line in (tmp_path / "out" / f"{side}.jsonl").read_text().splitlines():
            row = json.loads(line)
            assert sides.setdefault(row["query_id"], side) == side
    # one sample per assistant message with content or calls (SOURCE.md: 2,454 assistant messages)
    assert record["train"]["samples"] + record["test"]["samples"] + record["skipped_empty_turns"] == 2454


def test_tool_definitions_from_metadata_are_carried_on_every_sample():
    trajectory = make_trajectory()
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    trajectory.metadata.extra["tools"] = tools
    assert all(row["tools"] == tools for row in expand(trajectory))
    assert all("tools" not in row for row in expand(make_trajectory()))


def test_a_leaking_split_is_refused_and_leaves_no_files(tmp_path: Path, monkeypatch):
    from judge import export

    trajectories = [make_trajectory(f"t{i}", "q0") for i in range(2)] + [make_trajectory("t9", "q9")]
    write_run(tmp_path / "run", trajectories, [score_row(t.id) for t in trajectories])

    class Flaky(set):
        """A broken split: membership of q0 flips on every look, so its two trajectories land on both sides."""

        answer = False

        def __contains__(self, item: object) -> bool:
            if item != "q0":
                return False
            Flaky.answer = not Flaky.answer
            return Flaky.answer

    monkeypatch.setattr(export, "split_queries", lambda counts, size, seed: Flaky())
    with pytest.raises(export.SplitLeakError, match="q0"):
        export.export_run(tmp_path / "run", tmp_path / "out", ExportOptions(test_size=0.2))
    assert not (tmp_path / "out" / "train.jsonl").exists() and not (tmp_path / "out" / "test.jsonl").exists()
    assert not (tmp_path / "out" / "split.json").exists()
