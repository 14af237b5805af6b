"""Large run directories for report tests and benches: a small scored run replicated to N trajectories.

:func:`replicate_run` copies every row of a base run (trajectories, verdicts, clusters, scores, repairs) once
per copy, with the trajectory id renamed (``<id>~r<copy>`` for copies after the first), keeping the files in
trajectory order as the pipeline writes them. Rows are renamed as text (``"id":...`` of a trajectory,
``"trajectory_id":...`` of the other rows), not re-parsed, so 100,000 trajectories take seconds rather than
minutes. ``run.json``, ``rejects.jsonl`` and ``store.sqlite`` are copied as they are.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from pathlib import Path

from judge import rundir

_SIDE_FILES = (rundir.VERDICTS, rundir.CLUSTERS, rundir.SCORES, rundir.REPAIRS)
_COPIED = (rundir.MANIFEST, rundir.REJECTS, rundir.STORE)


def copy_id(trajectory_id: str, copy: int) -> str:
    """The id of ``trajectory_id`` in copy number ``copy`` (copy 0 keeps the original id)."""
    return trajectory_id if copy == 0 else f"{trajectory_id}~r{copy}"


def replicate_run(base: Path, out: Path, size: int) -> Path:
    """Write a run of ``size`` trajectories into ``out`` (replaced) from the scored run ``base``; returns ``out``."""
    base, out = Path(base), Path(out)
    lines = [line for line in (base / rundir.TRAJECTORIES).read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = [json.loads(line)["id"] for line in lines]
    side: dict[str, dict[str, list[str]]] = {}
    for name in _SIDE_FILES:
        grouped: dict[str, list[str]] = defaultdict(list)
        if (base / name).is_file():
            for line in (base / name).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    grouped[json.loads(line)["trajectory_id"]].append(line)
        side[name] = grouped
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in _COPIED:
        if (base / name).is_file():
            shutil.copyfile(base / name, out / name)
    handles = {name: (out / name).open("w", encoding="utf-8") for name in (rundir.TRAJECTORIES, *_SIDE_FILES)
               if name == rundir.TRAJECTORIES or (base / name).is_file()}
    try:
        for index in range(size):
            copy, position = divmod(index, len(lines))
            old = ids[position]
            new = copy_id(old, copy)
            old_key, new_key = json.dumps(old, ensure_ascii=False), json.dumps(new, ensure_ascii=False)
            handles[rundir.TRAJECTORIES].write(lines[position].replace(f'"id":{old_key}', f'"id":{new_key}', 1) + "\n")
            for name, grouped in side.items():
                if name in handles:
                    for line in grouped.get(old, ()):
                        handles[name].write(line.replace(f'"trajectory_id":{old_key}', f'"trajectory_id":{new_key}') + "\n")
    finally:
        for handle in handles.values():
            handle.close()
    os.utime(out)
    return out
