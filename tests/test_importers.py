"""Importers on small fixtures (tests/fixtures/importers, see SOURCE.md there) and on crafted bad input.

These run anywhere; the full shared datasets are covered in test_importers_shared.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge import importers
from judge.importers import (
    FORMATS,
    Skipped,
    TrajectoryImportError,
    detect_format,
    iter_records,
    load_trajectories,
    reader,
)
from judge.importers._common import (
    exit_code_from_text,
    loose_value,
    parse_arguments,
    query_hash,
)
from judge.model import Trajectory
from judge.schema import Reject

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "importers"
EXAMPLES = REPO / "examples" / "batch"


def unpaired_calls(trajectory: Trajectory) -> list[str]:
    answered = {m.receipt.call_id for m in trajectory.messages if m.receipt and m.receipt.call_id}
    return [c.id for m in trajectory.messages for c in m.tool_calls if c.id not in answered]


# ------------------------------------------------------------------------------------------------
# Every format on a fixture of its own


@pytest.mark.parametrize(
    ("fixture", "fmt", "ids", "turns", "unpaired"),
    [
        ("tau_retail_excerpt.json", "tau", ["tau-retail-50-t50", "tau-retail-57-t57"], [3, 6], 0),
        ("agentrx_repr_derived.json", "tau", ["tau-retail-50-t50"], [3], 0),
        ("tau_airline_excerpt.json", "tau", ["tau-airline-12-t3"], [4], 0),
        ("swe_agent_function_calling.traj", "swe-agent", ["swe_agent_function_calling"], [4], 0),
        ("swe_agent_text_actions.traj", "swe-agent", ["swe_agent_text_actions"], [5], 1),  # final submit has no observation
        ("mini_swe_agent_github_issue.traj.json", "mini-swe-agent", ["mini_swe_agent_github_issue"], [10], 0),
        ("openhands_wrong_initial_state.json", "openhands", ["openhands_wrong_initial_state"], [4], 0),
        ("openhands_resolver_excerpt.jsonl", "openhands", ["openhands-neubig-pr-viewer-5"], [4], 0),
        ("inspect_log_read_sample.json", "inspect", ["inspect-popularity-1-e1"], [1], 0),
        ("who_and_when/Algorithm-Generated/84.json", "who-and-when", ["ww-algorithm-generated-84"], [6], 0),
        ("who_and_when/Hand-Crafted/24.json", "who-and-when", ["ww-hand-crafted-24"], [4], 0),
        ("atif_written_by_us.json", "atif", ["atif-demo-hello"], [3], 0),
        ("../../../examples/batch/openai_runs.jsonl", "openai", None, None, 0),
        ("../../../examples/batch/anthropic_runs.jsonl", "anthropic", None, None, 0),
    ],
)
def test_each_format_imports_its_fixture_without_rejects(fixture, fmt, ids, turns, unpaired):
    path = FIXTURES / fixture
    items = list(iter_records([path]))
    assert [i for i in items if isinstance(i, Reject)] == []
    assert {t.metadata.source_format for t in items} == {fmt}
    if ids is not None:
        assert [t.id for t in items] == ids
        assert [t.turn_count for t in items] == turns
    for trajectory in items:
        assert trajectory.metadata.source_file == str(path)
        assert all(m.source_index is not None for m in trajectory.messages if m.role != "system")
        assert len(unpaired_calls(trajectory)) == unpaired
        assert trajectory.query.strip() and trajectory.query_id
    # The same records with the format forced give the same result.
    forced = list(iter_records([path], fmt=fmt))
    assert [t.model_dump() for t in forced] == [t.model_dump() for t in items]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "openai"),
        ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "openai"),
        ({"system": "s", "messages": [{"role": "user", "content": "hi"}]}, "anthropic"),
        ({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}]}, "anthropic"),
        ({"task_id": 3, "reward": 1.0, "traj": []}, "tau"),
        ({"history": [{"role": "human", "content": "q"}], "question": "q", "mistake_agent": "A"}, "who-and-when"),
        ({"history": [{"role": "user", "content": "q", "agent": "main"}], "trajectory": []}, "swe-agent"),
        ([{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}}], "openhands"),
        ({"instruction": "fix", "history": [{"action": "run", "command": "ls"}]}, "openhands"),
        ([{"role": "assistant", "content": "THOUGHT\n```mswea_bash_command\nls\n```"}], "mini-swe-agent"),
        ({"trajectory_format": "mini-swe-agent-1", "messages": [], "info": {}}, "mini-swe-agent"),
        ({"version": 2, "status": "success", "eval": {"task": "t"}, "samples": []}, "inspect"),
        ({"id": 1, "epoch": 1, "input": "q", "messages": []}, "inspect"),
        ({"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {}, "steps": []}, "atif"),
        ({"schema_version": "trajudge.trajectory/1", "id": "x"}, "canonical"),
        ({"instance_id": "x", "model_patch": "diff"}, None),
        ([1, 2, 3], None),
        ("just a string", None),
    ],
)
def test_detect_format(obj, expected):
    assert detect_format(obj) == expected


def test_formats_registry_names():
    assert set(FORMATS) == {
        "canonical", "openai", "tau", "anthropic", "swe-agent", "mini-swe-agent", "openhands", "inspect", "who-and-when", "atif", "mast", "otel",
    }


# ------------------------------------------------------------------------------------------------
# Shared helpers


@pytest.mark.parametrize(
    ("raw", "arguments", "raw_kept", "error"),
    [
        ('{"a": 1}', {"a": 1}, True, False),
        ({"a": 1}, {"a": 1}, False, False),
        ("{'a': 1, 'b': None}", {"a": 1, "b": None}, True, False),  # Python repr (AgentRx)
        ("", {}, True, False),
        (None, None, False, False),
        ('{"a": 1', None, True, True),  # truncated JSON: kept raw with the reason
        ("__import__('os').system('x')", None, True, True),  # never evaluated
    ],
)
def test_parse_arguments(raw, arguments, raw_kept, error):
    parsed, raw_out, error_out = parse_arguments(raw)
    assert parsed == arguments
    assert (raw_out is not None) == raw_kept
    assert (error_out is not None) == error


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("None", None),
        ("True", True),
        ("[{'id': 'c1', 'function': {'name': 'f'}}]", [{"id": "c1", "function": {"name": "f"}}]),
        ("plain text", "plain text"),
        ("{not a literal}", "{not a literal}"),
        (3, 3),
    ],
)
def test_loose_value(value, expected):
    assert loose_value(value) == expected


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("<returncode>1</returncode>\n<output>x</output>", 1),
        ("Exit code 2\nError: unknown flag", 2),
        ("Error: Exit code 1\nboom", 1),
        ("exitcode: 0 (execution succeeded)\nCode output: 3", 0),
        ("Command `ls` executed with exit code 127.", 127),
        ("the exit code was bad", None),
        ("", None),
    ],
)
def test_exit_code_from_text(text, code):
    assert exit_code_from_text(text) == code


def test_query_hash_ignores_case_and_spacing():
    assert query_hash("Fix  the\nTests") == query_hash("fix the tests")
    assert query_hash("fix the tests") != query_hash("fix the test")


# ------------------------------------------------------------------------------------------------
# Bad input: every broken record is listed, the rest imports


def _openai_line(rid: str) -> str:
    return json.dumps(
        {
            "id": rid,
            "messages": [
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
                {"role": "assistant", "content": "a.txt"},
            ],
        }
    )


def test_mixed_good_and_broken_jsonl(tmp_path):
    orphan = {"id": "orphan", "messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "nope", "content": "r"}]}
    lines = [
        _openai_line("good-1").encode(),  # 1
        b'{"id": "broken", "messages": [',  # 2 broken JSON
        _openai_line("good-2").encode(),  # 3
        b'{"id": "bad-utf8", "messages": [{"role": "user", "content": "caf\xe9"}]}',  # 4 latin-1 byte
        json.dumps({"id": "empty", "messages": []}).encode(),  # 5 missing messages
        json.dumps(orphan).encode(),  # 6 tool result without a call
        json.dumps({"hello": "world"}).encode(),  # 7 unknown format
        json.dumps({"id": "odd-role", "messages": [{"role": "robot", "content": "x"}]}).encode(),  # 8 bad role
        b"",  # 9 blank: skipped, not a reject
        _openai_line("good-3").encode(),  # 10
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    items = list(iter_records([path]))
    trajectories = [i for i in items if isinstance(i, Trajectory)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert [t.id for t in trajectories] == ["good-1", "good-2", "good-3"]
    assert [t.metadata.source_line for t in trajectories] == [1, 3, 10]
    assert [r.line for r in rejects] == [2, 4, 5, 6, 7, 8]
    assert all(r.source_file == str(path) for r in rejects)
    reasons = [r.reason for r in rejects]
    assert reasons[0].startswith("broken JSON")
    assert reasons[1].startswith("invalid UTF-8")
    assert "missing messages" in reasons[2]
    assert "'nope'" in reasons[3] and "no matching tool call" in reasons[3]
    assert reasons[4].startswith("unknown format") and "hello" in reasons[4]
    assert reasons[5] == "message 0: unknown role 'robot'" and rejects[5].format == "openai"
    assert all("\n" not in reason for reason in reasons)


def test_broken_record_inside_a_json_document_is_rejected_by_index_and_line(tmp_path):
    good = json.loads(_openai_line("doc-good"))
    path = tmp_path / "batch.json"
    text = json.dumps([good, {"id": "no-messages"}, {**good, "id": "doc-good-2"}], indent=1)
    path.write_text(text, encoding="utf-8")
    items = list(iter_records([path]))
    assert [i.id for i in items if isinstance(i, Trajectory)] == ["doc-good", "doc-good-2"]
    (reject,) = [i for i in items if isinstance(i, Reject)]
    assert reject.record_index == 1
    assert reject.line == text[: text.index('{\n  "id": "no-messages"')].count("\n") + 1  # where the record starts


def test_broken_json_document_names_its_line(tmp_path):
    path = tmp_path / "run.traj"
    path.write_text('{\n  "history": [\n    {"role": "user",,}\n  ]\n}\n', encoding="utf-8")
    (reject,) = list(iter_records([path]))
    assert isinstance(reject, Reject) and reject.line == 3 and reject.reason.startswith("broken JSON")


def test_missing_input_is_a_reject_and_the_rest_goes_on(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(_openai_line("only") + "\n", encoding="utf-8")
    items = list(iter_records([tmp_path / "absent.jsonl", good]))
    assert isinstance(items[0], Reject) and "no such file" in items[0].reason
    assert items[1].id == "only"


def test_unknown_forced_format_is_an_error():
    with pytest.raises(ValueError, match="unknown format 'jsonish'"):
        list(iter_records([EXAMPLES], fmt="jsonish"))


def test_load_trajectories_raises_listing_rejects(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(_openai_line("ok") + "\nnot json\n", encoding="utf-8")
    with pytest.raises(TrajectoryImportError) as info:
        load_trajectories(path)
    assert len(info.value.rejects) == 1 and f"{path}:2" in str(info.value)


def test_directory_walk_reads_only_data_files_in_sorted_order(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "README.md").write_text("# not data", encoding="utf-8")
    (tmp_path / "SOURCE.md").write_text("# not data", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not data", encoding="utf-8")
    (tmp_path / "b" / "two.jsonl").write_text(_openai_line("two") + "\n", encoding="utf-8")
    (tmp_path / "a.jsonl").write_text(_openai_line("one") + "\n", encoding="utf-8")
    (tmp_path / ".hidden" / "x.jsonl").write_text(_openai_line("hidden") + "\n", encoding="utf-8")
    items = list(iter_records([tmp_path]))
    assert [t.id for t in items if isinstance(t, Trajectory)] == ["one", "two"]
    # what is not read is listed as skipped, in walk order (issue 28): never left out silently
    assert [(Path(s.source_file).name, s.reason.split(" (")[0]) for s in items if isinstance(s, Skipped)] == [
        (".hidden", "skipped: a hidden folder"), ("README.md", "skipped: not a data file"),
        ("SOURCE.md", "skipped: not a data file"), ("notes.txt", "skipped: not a data file")]


def test_repeated_ids_are_made_unique_in_input_order():
    path = FIXTURES / "tau_retail_excerpt.json"
    ids = [t.id for t in iter_records([path, path])]
    assert ids == ["tau-retail-50-t50", "tau-retail-57-t57", "tau-retail-50-t50~2", "tau-retail-57-t57~2"]


# ------------------------------------------------------------------------------------------------
# Round trip, turn numbering, streaming


def test_canonical_round_trip_is_identical(tmp_path):
    originals = load_trajectories([EXAMPLES, FIXTURES])
    path = tmp_path / "canonical.jsonl"
    path.write_text("".join(t.to_json_line() + "\n" for t in originals), encoding="utf-8")
    again = load_trajectories(path)
    assert {t.metadata.source_format for t in again} == {t.metadata.source_format for t in originals}
    assert again == originals  # same models: ids, turns, receipts, metadata (source file/line of the original)
    assert all(detect_format(json.loads(t.to_json_line())) == "canonical" for t in again)


def test_turn_numbering_with_parallel_calls():
    (trajectory,) = [t for t in load_trajectories(EXAMPLES / "openai_runs.jsonl") if t.id == "clean-csv-summary"]
    assert [(m.role, m.turn) for m in trajectory.messages] == [
        ("system", 0), ("user", 0),
        ("assistant", 1), ("tool", 1), ("tool", 1),
        ("assistant", 2), ("tool", 2), ("tool", 2),
        ("assistant", 3),
    ]
    first = trajectory.turns()[0]
    assert [c.name for c in first.message.tool_calls] == ["Read", "Read"]
    assert [r.call_id for r in first.receipts] == [c.id for c in first.message.tool_calls]
    assert [m.source_index for m in trajectory.messages] == list(range(9))


def test_reused_call_ids_are_kept_and_each_turn_pairs_with_its_own_receipt(tmp_path):
    call = {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls"}'}}
    record = {"id": "reuse", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "first"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "second"},
    ]}
    path = tmp_path / "reuse.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    (trajectory,) = load_trajectories(path)
    first, second = trajectory.turns()
    # The ids stay as the log wrote them (a reused id is itself a finding for the rules judge) ...
    assert [c.id for c in second.message.tool_calls] == ["c1"]
    # ... and each call still gets its own receipt, in order.
    assert [r.content for r in first.receipts] == ["first"] and [r.content for r in second.receipts] == ["second"]
    assert [m.turn for m in trajectory.messages] == [0, 1, 1, 2, 2]


def test_anthropic_tool_results_split_out_of_user_messages():
    (trajectory,) = [t for t in load_trajectories(EXAMPLES / "anthropic_runs.jsonl") if t.id == "env-dns-failure"]
    roles = [(m.role, m.turn, m.source_index) for m in trajectory.messages]
    assert roles == [("system", 0, None), ("user", 0, 0), ("assistant", 1, 1), ("tool", 1, 2), ("assistant", 2, 3), ("tool", 2, 4), ("assistant", 3, 5)]
    receipt = trajectory.messages[3].receipt
    assert receipt.is_error and receipt.exit_code == 1 and receipt.name == "Bash"


def test_reading_jsonl_is_lazy(tmp_path, monkeypatch):
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for number in range(5000):
            handle.write(_openai_line(f"r{number}") + "\n")
    bytes_read = []

    class CountingFile:
        def __init__(self, inner):
            self.inner = inner

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.inner.close()

        def read1(self, size=-1):
            chunk = self.inner.read1(size)
            bytes_read.append(len(chunk))
            return chunk

    monkeypatch.setattr(reader, "_open_binary", lambda p: CountingFile(p.open("rb")))
    records = iter_records([path])
    assert sum(bytes_read) == 0  # nothing is read before the first record is asked for
    first = next(records)
    assert first.id == "r0"
    assert 0 < sum(bytes_read) <= reader.BLOCK_BYTES < path.stat().st_size // 10
    assert next(records).id == "r1" and len(bytes_read) == 1  # the next record comes from the block in hand
    records.close()


# ------------------------------------------------------------------------------------------------
# Format-specific mappings


def test_tau_receipts_pair_and_loose_agentrx_spellings_give_the_same_calls():
    (original,) = [t for t in load_trajectories(FIXTURES / "tau_retail_excerpt.json") if t.id == "tau-retail-50-t50"]
    (loose,) = load_trajectories(FIXTURES / "agentrx_repr_derived.json")
    assert [c for m in loose.messages for c in m.tool_calls] == [c for m in original.messages for c in m.tool_calls]
    assert [m.content for m in loose.messages] == [m.content for m in original.messages]
    assert original.metadata.reward == 1.0 and original.metadata.outcome == "success"
    assert original.metadata.extra["task_id"] == 50 and original.metadata.extra["domain"] == "retail"
    # AgentRx step_number is the 1-based message index: source_index + 1.
    raw = json.loads((FIXTURES / "tau_retail_excerpt.json").read_text())[0]["traj"]
    assert [m.source_index + 1 for m in original.messages] == [m["index"] for m in raw]


def test_swe_agent_text_actions_become_calls_with_observation_receipts():
    (trajectory,) = load_trajectories(FIXTURES / "swe_agent_text_actions.traj")
    first = trajectory.turns()[0]
    assert first.message.tool_calls[0].name == "find_file"
    assert first.message.tool_calls[0].id == f"swe-{first.message.source_index}"
    assert first.receipts[0].content.startswith("Found 1 matches")
    assert trajectory.messages[1].role == "user"  # the demonstration stays a user message
    assert trajectory.query.startswith("We're currently solving the following issue")
    assert trajectory.metadata.outcome == "submitted"


def test_mini_swe_agent_exit_codes():
    (trajectory,) = load_trajectories(FIXTURES / "mini_swe_agent_github_issue.traj.json")
    first = trajectory.turns()[0]
    assert first.message.tool_calls[0].arguments["command"].startswith("cat ")
    assert first.receipts[0].exit_code == 1 and first.receipts[0].is_error
    assert trajectory.turns()[1].receipts[0].exit_code == 0 and not trajectory.turns()[1].receipts[0].is_error


def test_openhands_runtime_events():
    (trajectory,) = load_trajectories(FIXTURES / "openhands_wrong_initial_state.json")
    assert [m.role for m in trajectory.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    bash = trajectory.turns()[1]
    assert bash.message.tool_calls[0].name == "execute_bash"
    # The arguments are the JSON the model wrote (from model_response), not OpenHands' expanded args.
    assert bash.message.tool_calls[0].raw_arguments is not None
    assert bash.message.tool_calls[0].arguments["command"] == "mv /workspace/game_2048.py /workspace/2048.py"
    assert bash.receipts[0].exit_code == 0
    assert trajectory.turns()[-1].message.tool_calls == []  # finish is the final answer, not a call
    assert trajectory.metadata.model == "claude-3-5-sonnet-20241022"


def test_openhands_calls_of_one_response_share_a_turn(tmp_path):
    def action(event_id, call_id, command):
        return {"id": event_id, "source": "agent", "action": "run", "args": {"command": command, "thought": "two at once"},
                "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": call_id,
                                       "model_response": {"id": "resp-1", "model": "m"}, "total_calls_in_response": 2}}

    def observation(event_id, cause, code):
        return {"id": event_id, "source": "agent", "observation": "run", "cause": cause, "content": "",
                "extras": {"metadata": {"exit_code": code}}}

    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
              action(1, "c1", "ls"), observation(2, 1, 0), action(3, "c2", "false"), observation(4, 3, 1),
              {"id": 5, "source": "agent", "observation": "run", "cause": 99, "content": ""}]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events[:-1]), encoding="utf-8")
    (trajectory,) = load_trajectories(path)
    (turn,) = trajectory.turns()
    assert [c.id for c in turn.message.tool_calls] == ["c1", "c2"]
    assert [(r.exit_code, r.is_error) for r in turn.receipts] == [(0, False), (1, True)]
    path.write_text(json.dumps(events), encoding="utf-8")
    (reject,) = list(iter_records([path]))
    assert isinstance(reject, Reject) and "event 99" in reject.reason


def test_inspect_log_sample_fields():
    (trajectory,) = load_trajectories(FIXTURES / "inspect_log_read_sample.json")
    assert trajectory.metadata.model == "ollama/gemma3"
    assert trajectory.metadata.outcome == "C" and trajectory.metadata.reward == 1.0
    assert trajectory.metadata.source_line == 0  # sample index in the log
    assert trajectory.query_id == "inspect-popularity-1"


@pytest.mark.parametrize("subset", ["Algorithm-Generated/84.json", "Hand-Crafted/24.json"])
def test_who_and_when_speakers_terminals_and_gold_step(subset):
    path = FIXTURES / "who_and_when" / subset
    (trajectory,) = load_trajectories(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert [m.source_index for m in trajectory.messages] == list(range(len(raw["history"])))
    assert trajectory.query == raw["question"] and trajectory.query_id == raw["question_ID"]
    step = trajectory.metadata.extra["mistake_step"]
    assert step == int(raw["mistake_step"]) and trajectory.messages[step].source_index == step
    for message, source in zip(trajectory.messages, raw["history"]):
        speaker = source.get("name") if "name" in source else source["role"]
        if speaker in ("Computer_terminal", "ComputerTerminal"):
            assert message.role == "tool" and message.receipt.call_id is None
            assert message.turn >= 1  # belongs to the turn before it
        elif speaker == "human":
            assert message.role == "user"
        else:
            assert message.role == "assistant" and message.name == speaker


def test_who_and_when_terminal_exit_codes():
    (trajectory,) = load_trajectories(FIXTURES / "who_and_when" / "Algorithm-Generated" / "84.json")
    terminal = [m.receipt for m in trajectory.messages if m.role == "tool"]
    assert [(r.exit_code, r.is_error) for r in terminal if r.content.startswith("exitcode:")] == [(1, True)]
    assert [r.exit_code for r in terminal if not r.content.startswith("exitcode:")] == [None, None]
    turns = trajectory.turns()
    assert sum(len(t.receipts) for t in turns) == len(terminal)  # each receipt shows under exactly one turn


def test_atif_mapping():
    (trajectory,) = load_trajectories(FIXTURES / "atif_written_by_us.json")
    assert trajectory.query_id == "q-hello-file" and trajectory.metadata.arm == "unguided"
    assert trajectory.metadata.model == "demo-model-1"
    assert trajectory.metadata.usage.input_tokens == 1500 and trajectory.metadata.usage.cached_tokens == 300
    first, second, final = trajectory.turns()
    assert first.message.reasoning.startswith("Two independent calls")
    assert first.message.usage.input_tokens == 700
    assert [r.call_id for r in first.receipts] == ["call_write_1", "call_ls_2"]
    assert second.receipts[0].exit_code == 1 and second.receipts[0].is_error
    assert second.receipts[1].call_id is None and "reminder" in second.receipts[1].content
    assert final.message.content.startswith("Done")


def test_atif_result_for_an_unknown_call_is_rejected(tmp_path):
    data = json.loads((FIXTURES / "atif_written_by_us.json").read_text(encoding="utf-8"))
    data["steps"][3]["observation"]["results"][0]["source_call_id"] = "call_missing"
    path = tmp_path / "atif.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    (reject,) = list(iter_records([path]))
    assert isinstance(reject, Reject) and reject.format == "atif" and "call_missing" in reject.reason


# ------------------------------------------------------------------------------------------------
# The bundled example batch matches examples/batch/EXPECTED.md


def test_example_batch_matches_expected_md():
    batch = {t.id: t for t in load_trajectories(EXAMPLES)}
    assert 12 <= len(batch) <= 16
    assert {t.metadata.source_format for t in batch.values()} == {"openai", "anthropic"}
    assert all(t.query_id.startswith("q-") for t in batch.values())

    def failed_turns(tid):
        return [(m.turn, m.receipt.exit_code) for m in batch[tid].messages if m.receipt and m.receipt.is_error]

    assert failed_turns("inv-base-build") == [(3, 1), (5, 2)]
    assert batch["inv-base-build"].turn_count == 14
    assert "12 validation errors" in batch["inv-base-build"].turns()[2].receipts[0].content
    assert batch["inv-base-build"].turns()[7].receipts[0].content.count('"record_id"') == 6
    assert failed_turns("repeat-failing-pytest")[:3] == [(1, 4), (2, 4), (3, 4)]
    assert failed_turns("zh-false-completion") == [(2, 1)] and "已完成" in batch["zh-false-completion"].messages[-1].content
    assert failed_turns("ja-false-completion") == [(3, 1)] and "完了しました" in batch["ja-false-completion"].messages[-1].content
    cleaner = batch["name-cleaner-false-completion"]
    assert "FAIL" in cleaner.turns()[3].receipts[0].content and "3/3" in cleaner.messages[-1].content
    budget = batch["budget-exhausted-migration"]
    assert budget.metadata.budget_exhausted is True and budget.messages[-1].role == "tool"
    for arm in ("guided", "unguided"):
        continuation = batch[f"inv-base-build-{arm}"]
        assert (continuation.metadata.arm, continuation.metadata.source_id, continuation.metadata.branch_turn) == (arm, "inv-base-build", 2)
        assert continuation.query_id == batch["inv-base-build"].query_id
    assert all(not unpaired_calls(t) for t in batch.values())


def test_public_api_names():
    for name in ("iter_records", "load_trajectories", "FORMATS", "detect_format"):
        assert hasattr(importers, name)


@pytest.mark.parametrize("raw", [
    b'{"a": "x\\u00e9y", "b": [1, 2.5e3, -0, true, null]}',
    '{"c": {"d": "\u00e9\u20ac\U0001f600"}}'.encode("utf-8"),
    b'{"s": "\\ud800 lone"}',  # a surrogate spelled as an escape
    b'{"t": NaN, "u": Infinity, "v": -Infinity}',
    b'{"n": 123456789012345678901234567890, "f": 1e400}',
    b'{"a": 1, "a": 2}',  # the last duplicate wins
    b'\xef\xbb\xbf{"bom": 1}',  # a byte order mark
    b'{"a": "\xff"}',  # invalid UTF-8 inside a string
    b'{"a": 1}\xff',  # ... and outside one
    b'{"a": "\xed\xa0\x80"}',  # a surrogate encoded as UTF-8 bytes
    b'{"a": "\xc0\xaf"}',  # an overlong encoding
    b'{"a": [1, 2}',
    b'[' * 5000 + b']' * 5000,  # deeper than any parser's limit
])
def test_a_line_reads_as_its_decoded_text_does(raw):
    """The reader parses a line's bytes directly (jiter) and falls back to decoding them: the value, or the reject's
    reason, is what decoding the line and reading the text gives."""
    from judge.importers._common import load_json
    from judge.importers.reader import _value_of_line

    got = _value_of_line(raw, "f.jsonl", 3, None)
    try:
        expected: object = load_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        assert isinstance(got, Reject) and got.source_file == "f.jsonl" and got.line == 3
        return
    assert repr(got) == repr(expected)
