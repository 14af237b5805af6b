"""Large batches: wall, peak RSS and trajectories/s per stage of the rules-judge pipeline, beside json parsing.

Builds inputs of N trajectories (default 10,000 and 100,000) by replicating the tau-bench airline file
(../shared/datasets/tau_bench_trajectories/gpt-4o-airline.json, 200 trajectories, 4.1 MB) as JSON Lines with
unique ids (copy k renumbers ``trial`` to ``trial + 4k``, so ids stay ``tau-airline-<task>-t<trial>`` and
the copies of a task share its query group). Inputs and runs go to a temporary folder (``--tmp``), never the
repository; the inputs are kept between invocations (``--keep`` keeps the runs too).

For each size it prints, each row measured in a fresh subprocess (wall time; CPU time, user + system; peak
RSS, the child's ``ru_maxrss`` from ``os.wait4``; CPU time of Python's cyclic garbage collector, from
``gc.callbacks``; trajectories/s; CPU time over the floor's):

- ``json floor``: stdlib ``json.loads`` of every line of the input, in this process;
- each stage of ``judge score`` alone on the same run directory: import, judge (the rules panel), score
  (cluster + score + gate + Parquet tables), repair (routing), report; then their sums without the report and
  with it;
- ``pipeline``: import, judge, score and repair in one process (what ``judge score`` runs before its report);
- ``judge score``: the command end to end, report included (``--no-report`` skips the report stage and this
  row: the report of 10k trajectories takes ~2 GB, so 100k would not fit in this machine's memory).

Targets (issue #14): peak RSS under 500 MB at 100k; the end-to-end rules-judge run within 15x of stdlib json
parsing of the input. On a shared machine wall time also measures the neighbours: CPU time is the figure to
compare between versions.

    python bench/scale.py [--sizes 10000 100000] [--tmp /tmp/trajudge-scale] [--keep] [--no-report]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "datasets" / "tau_bench_trajectories" / "gpt-4o-airline.json"
STAGES = ("import", "judge", "score", "repair", "report")
JUDGE_CLI = "import sys; from judge.cli import main; sys.argv[0] = 'judge'; main()"
TRIALS_PER_COPY = 4  # the airline file has trials 0-3 of each task


def build_input(source: Path, size: int, folder: Path) -> Path:
    """``folder/airline-<size>.jsonl``: the source records replicated to ``size`` lines with unique ids."""
    path = folder / f"airline-{size}.jsonl"
    if path.exists():
        return path
    records = json.loads(source.read_bytes())
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for index in range(size):
            copy, record = divmod(index, len(records))
            row = dict(records[record])
            row["trial"] = row["trial"] + TRIALS_PER_COPY * copy
            out.write(json.dumps(row) + "\n")
    os.replace(tmp, path)
    return path


def parse_floor(path: Path) -> tuple[float, float]:
    """(CPU s, wall s) of ``json.loads`` on every line of ``path``, one line at a time."""
    start_cpu, start_wall = time.process_time(), time.monotonic()
    with path.open("rb") as handle:
        for line in handle:
            json.loads(line)
    return time.process_time() - start_cpu, time.monotonic() - start_wall


def run_stages(stages: list[str], run_dir: Path, input_path: Path) -> None:
    """Run stages in this process (the child side of :func:`measure`), in order; prints the GC time as JSON."""
    gc_time = [0.0, 0.0]  # total, start of the current collection

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            gc_time[1] = time.process_time()
        else:
            gc_time[0] += time.process_time() - gc_time[1]

    gc.callbacks.append(on_gc)
    for stage in stages:
        if stage == "import":
            from judge.pipeline import import_to_run

            import_to_run([input_path], run_dir)
        elif stage == "judge":
            import asyncio

            from judge.panel import PanelConfig, run_panel
            from judge.rundir import RunDir

            asyncio.run(run_panel(RunDir(run_dir).trajectories(), PanelConfig(), run_dir, progress=False))
        elif stage == "score":
            from judge.pipeline import score_run

            score_run(run_dir)
        elif stage == "repair":
            from judge.repair import route_run

            route_run(run_dir)
        elif stage == "report":
            from judge.report import build_report

            build_report(run_dir)
        else:
            raise SystemExit(f"unknown stage {stage}")
    gc.callbacks.remove(on_gc)
    print(json.dumps({"gc_s": gc_time[0]}))


def measure(command: list[str]) -> dict[str, float]:
    """Run ``command`` in a subprocess: wall, CPU (user + system) and peak RSS of that child alone."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        # wait4 gives the rusage of this child alone (RUSAGE_CHILDREN would be the max over every child so far).
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
        child.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        out_text, err_text = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if code not in (0, 2):  # judge score exits 2 when some passes are unscored
        sys.stderr.write(err_text[-3000:])
        raise SystemExit(f"{' '.join(command)} failed with exit code {code}")
    result = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}
    lines = out_text.strip().splitlines()
    if lines and lines[-1].startswith("{"):
        result.update(json.loads(lines[-1]))
    return result


