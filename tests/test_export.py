"""`judge export`: one weighted sample per trajectory (or per turn), ids in the index, reasoning per target,
tool schemas, the Hugging Face folder, the OpenAI format check, and the query-disjoint split."""

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
    export_run,
    samples,
    split_queries,
    trained_turns,
)
from judge.export_check import TOP_LEVEL_KEYS, check_openai_file, example_errors, example_tokens
from judge.model import (
    Message,
    Receipt,
    ThinkingBlock,
    ToolCall,
    ToolSpec,
    Trajectory,
    TrajectoryMetadata,
    number_turns,
)
from judge.schema import ScoredIssue, ScoreRow

TOOLS = [ToolSpec(name="bash", description="Run a shell command.", parameters={"type": "object", "properties": {"cmd": {"type": "string"}}}),
         ToolSpec(name="edit")]


def make_trajectory(tid: str = "t1", query_id: str = "q1", reasoning: bool = True, tools: bool = False) -> Trajectory:
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
                      metadata=TrajectoryMetadata(source_format="openai", tools=TOOLS if tools else []))


def score_row(tid: str, score: int | None = 4, release: bool = True, categories: tuple[str, ...] = (),
              turns: tuple[int | None, ...] = (), environment: tuple[int | None, ...] = ()) -> ScoreRow:
    issues = [ScoredIssue(cluster=f"c{i}", turn=1, category=c, severity="minor", description="x", votes=2)  # type: ignore[arg-type]
              for i, c in enumerate(categories)]
    issues += [ScoredIssue(cluster=f"t{i}", turn=t, category="code", severity="severe", description="x", votes=2)
               for i, t in enumerate(turns)]
    env = [ScoredIssue(cluster=f"e{i}", turn=t, category="environment", severity="minor", description="x", votes=2)
           for i, t in enumerate(environment)]
    return ScoreRow(trajectory_id=tid, score=score, reason="r", release=release, issues=issues, environment=env,
                    panel_size=3, valid_passes=3)


def rows(trajectory: Trajectory, **options) -> list[dict]:
    return [s.row for s in samples(trajectory, trained_turns(trajectory, None), ExportOptions(**options))]


# --- which turns are trained ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (None, {1, 2, 3}),  # no score row: nothing cuts (selection is what keeps unscored rows out)
        (score_row("t"), {1, 2, 3}),  # released: every turn with a target
        (score_row("t", score=2, release=False, turns=(2,)), {1}),  # the faulty turn and its suffix are untrained
        (score_row("t", score=2, release=False, turns=(3, 2)), {1}),  # the first issue decides
        (score_row("t", score=2, release=False, turns=(1,)), set()),
        (score_row("t", release=False, environment=(3,)), {1, 2}),  # an environment fault cuts too
        (score_row("t", score=2, release=False, turns=(None,)), set()),  # an issue with no turn: nothing trusted
    ],
)
def test_trained_turns_stop_at_the_first_majority_issue(score, expected):
    assert trained_turns(make_trajectory(), score) == expected


def test_an_empty_assistant_message_is_never_trained_nor_written():
    messages = number_turns([Message(role="user", content="q"), Message(role="assistant", content=" "),
                             Message(role="user", content="more"), Message(role="assistant", content="ok")])
    trajectory = Trajectory(id="t", query="q", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="x"))
    assert trained_turns(trajectory, None) == {2}
    (row,) = rows(trajectory)
    assert [m["role"] for m in row["messages"]] == ["user", "user", "assistant"]  # OpenAI refuses an empty assistant


# --- one sample per trajectory (the default) --------------------------------------------------------


def test_default_is_one_sample_with_every_trained_assistant_message_weighted_and_no_foreign_keys():
    (row,) = rows(make_trajectory())
    assert set(row) == {"messages"}  # no ids, no turn: those are in index.jsonl
    assistants = [m for m in row["messages"] if m["role"] == "assistant"]
    assert [m["weight"] for m in assistants] == [1, 1, 1]
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert not any(set(m) - {"role", "content", "name", "weight", "tool_calls", "tool_call_id"} for m in row["messages"])
    assert example_errors(row) == []


