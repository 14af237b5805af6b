"""The run directory as a stream of per-trajectory entries: each trajectory with its score row, clusters,
verdicts and repair, joined while reading, so the report never holds the batch in memory.

Every stage writes its rows in trajectory order (the input order of ``trajectories.jsonl``), so the join is a
merge: each side file (verdicts, clusters, scores, repairs) is read once, in step with the trajectories. A few
rows out of place are tolerated (the last :data:`WINDOW` trajectories stay open for late rows); a side file in
another order is detected and then read whole into memory, grouped by trajectory (correct, not flat: the
report says which file it read that way). Rows whose trajectory is not in ``trajectories.jsonl`` (or whose
trajectory row cannot be read) still count: they come out as entries without a trajectory, after the others.

Everything is read through :class:`judge.rundir.RunDir`; a missing file reads as empty and a bad row is
skipped and listed in ``bad_rows`` with its file and line (the report shows them).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from judge import rundir
from judge.model import Trajectory, Usage
from judge.rundir import BadRow, RunDir
from judge.schema import Cluster, RepairRow, ScoreRow, Verdict

WINDOW = 32  # trajectories kept open for rows that arrive a little late
SIDE_FILES = (rundir.SCORES, rundir.CLUSTERS, rundir.VERDICTS, rundir.REPAIRS)


@dataclass
class Entry:
    """One trajectory id and every row the run holds for it."""

    id: str
    trajectory: Trajectory | None  # None: rows name an id that trajectories.jsonl does not hold (or cannot read)
    scores: list[ScoreRow] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    repairs: list[RepairRow] = field(default_factory=list)
    # The trajectory's canonical JSON (its line of trajectories.jsonl, no newline; the UTF-8 bytes when the caller
    # has those) when the caller has it: the report's viewer data embeds it as is. None: the report serialises
    # ``trajectory`` itself.
    line: str | bytes | None = None

    # What the summary and the viewer both derive from the trajectory's messages, derived once when first asked
    # (plain attributes: in Python 3.11 a cached_property takes a lock at its first read, each trajectory).
    _generation_usage: Usage | None = field(default=None, init=False, repr=False, compare=False)
    _assistant_turns: list[int | None] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def generation_usage(self) -> Usage:
        """The trajectory's :meth:`~judge.model.Trajectory.generation_usage`."""
        if self._generation_usage is None:
            assert self.trajectory is not None, "an entry without a trajectory has no generation usage"
            self._generation_usage = self.trajectory.generation_usage()
        return self._generation_usage

    @property
    def assistant_turns(self) -> list[int | None]:
        """The turn of each assistant message, in source order (as many as the trajectory's turn_count)."""
        if self._assistant_turns is None:
            assert self.trajectory is not None, "an entry without a trajectory has no turns"
            self._assistant_turns = [m.turn for m in self.trajectory.messages if m.role == "assistant"]
        return self._assistant_turns

    @property
    def score(self) -> ScoreRow | None:
        """The trajectory's score row (the first, if a file repeats one), None when the scorer wrote none."""
        return self.scores[0] if self.scores else None

    @property
    def repair(self) -> RepairRow | None:
        return self.repairs[-1] if self.repairs else None

    def rows(self, name: str) -> list[Any]:
        lists: dict[str, list[Any]] = {rundir.SCORES: self.scores, rundir.CLUSTERS: self.clusters,
                                       rundir.VERDICTS: self.verdicts, rundir.REPAIRS: self.repairs}
        return lists[name]


