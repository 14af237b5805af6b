"""The Ray engine's overhead: ``judge score`` with ``--engine ray`` beside ``--engine local`` on the same input.

Input: N trajectories (default 1,000) of the tau-bench airline file replicated as in bench/scale.py (its
``build_input``), or synthetic ones (``judge.testing.synthetic``) when ../shared/datasets is absent. The
rules judge, lexical embedder, report included. Each run is ``judge score`` in a fresh subprocess, so the Ray
row includes starting and stopping a local instance; the start-up alone (``ray.init`` + ``ray.shutdown`` of an
instance of the same size) is printed beside it, so the per-shard cost can be read off. The two run directories
are compared file by file (modulo timestamps, durations and the engine section), as tests/test_ray_engine.py does.

    python bench/ray_overhead.py [--sizes 1000 10000] [--cpus 2] [--tmp /tmp/trajudge-ray-bench]

On a shared machine wall time also measures the neighbours: compare the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

JUDGE_CLI = "import sys; from judge.cli import main; sys.argv[0] = 'judge'; main()"
RAY_START = ("import os, time; os.environ['RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER'] = '0'; import ray; t = time.monotonic(); "
             "ray.init(num_cpus={cpus}, include_dashboard=False); ray.shutdown(); print(time.monotonic() - t)")
VOLATILE = frozenset({"latency_s", "judge_latency_s", "elapsed_s", "wall_s", "started_at", "finished_at",
                      "generated_at", "engine", "dir"})


def make_input(size: int, folder: Path) -> tuple[Path, str]:
    from scale import DEFAULT_SOURCE, build_input

    folder.mkdir(parents=True, exist_ok=True)
    if DEFAULT_SOURCE.is_file():
        return build_input(DEFAULT_SOURCE, size, folder), "tau-bench airline, replicated"
    from judge.testing.synthetic import synthetic_batch

    path = folder / f"synthetic-{size}.jsonl"
    if not path.exists():
        trajectories, _ = synthetic_batch(size)
        path.write_text("".join(t.to_json_line() + "\n" for t in trajectories), encoding="utf-8")
    return path, "synthetic (../shared/datasets absent)"


def run(args: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", JUDGE_CLI, "score", *args], env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode not in (0, 2):  # 2: some passes unscored, not an error of the run
        raise SystemExit(f"judge {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall


def comparable(value: object) -> object:
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def differing_files(local: Path, ray: Path) -> list[str]:
    differ = []
    for path in sorted(local.iterdir()):
        other = ray / path.name
        if path.suffix == ".jsonl":
            same = other.exists() and [comparable(json.loads(x)) for x in path.read_text().splitlines()] == \
                [comparable(json.loads(x)) for x in other.read_text().splitlines()]
        elif path.suffix == ".json":
            same = other.exists() and comparable(json.loads(path.read_text())) == comparable(json.loads(other.read_text()))
        else:
            continue
        if not same:
            differ.append(path.name)
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    parser.add_argument("--tmp", type=Path, default=Path("/tmp/trajudge-ray-bench"))
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    start = subprocess.run([sys.executable, "-c", RAY_START.format(cpus=options.cpus)], env=env, capture_output=True,
                           text=True, check=True)
    startup = float(start.stdout.strip().splitlines()[-1])
    print(f"Ray local instance start + stop alone ({options.cpus} CPUs): {startup:.1f} s")
    print(f"{'trajectories':>12} {'local s':>8} {'ray s':>8} {'ray/local':>9} {'ray - start':>11} {'(ray-start)/local':>17}  identical")
    for size in options.sizes:
        source, kind = make_input(size, options.tmp / "inputs")
        walls = {}
        for engine in ("local", "ray"):
            out = options.tmp / f"run-{size}-{engine}"
            shutil.rmtree(out, ignore_errors=True)
            extra = ["--engine", "ray"] if engine == "ray" else []
            walls[engine] = run([str(source), "--out", str(out), "--embedder", "lexical", *extra], env)
        differ = differing_files(options.tmp / f"run-{size}-local", options.tmp / f"run-{size}-ray")
        local, ray = walls["local"], walls["ray"]
        print(f"{size:>12} {local:>8.1f} {ray:>8.1f} {ray / local:>9.2f} {ray - startup:>11.1f} {(ray - startup) / local:>17.2f}  "
              f"{'yes' if not differ else 'NO: ' + ', '.join(differ)}   ({kind})")


if __name__ == "__main__":
    main()