def test_untrained_turns_stay_as_context_with_weight_zero():
    trajectory = make_trajectory()
    options = ExportOptions(include_unreleased=True)
    (sample,) = samples(trajectory, trained_turns(trajectory, score_row("t", score=2, release=False, turns=(2,))), options)
    assert [m["weight"] for m in sample.row["messages"] if m["role"] == "assistant"] == [1, 0, 0]
    assert sample.trained == [1] and sample.turn is None


def test_openai_tool_calls_and_results_are_in_fine_tuning_format():
    messages = rows(make_trajectory())[0]["messages"]
    call = messages[2]["tool_calls"][0]
    assert call == {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}
    # arguments without source text are serialised to a JSON string
    assert json.loads(messages[4]["tool_calls"][0]["function"]["arguments"]) == {"path": "a.py"}
    assert messages[4]["content"] is None
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "a.py"}


def test_tools_list_comes_from_the_recorded_schemas_in_each_form():
    trajectory = make_trajectory(tools=True)
    openai = rows(trajectory)[0]["tools"]
    assert openai == [
        {"type": "function", "function": {"name": "bash", "description": "Run a shell command.",
                                          "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}},
        {"type": "function", "function": {"name": "edit"}},  # no parameters declared: none invented
    ]
    anthropic = rows(trajectory, format="anthropic")[0]["tools"]
    assert anthropic[0] == {"name": "bash", "description": "Run a shell command.", "input_schema": TOOLS[0].parameters}
    assert anthropic[1] == {"name": "edit", "input_schema": {"type": "object", "properties": {}}}
    assert "tools" not in rows(make_trajectory())[0]
    assert example_errors(rows(trajectory)[0]) == []


def test_unpaired_tool_result_becomes_user_text():
    messages = number_turns([
        Message(role="user", content="go"),
        Message(role="assistant", content="```bash\nls\n```"),
        Message(role="tool", content="a.py", receipt=Receipt(content="a.py")),
        Message(role="assistant", content="done"),
    ])
    trajectory = Trajectory(id="t", query="go", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="x"))
    out = rows(trajectory)[0]["messages"]
    assert out[2]["role"] == "user" and out[2]["content"].endswith("a.py")
    assert all(m["role"] != "tool" for m in out)


def test_query_is_added_when_the_source_has_no_user_message():
    messages = number_turns([Message(role="system", content="s"), Message(role="assistant", content="hi")])
    trajectory = Trajectory(id="t", query="the task", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="x"))
    out = rows(trajectory)[0]["messages"]
    assert [m["role"] for m in out] == ["system", "user", "assistant"]
    assert out[1]["content"] == "the task"


# --- per-turn expansion ---------------------------------------------------------------------------


def test_per_turn_gives_one_sample_per_trained_turn_with_history_and_only_that_turn_trained():
    trajectory = make_trajectory()
    made = samples(trajectory, trained_turns(trajectory, None), ExportOptions(per_turn=True, reasoning="think-tags"))
    assert [s.turn for s in made] == [1, 2, 3]
    for sample in made:
        assistants = [m for m in sample.row["messages"] if m["role"] == "assistant"]
        assert len(assistants) == sample.turn
        assert [m["weight"] for m in assistants] == [0] * (sample.turn - 1) + [1]
        assert sample.row["messages"][-1]["role"] == "assistant"
        # native reasoning only on the trained turn (reference design)
        assert ["<think>" in (m["content"] or "") for m in assistants] == [False] * (sample.turn - 1) + [True]
        assert assistants[-1]["content"].startswith(f"<think>\nthink {sample.turn}\n</think>")


def test_per_turn_skips_untrained_turns():
    trajectory = make_trajectory()
    trained = trained_turns(trajectory, score_row("t", score=2, release=False, turns=(3,)))
    assert [s.turn for s in samples(trajectory, trained, ExportOptions(per_turn=True))] == [1, 2]


