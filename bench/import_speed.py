"""Import speed beside ``json.loads`` of the same bytes: the cost of the importer over parsing alone.

Reads the tau-bench airline file (../shared/datasets/tau_bench_trajectories/gpt-4o-airline.json, 200
trajectories, 4.1 MB) as it is (one JSON document), as JSON Lines, and as gzipped JSON Lines, and times for
each: ``json.loads`` of every record (the floor), ``iter_records`` (parse, convert, checks) and
``write_import`` (the same plus writing canonical JSONL). CPU time of this process, best of --repeat runs (on
a shared machine wall time mostly measures the neighbours); the ratio to the floor is the figure to compare
between versions.

    python bench/import_speed.py [--repeat 15] [--file PATH]
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from judge.importers import iter_records
from judge.importers.writer import write_import

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "tau_bench_trajectories" / "gpt-4o-airline.json"


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--file", type=Path, default=DEFAULT)
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
        inputs = [
            ("document", args.file, lambda: json.loads(args.file.read_bytes())),
            ("jsonl", jsonl, lambda: [json.loads(line) for line in jsonl.read_bytes().splitlines()]),
            ("jsonl.gz", gz, lambda: [json.loads(line) for line in gzip.decompress(gz.read_bytes()).splitlines()]),
        ]
        print(f"{args.file.name}: {len(records)} records, {len(data) / 1e6:.1f} MB; JSONL {len(lines)} lines; best of {args.repeat}")
        print(f"{'input':10} {'json.loads':>11} {'iter_records':>13} {'ratio':>6} {'write_import':>13} {'ratio':>6}")
        for name, path, floor in inputs:
            count = sum(1 for item in iter_records([path]) if not hasattr(item, "reason"))
            if count != len(records):
                print(f"{name:10} this version imports {count} of {len(records)} records: not timed")
                continue
            t_floor = best(floor, args.repeat)
            t_iter = best(lambda path=path: sum(1 for _ in iter_records([path])), args.repeat)
            t_write = best(lambda path=path: write_import([path], folder / "out.jsonl", folder / "rejects.jsonl"), args.repeat)
            print(f"{name:10} {t_floor * 1e3:9.1f}ms {t_iter * 1e3:11.1f}ms {t_iter / t_floor:5.1f}x {t_write * 1e3:11.1f}ms {t_write / t_floor:5.1f}x")


if __name__ == "__main__":
    main()
