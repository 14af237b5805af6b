"""judge.engine without a Ray instance: choosing an engine, and the Ray engine's pure helpers (how inputs are cut
into import parts and trajectories into shards, which addresses are this machine's loopback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.engine import LocalEngine, make_engine
from judge.engine.ray_engine import MAX_SHARD, MIN_SHARD, _import_parts, _on_loopback, _shard_size, _shards
from judge.importers.reader import read_file, read_span, split_lines_file
from judge.schema import Reject

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "batch"


def test_engine_arguments() -> None:
    assert isinstance(make_engine("local"), LocalEngine)
    engine = LocalEngine()
    assert make_engine(engine) is engine and engine.describe() == {"name": "local"}
    with pytest.raises(ValueError, match="unknown engine 'spark'; known: local, ray"):
        make_engine("spark")
    with pytest.raises(ValueError, match="needs --engine ray"):
        make_engine("local", "auto")


def test_the_ray_engine_refuses_batch_before_anything_runs() -> None:
    from judge.engine.ray_engine import RayEngine
    from judge.panel import PanelConfig

    RayEngine().check(PanelConfig())
    with pytest.raises(ValueError, match="--batch .* does not combine with --engine ray"):
        RayEngine().check(PanelConfig(batch=True))


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


def _mixed_file(tmp_path: Path) -> Path:
    """Example records with every line end the reader knows (\\n, \\r\\n, a lone \\r), blank lines, a broken line
    and a UTF-8 BOM: a span must number its lines and reject as the whole file does."""
    lines = (EXAMPLES / "openai_runs.jsonl").read_bytes().splitlines()
    ends = (b"\n", b"\r\n", b"\r", b"\n\n")
    body = b"".join(line + ends[i % len(ends)] for i, line in enumerate(lines * 3))
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + body + b"{broken\n" + lines[0])  # no final line end
    return path


@pytest.mark.parametrize("part_bytes", [1, 2_000, 20_000])
def test_a_large_file_read_in_spans_gives_what_reading_it_whole_gives(tmp_path: Path, part_bytes: int) -> None:
    path = _mixed_file(tmp_path)
    spans = split_lines_file(path, part_bytes)
    assert spans is not None and len(spans) > 1 and spans[0].start == 0 and spans[-1].end == path.stat().st_size
    whole = list(read_file(path))
    assert [item for span in spans for item in read_span(path, span)] == whole
    assert any(isinstance(item, Reject) and item.line for item in whole)  # the broken line, named by its number


@pytest.mark.parametrize(("name", "content"), [
    ("small.jsonl", b'{"a": 1}\n'),  # under the part size
    ("runs.jsonl.gz", b"\x1f\x8b" + b"x" * 100),  # compressed: read as one stream
    ("one.json", b"[" + b"1," * 100 + b"1]"),  # a JSON document
    ("spans.jsonl", b'{"resourceSpans": []}\n' * 50),  # a format that reads the file's records together
    ("crs.jsonl", b'{"a": 1}\r' * 50),  # no \n within the first part: read whole
])
def test_files_read_whole(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert split_lines_file(path, 64) is None