# --- reasoning per target -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (dict(), [None, None, None]),  # openai default: dropped (the format has no reasoning field)
        (dict(reasoning="drop"), [None, None, None]),
        (dict(format="hf"), ["think 1", "think 2", "think 3"]),  # hf default: reasoning_content
        (dict(format="hf", reasoning="drop"), [None, None, None]),
    ],
)
def test_reasoning_is_dropped_or_kept_per_target(options, expected):
    assistants = [m for m in rows(make_trajectory(), **options)[0]["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in assistants] == expected
    assert not any("<think>" in (m["content"] or "") or "reasoning" in m for m in assistants)


def test_think_tags_map_reasoning_into_the_content_of_every_turn():
    assistants = [m for m in rows(make_trajectory(), reasoning="think-tags")[0]["messages"] if m["role"] == "assistant"]
    assert [m["content"] for m in assistants] == [
        "<think>\nthink 1\n</think>\n\nLet me look.", "<think>\nthink 2\n</think>\n\n", "<think>\nthink 3\n</think>\n\nDone."]


@pytest.mark.parametrize(("fmt", "mode"), [("openai", "keep"), ("anthropic", "think-tags"), ("openai", "both")])
def test_a_reasoning_mode_the_target_cannot_hold_is_refused(fmt, mode):
    with pytest.raises(ValueError, match="--reasoning"):
        ExportOptions(format=fmt, reasoning=mode)


def signed_trajectory() -> Trajectory:
    """Assistant turns as an Anthropic log records them: signed thinking, a redacted block, and plain reasoning."""
    messages = number_turns([
        Message(role="user", content="q"),
        Message(role="assistant", content="", reasoning="plan\n[redacted thinking]",
                thinking=[ThinkingBlock(thinking="plan", signature="sig-1"), ThinkingBlock(type="redacted_thinking", data="ENC")],
                tool_calls=[ToolCall(id="toolu_1", name="bash", arguments={"cmd": "ls"})]),
        Message(role="tool", content="a.py", receipt=Receipt(call_id="toolu_1", content="a.py")),
        Message(role="assistant", content="Done.", reasoning="unsigned reasoning from another source"),
    ])
    return Trajectory(id="s", query="q", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="anthropic"))


def test_anthropic_keeps_thinking_blocks_verbatim_with_their_signatures():
    row = rows(signed_trajectory(), format="anthropic")[0]
    first, last = row["messages"][1]["content"], row["messages"][3]["content"]
    assert first[:2] == [{"type": "thinking", "thinking": "plan", "signature": "sig-1"},
                         {"type": "redacted_thinking", "data": "ENC"}]
    assert first[2]["type"] == "tool_use"
    assert last[0] == {"type": "thinking", "thinking": "unsigned reasoning from another source"}  # no signature invented
    assert row["mask"] == [False, True, False, True]
    dropped = rows(signed_trajectory(), format="anthropic", reasoning="drop")[0]
    assert not any(b["type"] in ("thinking", "redacted_thinking") for m in dropped["messages"] for b in m["content"])


def test_anthropic_importer_keeps_signatures_and_the_judge_key_ignores_them(tmp_path: Path):
    from judge.importers import load_trajectories

    record = {"id": "a1", "messages": [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should run ls.", "signature": "EqQBCkYIARgCIkD"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"},
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "One file: a.py."}]}]}
    path = tmp_path / "claude.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (trajectory,) = load_trajectories(path)
    blocks = trajectory.messages[1].thinking
    assert [(b.type, b.thinking, b.signature, b.data) for b in blocks] == [
        ("thinking", "I should run ls.", "EqQBCkYIARgCIkD", None), ("redacted_thinking", "", None, "EmwKAhgBEgy3")]
    assert trajectory.messages[1].reasoning == "I should run ls.\n[redacted thinking]"
    assert Trajectory.model_validate_json(trajectory.to_json_line()) == trajectory  # canonical round trip keeps them
    assert '"thinking"' not in trajectory.messages[3].model_dump_json()  # an empty list is left out of the line
    unsigned = trajectory.model_copy(update={"messages": [m.model_copy(update={"thinking": []}) for m in trajectory.messages]})
    assert unsigned.content_hash() == trajectory.content_hash()  # judges do not see signatures: same cache key
    exported = rows(trajectory, format="anthropic")[0]["messages"][1]["content"]
    assert exported[0] == {"type": "thinking", "thinking": "I should run ls.", "signature": "EqQBCkYIARgCIkD"}
    assert exported[1] == {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"}


def test_anthropic_form_alternates_and_per_turn_keeps_thinking_only_on_the_trained_turn():
    trajectory = make_trajectory()
    made = samples(trajectory, trained_turns(trajectory, None), ExportOptions(format="anthropic", per_turn=True))
    sample = made[2].row
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
    assert sample["mask"] == [False, False, False, True]


# --- the OpenAI format check (OpenAI cookbook recipe, tool-calling format) ---------------------------

GOOD = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                     {"role": "assistant", "content": None, "weight": 1,
                      "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "c", "content": "r"},
                     {"role": "assistant", "content": "done", "weight": 0}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}


def edited(change) -> dict:
    example = json.loads(json.dumps(GOOD))
    change(example)
    return example


@pytest.mark.parametrize(
    ("example", "errors"),
    [
        (GOOD, []),
        (["not", "an", "object"], ["data_type"]),
        ({"messages": []}, ["missing_messages_list"]),
        (edited(lambda e: e.update(trajectory_id="t1")), ["unrecognized_key"]),
        (edited(lambda e: e["messages"][1].pop("content")), ["message_missing_key", "missing_content"]),
        (edited(lambda e: e["messages"][1].update(turn=1)), ["message_unrecognized_key"]),
        (edited(lambda e: e["messages"][4].update(reasoning="r")), ["message_unrecognized_key"]),
        (edited(lambda e: e["messages"][0].update(role="developer")), ["unrecognized_role"]),
        (edited(lambda e: e["messages"][1].update(content="")), ["missing_content"]),
        (edited(lambda e: e["messages"][1].update(content=[{"type": "text", "text": "u"}])), ["missing_content"]),
        (edited(lambda e: e["messages"][4].update(content=None)), ["missing_content"]),
        (edited(lambda e: e.update(messages=e["messages"][:2])), ["example_missing_assistant_message"]),
        (edited(lambda e: e["messages"][2].update(weight=0)), ["example_without_trained_message"]),
        (edited(lambda e: e["messages"][1].update(weight=1)), ["weight_on_non_assistant"]),
        (edited(lambda e: e["messages"][4].update(weight=0.5)), ["invalid_weight"]),
        (edited(lambda e: e["messages"][4].update(weight=True)), ["invalid_weight"]),
        (edited(lambda e: e["messages"][2]["tool_calls"][0].update(type="tool")), ["tool_calls_shape"]),
        (edited(lambda e: e["messages"][2]["tool_calls"][0]["function"].update(arguments={})), ["tool_calls_shape"]),
        (edited(lambda e: e["messages"][2]["tool_calls"][0]["function"].update(arguments="{bad")), ["tool_call_arguments_not_json"]),
        (edited(lambda e: e["messages"][3].update(tool_call_id="other")), ["tool_result_unpaired"]),
        (edited(lambda e: e.update(tools=[{"name": "f"}])), ["tools_shape"]),
    ],
)
def test_format_check_flags_each_recipe_error(example, errors):
    assert example_errors(example) == errors


def test_token_count_follows_the_recipe_and_counts_tools():
    plain = {"messages": [{"role": "user", "content": "abcd" * 10}, {"role": "assistant", "content": "ok", "weight": 1}]}
    # 3 per message + the text of every value (weight not counted) + 3 priming; this machine may estimate
    from judge.prompting import estimate_tokens

    expected = 3 + (3 + estimate_tokens("user") + estimate_tokens("abcd" * 10)) + (3 + estimate_tokens("assistant") + estimate_tokens("ok"))
    assert example_tokens(plain) == expected
    assert example_tokens({**plain, "tools": GOOD["tools"]}) > expected


def test_format_check_of_a_file_counts_errors_with_their_first_line_and_warns_over_the_limit(tmp_path: Path):
    path = tmp_path / "train.jsonl"
    lines = [GOOD, edited(lambda e: e.update(trajectory_id="x")), {"messages": [{"role": "assistant", "content": "a" * 400, "weight": 1}]}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + "{broken\n")
    limit = max(example_tokens(GOOD), example_tokens(lines[1])) + 1
    assert example_tokens(lines[2]) > limit  # 400 characters of text: over the limit by any count
    report = check_openai_file(path, max_tokens=limit).as_dict()
    assert report["examples"] == 4
    assert report["errors"] == {"data_type": 1, "unrecognized_key": 1}
    assert report["first_error_line"] == {"data_type": 4, "unrecognized_key": 2}
    assert report["warnings"] == {"missing_system_message": 1, "missing_user_message": 1, "over_token_limit": 1}
    assert report["tokens"]["counted_by"].startswith(("tiktoken", "estimate"))


# --- selection and split --------------------------------------------------------------------------


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


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_run_writes_weighted_samples_an_index_and_keeps_queries_on_one_side(tmp_path: Path):
    trajectories = [make_trajectory(f"t{i}", f"q{i // 3}", tools=True) for i in range(30)]  # 10 queries x 3 trials
    scores = [score_row(t.id) for t in trajectories]
    scores[0] = score_row("t0", release=False)
    write_run(tmp_path / "run", trajectories, scores)
    record = export_run(tmp_path / "run", tmp_path / "out", ExportOptions(test_size=0.2, seed=3))

    train, test = read_lines(tmp_path / "out" / "train.jsonl"), read_lines(tmp_path / "out" / "test.jsonl")
    index = read_lines(tmp_path / "out" / "index.jsonl")
    assert len(train) + len(test) == 29  # one sample per trajectory
    assert all(set(r) <= TOP_LEVEL_KEYS for r in train + test)  # no keys outside the OpenAI line format
    assert [(e["split"], e["line"]) for e in index] == [("train", i + 1) for i in range(len(train))] + [("test", i + 1) for i in range(len(test))]
    sides = {e["query_id"]: set() for e in index}
    for entry in index:
        sides[entry["query_id"]].add(entry["split"])
        assert entry["trained_turns"] == [1, 2, 3]
    assert all(len(s) == 1 for s in sides.values())
    assert record["train"]["samples"] == len(train) and record["test"]["samples"] == len(test)
    assert record["train"]["trained_turns"] + record["test"]["trained_turns"] == 29 * 3
    assert record["train"]["trajectories"] + record["test"]["trajectories"] == 29
    assert record["excluded"] == {"trajectories": 1, "by_reason": {"not released": 1}}
    assert record["disjoint_by_query"] is True and record["query_overlap"] == []
    for side in ("train", "test"):  # the written files pass the recipe's checks
        check = record["format_check"][side]
        assert check["errors"] == {} and check["examples"] == record[side]["samples"]
    assert json.loads((tmp_path / "out" / "split.json").read_text()) == record
    # deterministic: same seed, same files
    again = export_run(tmp_path / "run", tmp_path / "out2", ExportOptions(test_size=0.2, seed=3))
    assert again["test_queries"] == record["test_queries"]
    assert (tmp_path / "out2" / "test.jsonl").read_text() == (tmp_path / "out" / "test.jsonl").read_text()


def test_unreleased_trajectories_are_weighted_by_their_issues_and_an_untrainable_one_writes_no_sample(tmp_path: Path):
    trajectories = [make_trajectory("good", "q1"), make_trajectory("late-fault", "q2"), make_trajectory("t1-fault", "q3")]
    scores = [score_row("good"), score_row("late-fault", score=2, release=False, turns=(3,)),
              score_row("t1-fault", score=2, release=False, turns=(1,))]
    write_run(tmp_path / "run", trajectories, scores)
    record = export_run(tmp_path / "run", tmp_path / "out", ExportOptions(test_size=0.0, include_unreleased=True))
    index = read_lines(tmp_path / "out" / "index.jsonl")
    assert [(e["trajectory_id"], e["trained_turns"]) for e in index] == [("good", [1, 2, 3]), ("late-fault", [1, 2])]
    weights = [[m["weight"] for m in r["messages"] if m["role"] == "assistant"] for r in read_lines(tmp_path / "out" / "train.jsonl")]
    assert weights == [[1, 1, 1], [1, 1, 0]]
    assert record["untrained_turns_after_issue"] == 1 + 3
    assert record["trajectories_without_trained_turn"] == 1


def test_per_turn_export_indexes_each_turn(tmp_path: Path):
    trajectories = [make_trajectory(f"t{i}", f"q{i}") for i in range(3)]
    write_run(tmp_path / "run", trajectories, [score_row(t.id) for t in trajectories])
    record = export_run(tmp_path / "run", tmp_path / "out", ExportOptions(test_size=0.0, per_turn=True))
    index = read_lines(tmp_path / "out" / "index.jsonl")
    assert [(e["trajectory_id"], e["turn"], e["line"]) for e in index][:3] == [("t0", 1, 1), ("t0", 2, 2), ("t0", 3, 3)]
    assert record["train"]["samples"] == 9 and record["format_check"]["train"]["errors"] == {}


def test_hf_folder_has_parquet_splits_and_a_dataset_card(tmp_path: Path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (the hf extra) is not installed")
    import yaml

    trajectories = [make_trajectory(f"t{i}", f"q{i}", tools=True) for i in range(10)]
    write_run(tmp_path / "run", trajectories, [score_row(t.id) for t in trajectories])
    record = export_run(tmp_path / "run", tmp_path / "hf", ExportOptions(format="hf", test_size=0.2))
    train = pq.read_table(tmp_path / "hf" / "train.parquet").to_pylist()
    test = pq.read_table(tmp_path / "hf" / "test.parquet").to_pylist()
    assert (len(train), len(test)) == (record["train"]["samples"], record["test"]["samples"]) == (8, 2)
    row = train[0]
    assert row["turn"] is None and row["trajectory_id"].startswith("t")
    assert json.loads(row["tools"])[0]["function"]["name"] == "bash"
    assistants = [m for m in row["messages"] if m["role"] == "assistant"]
    assert [m["weight"] for m in assistants] == [1, 1, 1]
    assert [m["reasoning_content"] for m in assistants] == ["think 1", "think 2", "think 3"]
    assert assistants[0]["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"cmd": "ls"}'}
    card = (tmp_path / "hf" / "README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    assert header["configs"][0]["data_files"] == [{"split": "train", "path": "train.parquet"}, {"split": "test", "path": "test.parquet"}]
    assert "| train | 8 | 8 | 8 | 24 |" in card


def test_hf_folder_loads_with_datasets(tmp_path: Path, monkeypatch):
    pytest.importorskip("pyarrow", reason="pyarrow (the hf extra) is not installed")
    datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is not installed (pip install datasets)")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)  # no download-count ping, no hub look-up
    trajectories = [make_trajectory(f"t{i}", f"q{i}") for i in range(5)]
    write_run(tmp_path / "run", trajectories, [score_row(t.id) for t in trajectories])
    export_run(tmp_path / "run", tmp_path / "hf", ExportOptions(format="hf", test_size=0.2, per_turn=True))
    loaded = datasets.load_dataset("parquet", data_dir=str(tmp_path / "hf"), cache_dir=str(tmp_path / "cache"))
    assert (loaded["train"].num_rows, loaded["test"].num_rows) == (12, 3)
    assert loaded["train"][0]["turn"] == 1 and loaded["train"][0]["messages"][-1]["weight"] == 1
    # no test side: no test file (an empty parquet split does not load), and the card names only train
    record = export_run(tmp_path / "run", tmp_path / "hf", ExportOptions(format="hf", test_size=0.0))
    assert not (tmp_path / "hf" / "test.parquet").exists() and "test" not in record["files"]
    assert "split: test" not in (tmp_path / "hf" / "README.md").read_text()
    loaded = datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "cache2"))  # through the card's header
    assert list(loaded) == ["train"] and loaded["train"].num_rows == 5


def test_cli_export_prints_counts_the_format_check_and_rejects_missing_run(tmp_path: Path):
    from judge.cli import app

    trajectories = [make_trajectory(f"t{i}", f"q{i}") for i in range(10)]
    write_run(tmp_path / "run", trajectories, [score_row(t.id) for t in trajectories])
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--out", str(tmp_path / "o"), "--test-size", "0.2"])
    assert result.exit_code == 0, result.output
    assert "train: 8 trajectories, 8 queries, 8 samples, 24 trained turns" in result.output
    assert "train format check: errors none; 0 over 65536 tokens" in result.output
    assert "reasoning: drop; split disjoint by query: yes" in result.output
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--out", str(tmp_path / "a"), "--format", "anthropic",
                                      "--per-turn", "--test-size", "0.2"])
    assert result.exit_code == 0, result.output
    assert "train: 8 trajectories, 8 queries, 24 samples" in result.output
    row = json.loads((tmp_path / "a" / "train.jsonl").read_text().splitlines()[0])
    assert set(row) == {"system", "messages", "mask"}
    wrong = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["export", str(tmp_path / "run"), "--out", str(tmp_path / "o"), "--reasoning", "keep"])
    assert wrong.exit_code == 2 and "--reasoning for --format openai must be auto or one of drop, think-tags" in wrong.output
    missing = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["export", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert missing.exit_code == 2  # a usage error: the run named does not exist (README exit-code table)
    assert "trajectories.jsonl not found: `judge export` needs a scored run directory" in missing.output


def silent_tool_trajectory(tid: str = "t1", query_id: str = "q1") -> Trajectory:
    """A call whose tool printed nothing: an empty tool message and receipt."""
    messages = number_turns([
        Message(role="user", content="Book it."),
        Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="book", arguments={}, raw_arguments="{}")]),
        Message(role="tool", content="", receipt=Receipt(call_id="c1", name="book", content="")),
        Message(role="assistant", content="Booked."),
    ])
    return Trajectory(id=tid, query="Book it.", query_id=query_id, messages=messages,
                      metadata=TrajectoryMetadata(source_format="openai"))


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_an_empty_tool_result_is_written_as_the_documented_marker_and_passes_the_check(tmp_path: Path, fmt: str):
    from judge.export import EMPTY_TOOL_OUTPUT

    trajectories = [silent_tool_trajectory(f"t{i}", f"q{i}") for i in range(3)]
    write_run(tmp_path / "run", trajectories, [score_row(t.id) for t in trajectories])
    record = export_run(tmp_path / "run", tmp_path / "out", ExportOptions(test_size=0.0, format=fmt))
    text = (tmp_path / "out" / "train.jsonl").read_text()
    assert EMPTY_TOOL_OUTPUT == "(no output)" and text.count(json.dumps(EMPTY_TOOL_OUTPUT)) == 3
    assert record["empty_tool_results_marked"] == 3
    if fmt == "openai":
        assert record["format_check"]["train"]["errors"] == {} and record["format_check_passed"] is True


