"""Values derived from one trajectory object, computed once while it lives: its rules analysis, its call sites.

One pass takes each trajectory object through the rules judge, the release gate and repair routing, and each of
them asks for the same derived views. A :class:`TrajectoryMemo` keeps the last few, keyed by the object (not its
content): an edited trajectory is another object (the repair editor copies before it changes anything) and is
derived afresh, and so is a trajectory whose message list or metadata was replaced or whose list changed length.
A change inside a message, made in place after a view was derived, is not seen: copy a trajectory to change it.

An entry holds the trajectory only by a weak reference and leaves when the trajectory is freed; the value must
not refer to the trajectory either (a cycle would keep both alive until a full collection of the garbage
collector), only to its parts.
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from typing import Any, Generic, TypeVar

from judge.model import Message, Trajectory, TrajectoryMetadata

V = TypeVar("V")

_Entry = tuple["weakref.ref[Trajectory]", list[Message], int, TrajectoryMetadata, Any]


class TrajectoryMemo(Generic[V]):
    """One derived value per live trajectory object, for the last ``limit`` objects (the oldest leave first)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        # Ordered by insertion, the oldest first: OrderedDict drops its first entry in O(1), where a dict would scan
        # the slots its earlier deletions left at its front.
        self._entries: OrderedDict[int, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, trajectory: Trajectory) -> V | None:
        """The value stored for this very object, unless its messages or metadata were replaced since; else None."""
        entry = self._entries.get(id(trajectory))
        if (entry is not None and entry[0]() is trajectory and entry[1] is trajectory.messages
                and entry[2] == len(trajectory.messages) and entry[3] is trajectory.metadata):
            value: V = entry[4]
            return value
        return None

    def put(self, trajectory: Trajectory, value: V) -> V:
        """Store ``value`` (which must not refer to ``trajectory``) for this object; returns ``value``."""
        entries = self._entries
        key = id(trajectory)
        if len(entries) >= self.limit and key not in entries and entries:
            entries.popitem(last=False)
        ref = weakref.ref(trajectory, functools.partial(_forget, entries, key))
        entries[key] = (ref, trajectory.messages, len(trajectory.messages), trajectory.metadata, value)
        return value


def _forget(entries: OrderedDict[int, _Entry], key: int, ref: weakref.ref[Trajectory]) -> None:
    # Bound arguments, no module globals: the callback may run while the interpreter clears them at exit.
    entry = entries.get(key)
    if entry is not None and entry[0] is ref:  # not a newer object's entry under a reused id
        entries.pop(key, None)
