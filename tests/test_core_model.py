"""The canonical model and the run store: turn numbering, round trip, hashing, migrations, path safety."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from judge import rundir
from judge.model import Message, Receipt, ToolCall, Trajectory, TrajectoryMetadata, number_turns
from judge.store import MIGRATIONS, RunStore, cache_key


def _trajectory() -> Trajectory:
    messages = number_turns(
        [
            Message(role="system", content="sys"),
            Message(role="user", content="build it"),
            Message(role="assistant", content="", tool_calls=[ToolCall(id="a", name="Bash", arguments={"cmd": "ls"}),
                                                              ToolCall(id="b", name="Read", arguments={"path": "x"})]),
            Message(role="tool", receipt=Receipt(call_id="b", content="file")),
            Message(role="tool", receipt=Receipt(call_id="a", content="boom", is_error=True, exit_code=2)),
            Message(role="assistant", content="done"),
        ]
    )
    return Trajectory(id="t1", query="build it", query_id="q", messages=messages,
                      metadata=TrajectoryMetadata(source_format="openai"))


def test_turns_are_numbered_from_one_and_receipts_follow_their_call():
    trajectory = _trajectory()
    assert [m.turn for m in trajectory.messages] == [0, 0, 1, 1, 1, 2]
    turns = trajectory.turns()
    assert [t.number for t in turns] == [1, 2]
    assert [r.call_id for r in turns[0].receipts] == ["a", "b"]  # in call order, not arrival order
    assert turns[0].receipt_for("a").exit_code == 2
    assert turns[1].receipts == []


def test_canonical_json_round_trips_to_the_identical_model():
    trajectory = _trajectory()
    assert Trajectory.model_validate_json(trajectory.to_json_line()) == trajectory


def test_content_hash_ignores_metadata_but_not_content():
    trajectory = _trajectory()
    relabelled = trajectory.model_copy(update={"metadata": TrajectoryMetadata(source_format="anthropic", arm="x")})
    assert relabelled.content_hash() == trajectory.content_hash()
    changed = trajectory.model_copy(deep=True)
    changed.messages[-1].content = "done!"
    assert changed.content_hash() != trajectory.content_hash()


def test_argument_hash_is_stable_under_key_order():
    one = ToolCall(id="1", name="Bash", arguments={"a": 1, "b": 2})
    two = ToolCall(id="2", name="Bash", arguments={"b": 2, "a": 1})
    assert one.argument_hash() == two.argument_hash()
    assert one.argument_hash() != ToolCall(id="3", name="Bash", arguments={"a": 1}).argument_hash()


def test_store_migrates_once_and_caches(tmp_path: Path):
    path = tmp_path / "store.sqlite"
    with RunStore(path) as store:
        assert store.schema_version == len(MIGRATIONS)
        key = cache_key(trajectory="h", pass_index=1)
        assert store.get_verdict(key) is None
        store.put_verdict(key, "t1", "rules", 1, {"status": "ok"})
        store.put_embeddings("m", {"hello": np.array([1.0, 2.0])})
    with RunStore(path) as store:  # reopening applies no migration twice and keeps the rows
        assert store.get_verdict(key) == {"status": "ok"}
        assert store.get_embeddings("m", ["hello", "other"])["hello"].tolist() == [1.0, 2.0]
        assert store.count_verdicts() == 1


def test_store_refuses_a_newer_schema(tmp_path: Path):
    path = tmp_path / "store.sqlite"
    RunStore(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    db.close()
    with pytest.raises(RuntimeError, match="newer"):
        RunStore(path)


def test_cache_key_depends_on_every_part():
    base = dict(trajectory="h", prompt="v1", provider="openai", model="m", params={"t": 1}, pass_index=1)
    assert cache_key(**base) == cache_key(**dict(reversed(list(base.items()))))
    for name in base:
        assert cache_key(**{**base, name: "other"}) != cache_key(**base)


@pytest.mark.parametrize("name", ["../escape.html", "/etc/passwd", "a/../../b"])
def test_safe_child_refuses_paths_outside_the_run(tmp_path: Path, name: str):
    with pytest.raises(ValueError, match="outside"):
        rundir.safe_child(tmp_path, name)


def test_safe_child_allows_nested_names(tmp_path: Path):
    assert rundir.safe_child(tmp_path, "viewer/t1.html") == (tmp_path / "viewer" / "t1.html").resolve()