def test_cli_export_exits_1_when_its_own_format_check_fails(tmp_path: Path):
    from judge.cli import app

    broken = silent_tool_trajectory("t1", "q1")
    broken.messages[0].content = ""  # an empty user message: missing_content, which no marker stands for
    write_run(tmp_path / "run", [broken], [score_row("t1")])
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--out", str(tmp_path / "o"), "--test-size", "0"])
    assert result.exit_code == 1, result.output
    assert "train format check: errors missing_content 1 (first at line 1)" in result.output
    assert "the export fails its own format check" in result.output
    assert json.loads((tmp_path / "o" / "split.json").read_text())["format_check_passed"] is False


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
    record = export_run(run, tmp_path / "out", ExportOptions(test_size=0.1, seed=0, per_turn=True))
    assert record["train"]["queries"] + record["test"]["queries"] == 50
    assert (record["train"]["trajectories"], record["test"]["trajectories"]) == (180, 20)
    assert record["disjoint_by_query"] is True
    sides = {}
    for entry in read_lines(tmp_path / "out" / "index.jsonl"):
        assert sides.setdefault(entry["query_id"], entry["split"]) == entry["split"]
    # one sample per assistant message with content or calls (SOURCE.md: 2,454 assistant messages)
    assert record["train"]["samples"] + record["test"]["samples"] + record["skipped_empty_turns"] == 2454


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


