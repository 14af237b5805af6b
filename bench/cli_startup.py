"""Start-up time of the CLI: ``judge --help`` and ``judge <command> --help`` beside a bare interpreter and ``import
typer`` (the floor any typer CLI pays).

    python bench/cli_startup.py [--repeat 15]

Each figure is the wall time of a fresh ``python -c`` process, best and median of ``--repeat`` runs, so it includes
the interpreter's own start-up (about 15-25 ms). The target (issue 27) is ``judge --help`` and ``judge <command>
--help`` under 150 ms. The CLI imports what a command needs when the command runs: tests/test_imports.py checks
that help loads neither the canonical model, the run directory, asyncio nor numpy (and the top-level help not
even pydantic, which typer needs to build a command's options). On a busy machine the figures grow with the
load: compare the rows with the floor rows printed beside them, not with the target alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    ("python -c pass", "pass"),
    ("import typer", "import typer"),
    ("judge --help", "import sys; sys.argv = ['judge', '--help']\nfrom judge.cli import main\nmain()"),
    ("judge score --help", "import sys; sys.argv = ['judge', 'score', '--help']\nfrom judge.cli import main\nmain()"),
    ("judge show --help", "import sys; sys.argv = ['judge', 'show', '--help']\nfrom judge.cli import main\nmain()"),
    ("judge repair run --help", "import sys; sys.argv = ['judge', 'repair', 'run', '--help']\nfrom judge.cli import main\nmain()"),
]


def wall_ms(code: str, env: dict[str, str]) -> float:
    """Wall time of one fresh interpreter running ``code``, in ms (its output is discarded)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    times: dict[str, list[float]] = {name: [] for name, _ in CASES}
    for _ in range(args.repeat):  # interleaved: a change in the machine's load touches every row alike
        for name, code in CASES:
            times[name].append(wall_ms(code, env))
    floor = min(times["python -c pass"])
    print(f"{'what':<26}{'best ms':>9}{'median ms':>11}{'best - interpreter':>20}")
    for name, _ in CASES:
        best, median = min(times[name]), statistics.median(times[name])
        print(f"{name:<26}{best:>9.0f}{median:>11.0f}{best - floor:>20.0f}")
    print(f"target: judge --help and judge <command> --help under 150 ms (best of {args.repeat})")


if __name__ == "__main__":
    main()
