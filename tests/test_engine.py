"""judge.engine without a Ray instance: choosing an engine, and the Ray engine's pure helpers (how inputs are cut
into import parts and trajectories into shards, which addresses are this machine's loopback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.engine import LocalEngine, make_engine
from judge.engine.ray_engine import MAX_SHARD, MIN_SHARD, _import_parts, _on_loopback, _shard_size, _shards
from judge.schema import Reject


def test_engine_arguments() -> None:
    assert isinstance(make_engine("local"), LocalEngine)
    engine = LocalEngine()
    assert make_engine(engine) is engine and engine.describe() == {"name": "local"}
    with pytest.raises(ValueError, match="unknown engine 'spark'; known: local, ray"):
        make_engine("spark")
    with pytest.raises(ValueError, match="needs --engine ray"):
        make_engine("local", "auto")


@pytest.mark.parametrize(("address", "loopback"), [
    (None, True), ("127.0.0.1:6379", True), ("ray://127.0.0.1:10001", True), ("localhost:6379", True),
    ("ray://[::1]:10001", True), ("auto", False), ("ray://head.example:10001", False), ("10.0.0.5:6379", False),
])
def test_loopback_addresses(address: str | None, loopback: bool) -> None:
    assert _on_loopback(address) is loopback


@pytest.mark.parametrize(("total", "cpus", "size"), [
    (0, 2, MIN_SHARD), (10, 2, MIN_SHARD), (1000, 2, 125), (10_000, 2, 1250), (1_000_000, 2, MAX_SHARD),
    (1000, 64, MIN_SHARD),
])
def test_shard_size(total: int, cpus: int, size: int) -> None:
    assert _shard_size(total, cpus) == size


def test_shards_keep_every_line_in_order(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"id":"a"}\n{"id":"b"}\n\n{"id":"c"}\n{"id":"d"}')  # a blank line; no final newline
    assert list(_shards(path, 2)) == [b'{"id":"a"}\n{"id":"b"}\n', b'{"id":"c"}\n{"id":"d"}\n']
    assert list(_shards(path, 10)) == [b'{"id":"a"}\n{"id":"b"}\n{"id":"c"}\n{"id":"d"}\n']


def test_import_parts_group_files_and_keep_rejects_in_place(tmp_path: Path) -> None:
    files = []
    for name, size in (("a.jsonl", 5), ("b.jsonl", 5), ("c.jsonl", 20), ("d.jsonl", 1)):
        (tmp_path / name).write_bytes(b"x" * size)
        files.append(tmp_path / name)
    missing = Reject(source_file="gone.jsonl", reason="no such file or directory")
    parts = list(_import_parts([files[0], files[1], missing, files[2], files[3]], part_bytes=10))
    assert parts == [[files[0], files[1]], missing, [files[2]], [files[3]]]