def test_inspect_logs_keep_signed_and_redacted_reasoning_for_the_anthropic_export():
    from judge.importers.inspect_log import _message

    raw = {"role": "assistant", "content": [
        {"type": "reasoning", "reasoning": "Check the file first.", "signature": "sig-9", "redacted": False},
        {"type": "reasoning", "reasoning": "ENCRYPTED", "redacted": True},
        {"type": "text", "text": "Reading it."}]}
    message = _message(1, raw, {})
    assert message.reasoning == "Check the file first."  # the encrypted payload is not reasoning text
    assert [(b.type, b.thinking, b.signature, b.data) for b in message.thinking] == [
        ("thinking", "Check the file first.", "sig-9", None), ("redacted_thinking", "", None, "ENCRYPTED")]
    unsigned = _message(1, {"role": "assistant", "content": [{"type": "reasoning", "reasoning": "plain"}]}, {})
    assert (unsigned.reasoning, unsigned.thinking) == ("plain", [])  # nothing signed: nothing to replay


def test_a_reasoning_only_turn_is_a_target_only_where_reasoning_is_kept(tmp_path: Path):
    messages = number_turns([Message(role="user", content="q"), Message(role="assistant", content="", reasoning="hmm"),
                             Message(role="user", content="go on"), Message(role="assistant", content="ok")])
    trajectory = Trajectory(id="t", query="q", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="x"))
    assert trained_turns(trajectory, None) == {1, 2}
    assert trained_turns(trajectory, None, with_reasoning=False) == {2}
    write_run(tmp_path / "run", [trajectory], [score_row("t")])
    record = export_run(tmp_path / "run", tmp_path / "out", ExportOptions(test_size=0.0, per_turn=True))  # openai: dropped
    assert record["train"]["samples"] == 1 and record["skipped_empty_turns"] == 1
    assert record["format_check"]["train"]["errors"] == {}


