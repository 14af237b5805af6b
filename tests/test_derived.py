"""The per-object memo of derived views (judge.derived): reused for the same object only, holding nothing alive."""

from __future__ import annotations

import gc

from judge.derived import TrajectoryMemo
from judge.model import Message, Trajectory
from judge.repair.calls import call_sites
from judge.testing import builders as b


def make(tid: str = "t1") -> Trajectory:
    return b.trajectory(tid, [b.say("Checking.", b.call("c1", "bash", command="ls")), b.tool("c1", "a.txt"),
                              b.say("Done.")])


def test_a_value_is_kept_for_the_same_object_only() -> None:
    memo: TrajectoryMemo[str] = TrajectoryMemo(8)
    trajectory = make()
    assert memo.get(trajectory) is None
    memo.put(trajectory, "derived")
    assert memo.get(trajectory) == "derived"
    assert memo.get(trajectory.model_copy()) is None  # an equal copy is another object
    assert memo.get(trajectory.model_copy(deep=True)) is None


def test_replaced_or_grown_messages_and_replaced_metadata_are_not_reused() -> None:
    memo: TrajectoryMemo[str] = TrajectoryMemo(8)
    trajectory = make()
    memo.put(trajectory, "derived")
    trajectory.messages.append(Message(role="user", content="more", turn=2))
    assert memo.get(trajectory) is None
    memo.put(trajectory, "derived")
    trajectory.messages = trajectory.messages[:2]
    assert memo.get(trajectory) is None
    memo.put(trajectory, "derived")
    trajectory.metadata = trajectory.metadata.model_copy(update={"reward": 0.0})
    assert memo.get(trajectory) is None


def test_entries_leave_with_their_trajectory_and_beyond_the_limit() -> None:
    memo: TrajectoryMemo[str] = TrajectoryMemo(2)
    kept = [make(f"t{i}") for i in range(3)]
    for trajectory in kept:
        memo.put(trajectory, trajectory.id)
    assert len(memo) == 2 and memo.get(kept[0]) is None and memo.get(kept[2]) == "t2"
    del trajectory, kept[2]
    gc.collect()
    assert len(memo) == 1


def test_call_sites_are_found_once_per_object_and_returned_as_new_lists() -> None:
    trajectory = make()
    first = call_sites(trajectory)
    first.clear()  # a caller's list is its own
    again = call_sites(trajectory)
    assert [s.call.id for s in again] == ["c1"] and again is not first
    edited = trajectory.model_copy(update={"messages": trajectory.messages[-1:]})
    assert call_sites(edited) == []