class OutOfOrder(Exception):
    """A side file's rows are not in trajectory order beyond the window (the join restarts without merging it)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class _Ids:
    """Which ids trajectories.jsonl holds, and how far the stream has gone through them."""

    def __init__(self, ids: list[str]):
        self.expected: deque[str] = deque(ids)
        self.upcoming: dict[str, int] = defaultdict(int)
        for trajectory_id in ids:
            self.upcoming[trajectory_id] += 1
        self.finished: set[str] = set()

    def reach(self, trajectory_id: str) -> None:
        """The stream read the trajectory ``trajectory_id``: ids skipped on the way were unreadable rows."""
        while self.expected:
            current = self.expected.popleft()
            self._leave(current)
            if current == trajectory_id:
                return

    def skip_rest(self) -> None:
        while self.expected:
            self._leave(self.expected.popleft())

    def _leave(self, trajectory_id: str) -> None:
        self.upcoming[trajectory_id] -= 1
        if self.upcoming[trajectory_id] <= 0:
            del self.upcoming[trajectory_id]

    def is_later(self, trajectory_id: str) -> bool:
        return trajectory_id in self.upcoming


class _Side:
    """One side file read in step with the trajectories."""

    def __init__(self, name: str, rows: Iterator[Any]):
        self.name = name
        self.rows = rows
        self.peeked: Any = None
        self.exhausted = False
        self._advance()

    def _advance(self) -> None:
        self.peeked = next(self.rows, None)
        self.exhausted = self.peeked is None

    def pull(self, open_entries: OrderedDict[str, Entry], orphans: OrderedDict[str, Entry], ids: _Ids) -> None:
        """Read rows until the next one belongs to a trajectory the stream has not reached yet."""
        while self.peeked is not None:
            row = self.peeked
            trajectory_id = row.trajectory_id
            if trajectory_id in open_entries:
                open_entries[trajectory_id].rows(self.name).append(row)
            elif ids.is_later(trajectory_id):
                return
            elif trajectory_id in ids.finished:
                raise OutOfOrder(self.name)
            else:
                orphan = orphans.get(trajectory_id)
                if orphan is None:
                    orphan = orphans[trajectory_id] = Entry(trajectory_id, None)
                orphan.rows(self.name).append(row)
            self._advance()


def _reader(run: RunDir, name: str, bad_rows: list[BadRow]) -> Iterator[Any]:
    readers: dict[str, Callable[..., Iterator[Any]]] = {
        rundir.SCORES: run.scores, rundir.CLUSTERS: run.clusters, rundir.VERDICTS: run.verdicts, rundir.REPAIRS: run.repairs,
    }
    return readers[name](missing_ok=True, bad_rows=bad_rows)


def trajectory_ids(run: RunDir) -> list[str]:
    """The ids of trajectories.jsonl in file order (rows without an id left out), without building trajectories:
    each read from its line's start (parsing a 26 KB line for its id cost an eighth of a report). A line that names
    an id but is not a valid trajectory is listed: the stream counts it among the unreadable rows it skips."""
    if not run.has(rundir.TRAJECTORIES):
        return []
    ids = []
    with run.file(rundir.TRAJECTORIES).open("rb") as lines:
        for line in lines:
            if line.strip():
                with contextlib.suppress(ValueError):
                    ids.append(rundir.trajectory_line_id(line))
    return ids


def entries(run: RunDir, ids: list[str], bad_rows: list[BadRow], grouped: frozenset[str] = frozenset()) -> Iterator[Entry]:
    """Each trajectory of ``run`` with its rows, in input order, then the entries of ids without a trajectory.

    ``ids`` are :func:`trajectory_ids` of the run. Side files named in ``grouped`` are read whole and grouped
    by id first (the fallback for a file out of order); the others are merged. Raises :class:`OutOfOrder` when a
    merged file turns out not to be in trajectory order (a caller restarts with that file in ``grouped``).
    """
    position = _Ids(ids)
    orphans: OrderedDict[str, Entry] = OrderedDict()
    in_memory: dict[str, dict[str, list[Any]]] = {}
    for name in grouped:
        rows_of: dict[str, list[Any]] = defaultdict(list)
        for row in _reader(run, name, bad_rows):
            rows_of[row.trajectory_id].append(row)
        in_memory[name] = rows_of
    sides = [_Side(name, _reader(run, name, bad_rows)) for name in SIDE_FILES if name not in grouped]
    open_entries: OrderedDict[str, Entry] = OrderedDict()
    for line, trajectory in run.trajectory_lines(missing_ok=True, bad_rows=bad_rows):
        position.reach(trajectory.id)
        if trajectory.id in open_entries or trajectory.id in position.finished:
            continue  # a repeated id: its rows went to the first trajectory of that id
        entry = Entry(trajectory.id, trajectory, line=line.rstrip("\r\n"))
        for name, rows_of in in_memory.items():
            entry.rows(name).extend(rows_of.pop(trajectory.id, []))
        open_entries[trajectory.id] = entry
        for side in sides:
            side.pull(open_entries, orphans, position)
        while len(open_entries) > WINDOW:
            yield _close(open_entries, position)
    position.skip_rest()
    for side in sides:
        side.pull(open_entries, orphans, position)  # what is left belongs to open entries or to no trajectory
    while open_entries:
        yield _close(open_entries, position)
    for name, rows_of in in_memory.items():
        for trajectory_id, rows in rows_of.items():
            orphan = orphans.get(trajectory_id)
            if orphan is None:
                orphan = orphans[trajectory_id] = Entry(trajectory_id, None)
            orphan.rows(name).extend(rows)
    yield from orphans.values()


def _close(open_entries: OrderedDict[str, Entry], position: _Ids) -> Entry:
    trajectory_id, entry = open_entries.popitem(last=False)
    position.finished.add(trajectory_id)
    return entry