@pytest.mark.shared
def test_tau_airline_export_marks_silent_tools_and_passes_its_own_check(tmp_path: Path):
    """On tau-bench airline 61 of the 200 samples hold a tool that printed nothing: each becomes "(no output)"
    and the OpenAI check finds no error, so `judge export` exits 0."""
    source = DATASETS / "tau_bench_trajectories" / "gpt-4o-airline.json"
    if not source.exists():
        pytest.skip(f"shared dataset not available: {source}")
    from judge.cli import app
    from judge.export import EMPTY_TOOL_OUTPUT
    from judge.pipeline import import_to_run
    from judge.rundir import RunDir

    run = tmp_path / "run"
    import_to_run([source], run, None)
    rundir.write_jsonl(run / rundir.SCORES, [score_row(t.id) for t in RunDir(run).trajectories()])
    result = CliRunner().invoke(app, ["export", str(run), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "out" / "split.json").read_text())
    assert record["format_check_passed"] is True
    assert all(check["errors"] == {} for check in record["format_check"].values())
    lines = [json.loads(line) for side in ("train", "test") for line in (tmp_path / "out" / f"{side}.jsonl").read_text().splitlines()]
    marked = [x for x in lines if any(m["role"] == "tool" and m["content"] == EMPTY_TOOL_OUTPUT for m in x["messages"])]
    assert len(lines) == 200 and len(marked) == 61
    assert record["empty_tool_results_marked"] == sum(
        1 for x in lines for m in x["messages"] if m["role"] == "tool" and m["content"] == EMPTY_TOOL_OUTPUT)
