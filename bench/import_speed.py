"""Import speed beside ``json.loads`` of the same bytes: the cost of the importer over parsing alone.

Reads the tau-bench airline file (../shared/datasets/tau_bench_trajectories/gpt-4o-airline.json, 200
trajectories, 4.1 MB) as it is (one JSON document), as JSON Lines, and as gzipped JSON Lines, and times for
each: ``json.loads`` of every record (the floor), ``iter_records`` (parse, convert, checks), ``write_import``
(the same plus writing canonical JSONL) and ``read back``: ``Trajectory.model_validate_json`` of every line
written, what each stage after import pays per pass over trajectories.jsonl. CPU time of this process, best
of --repeat runs (on a shared machine wall time mostly measures the neighbours); the ratio to the floor is the
figure to compare between versions.

``--size N`` adds the same rows for the file replicated to N trajectories with unique ids as JSON Lines (the
input of bench/scale.py, kept in ``--tmp``), and compares ``write_import`` with the import target of issue #14
(within 3x the json floor).

    python bench/import_speed.py [--repeat 15] [--file PATH] [--size 10000 --tmp /tmp/trajudge-scale]
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from scale import build_input  # bench/ is this script's folder: the scale bench's replicated input

from judge.importers import iter_records
from judge.importers.writer import write_import
from judge.model import Trajectory

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "tau_bench_trajectories" / "gpt-4o-airline.json"
IMPORT_TARGET = 3.0  # write_import within this many times the json floor (issue #14)


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def read_back(path: Path) -> None:
    """Every canonical line of ``path`` parsed back into a Trajectory, one at a time (as a later stage reads)."""
    with path.open("rb") as handle:
        for line in handle:
            Trajectory.model_validate_json(line)


def time_input(name: str, path: Path, floor: Callable[[], object], expected: int, folder: Path, repeat: int) -> float | None:
    """Print the row of one input; return write_import over the floor (None when this version rejects records)."""
    count = sum(1 for item in iter_records([path]) if not hasattr(item, "reason"))
    if count != expected:
        print(f"{name:10} this version imports {count} of {expected} records: not timed")
        return None
    out = folder / "out.jsonl"
    t_floor = best(floor, repeat)
    t_iter = best(lambda: sum(1 for _ in iter_records([path])), repeat)
    t_write = best(lambda: write_import([path], out, folder / "rejects.jsonl"), repeat)
    t_read = best(lambda: read_back(out), repeat)
    print(f"{name:10} {t_floor * 1e3:9.1f}ms {t_iter * 1e3:11.1f}ms {t_iter / t_floor:5.1f}x {t_write * 1e3:11.1f}ms "
          f"{t_write / t_floor:5.1f}x {t_read * 1e3:10.1f}ms {t_read / t_floor:5.1f}x", flush=True)
    return t_write / t_floor


def lines_floor(path: Path) -> None:
    """``json.loads`` of every line of ``path`` (decompressed when gzipped), one at a time: bench/scale.py's floor."""
    with gzip.open(path) if path.suffix == ".gz" else path.open("rb") as handle:
        for line in handle:
            json.loads(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--file", type=Path, default=DEFAULT)
    parser.add_argument("--size", type=int, default=0, help="also time the file replicated to this many trajectories")
    parser.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()) / "trajudge-scale",
                        help="where the replicated input is built (and kept for the next run)")
    args = parser.parse_args()
    if not args.file.exists():
        raise SystemExit(f"{args.file} not found (the shared datasets folder is absent)")
    data = args.file.read_bytes()
    records = json.loads(data)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        jsonl = folder / "airline.jsonl"
        jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        gz = folder / "airline.jsonl.gz"
        gz.write_bytes(gzip.compress(jsonl.read_bytes()))
        lines = jsonl.read_bytes().splitlines()
        print(f"{args.file.name}: {len(records)} records, {len(data) / 1e6:.1f} MB; JSONL {len(lines)} lines; best of {args.repeat}")
        print(f"{'input':10} {'json.loads':>11} {'iter_records':>13} {'ratio':>6} {'write_import':>13} {'ratio':>6} "
              f"{'read back':>12} {'ratio':>6}")
        time_input("document", args.file, lambda: json.loads(args.file.read_bytes()), len(records), folder, args.repeat)
        time_input("jsonl", jsonl, lambda: lines_floor(jsonl), len(records), folder, args.repeat)
        time_input("jsonl.gz", gz, lambda: lines_floor(gz), len(records), folder, args.repeat)
        if args.size:
            args.tmp.mkdir(parents=True, exist_ok=True)
            big = build_input(args.file, args.size, args.tmp)
            repeat = max(1, min(args.repeat, 3))
            ratio = time_input(f"{args.size}", big, lambda: lines_floor(big), args.size, folder, repeat)
            if ratio is not None:
                met = "met" if ratio <= IMPORT_TARGET else "MISSED"
                print(f"target write_import at {args.size} <= {IMPORT_TARGET:.0f}x the json floor in CPU: {ratio:.1f}x: {met}")


if __name__ == "__main__":
    main()