def row(name: str, figures: dict[str, float], size: int, floor_cpu: float) -> str:
    gc_text = f"{figures['gc_s']:7.1f}s" if "gc_s" in figures else f"{'':>8}"
    return (f"{name:12} {figures['wall']:8.1f}s {figures['cpu']:8.1f}s {figures['rss_mb']:8.0f}MB {gc_text} "
            f"{size / max(figures['wall'], 1e-9):9.0f} {figures['cpu'] / floor_cpu:7.1f}x")


def child(stages: list[str], run_dir: Path, input_path: Path) -> list[str]:
    return [sys.executable, __file__, "--stages", *stages, "--run", str(run_dir), "--input", str(input_path)]


def bench_size(source: Path, size: int, folder: Path, with_report: bool, keep: bool) -> None:
    input_path = build_input(source, size, folder)
    floor_cpu, floor_wall = parse_floor(input_path)
    print(f"\n{size:,} trajectories: {input_path} ({input_path.stat().st_size / 1e6:,.0f} MB)")
    print(f"{'':12} {'wall':>9} {'cpu':>9} {'peak RSS':>10} {'gc cpu':>8} {'traj/s':>9} {'cpu/floor':>8}")
    print(f"{'json floor':12} {floor_wall:8.1f}s {floor_cpu:8.1f}s {'':>10} {'':>8} {size / floor_wall:9.0f} {1.0:7.1f}x")
    run_dir = folder / f"run-{size}"
    shutil.rmtree(run_dir, ignore_errors=True)
    total = {"wall": 0.0, "cpu": 0.0, "rss_mb": 0.0, "gc_s": 0.0}
    for stage in STAGES:
        if stage == "report":
            print(row("no report", total, size, floor_cpu))
            if not with_report:
                break
        figures = measure(child([stage], run_dir, input_path))
        print(row(stage, figures, size, floor_cpu), flush=True)
        for key in ("wall", "cpu", "gc_s"):
            total[key] += figures.get(key, 0.0)
        total["rss_mb"] = max(total["rss_mb"], figures["rss_mb"])
    if with_report:
        print(row("all stages", total, size, floor_cpu))
    one_dir = folder / f"run-{size}-one"
    shutil.rmtree(one_dir, ignore_errors=True)
    pipeline = measure(child([s for s in STAGES if s != "report"], one_dir, input_path))
    print(row("pipeline", pipeline, size, floor_cpu), flush=True)
    results = [("without the report", pipeline)]
    shutil.rmtree(one_dir, ignore_errors=True)
    if with_report:
        figures = measure([sys.executable, "-c", JUDGE_CLI, "score", str(input_path), "--out", str(one_dir)])
        print(row("judge score", figures, size, floor_cpu), flush=True)
        results.append(("judge score", figures))
    for label, figures in results:
        print(f"targets, {label}: peak RSS {figures['rss_mb']:.0f} MB (< 500 MB at 100k); CPU "
              f"{figures['cpu'] / floor_cpu:.1f}x the json floor (<= 15x)")
    if not keep:
        shutil.rmtree(one_dir, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--tmp", type=Path, default=Path("/tmp/trajudge-scale"))
    parser.add_argument("--keep", action="store_true", help="keep the run directories")
    parser.add_argument("--no-report", action="store_true", help="skip the report stage and the `judge score` row")
    parser.add_argument("--stages", nargs="+", choices=STAGES, help=argparse.SUPPRESS)  # the child side
    parser.add_argument("--run", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stages:
        run_stages(args.stages, args.run, args.input)
        return
    if not args.source.exists():
        raise SystemExit(f"{args.source} not found (the shared datasets folder is absent)")
    args.tmp.mkdir(parents=True, exist_ok=True)
    for size in args.sizes:
        bench_size(args.source, size, args.tmp, not args.no_report, args.keep)


if __name__ == "__main__":
    main()
