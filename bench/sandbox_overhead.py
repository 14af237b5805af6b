"""What bubblewrap adds to a tool call of ``judge continue``: the wall time of a Bash call that does nothing
(``true``) unconfined (``--sandbox none``) and in bubblewrap (``--sandbox bwrap``).

    python bench/sandbox_overhead.py [--repeat 30]

Best and median per mode, in milliseconds. Each call is a fresh ``bash -c`` either way (as the harness runs it), so
the difference between the rows is bubblewrap's namespaces and mounts. On a busy machine both rows grow: compare
them with each other.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from judge.continuation import Confinement, Limits, Sandbox
from judge.continuation.confine import Isolation, bwrap_problem


def timings(isolation: Isolation, repeat: int, parent: Path) -> list[float]:
    box = Sandbox.create(None, Limits(), parent=parent, confinement=Confinement(isolation))
    try:
        asyncio.run(box.bash("true"))  # warm the caches once
        seen = []
        for _ in range(repeat):
            started = time.perf_counter()
            asyncio.run(box.bash("true"))
            seen.append((time.perf_counter() - started) * 1000)
        return seen
    finally:
        box.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    modes: list[Isolation] = ["none", "bwrap"] if bwrap_problem() is None else ["none"]
    if len(modes) == 1:
        print(f"bwrap row skipped: {bwrap_problem()}")
    with tempfile.TemporaryDirectory() as parent:
        for mode in modes:
            seen = timings(mode, args.repeat, Path(parent))
            print(f"--sandbox {mode:<5}  best {min(seen):6.1f} ms  median {statistics.median(seen):6.1f} ms  ({args.repeat} calls)")


if __name__ == "__main__":
    main()
