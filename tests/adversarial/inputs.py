"""Hostile and unlucky input files for the importers, generated (nothing large is committed).

Each :class:`Case` writes its files into its own folder and says what a correct import gives: the ids
imported (in order), the rejects (file, line, a piece of the reason) and the paths skipped. The tests in this
folder build every case in a temporary folder and import it; to look at the files themselves::

    python tests/adversarial/inputs.py /tmp/adversarial   # then: judge import /tmp/adversarial --out x.jsonl
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEEP_PARSE = 100_000  # deeper than any JSON parser's recursion limit
DEEP_VALUE = 300  # parses, but deeper than the model can be written (pydantic stops near 255)


def record(rid: str, **extra: Any) -> dict[str, Any]:
    """A small valid OpenAI-chat record with one tool call and its receipt."""
    return {
        "id": rid,
        "messages": [
            {"role": "user", "content": f"task {rid}"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
            {"role": "assistant", "content": "done"},
        ],
        **extra,
    }


def line(rid: str, **extra: Any) -> str:
    return json.dumps(record(rid, **extra))


def nested(depth: int) -> Any:
    """A value ``depth`` levels deep: {"x": {"x": ... null}}."""
    value: Any = None
    for _ in range(depth):
        value = {"x": value}
    return value


def deep_record_text(rid: str, depth: int, middle: str = "") -> str:
    """A record whose metadata holds ``depth`` nested lists (``middle`` at the bottom), written without recursion."""
    return line(rid, metadata={"deep": "@@"}).replace('"@@"', "[" * depth + middle + "]" * depth)


@dataclass
class Case:
    """One adversarial input: files to write and the import it must give."""

    name: str
    write: Callable[[Path], None]
    imported: list[str]
    rejects: list[tuple[str, int | None, str]] = field(default_factory=list)  # (file, line, piece of the reason)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, piece of the reason)
    partial: bool = False  # ``imported`` is the most that can come out; a non-empty prefix of it must
    note: str = ""


def _text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _jsonl(*lines: str) -> str:
    return "".join(text + "\n" for text in lines)


# --- 1. deep nesting ---------------------------------------------------------------------------------------


def _deep_value(d: Path) -> None:
    _text(d / "deep-value.jsonl", _jsonl(line("a"), line("b", metadata={"deep": nested(DEEP_VALUE)}), line("c")))


def _deep_parse(d: Path) -> None:
    _text(d / "deep-parse.jsonl", _jsonl(line("a"), deep_record_text("b", DEEP_PARSE), line("c")))


def _deep_in_document(d: Path) -> None:
    # a JSON array, one record per line, except the too-deep one: lines 3-5; a bad record after it on line 7
    records = [line("a"), deep_record_text("b", DEEP_PARSE, middle="\n\n"), line("c"), '{"id": "bad"}']
    _text(d / "deep-document.json", "[\n" + ",\n".join(records) + "\n]\n")


def _deep_single_document(d: Path) -> None:
    _text(d / "deep-single.json", deep_record_text("b", DEEP_PARSE))
    _text(d / "fine.json", line("a"))


def _deep_arguments(d: Path) -> None:
    as_dict = record("dict-args")
    as_dict["messages"][1]["tool_calls"][0]["function"]["arguments"] = nested(DEEP_VALUE)
    as_string = record("string-args")  # kept: an argument string that does not parse is a call defect to judge
    as_string["messages"][1]["tool_calls"][0]["function"]["arguments"] = "[" * DEEP_PARSE + "]" * DEEP_PARSE
    _text(d / "deep-arguments.jsonl", _jsonl(json.dumps(as_dict), json.dumps(as_string)))


# --- 2. duplicate ids --------------------------------------------------------------------------------------


def _duplicate_ids(d: Path) -> None:
    _text(d / "dup.jsonl", _jsonl(line("x"), line("x~2"), line("x"), line("x~3"), line("x")))


# --- 3. compressed, symlinks, line endings -----------------------------------------------------------------


def _compressed(d: Path) -> None:
    _bytes(d / "a.jsonl.gz", gzip.compress(_jsonl(line("gz-1"), line("gz-2")).encode()))
    _bytes(d / "b.json.gz", gzip.compress(json.dumps([record("gzdoc-1"), record("gzdoc-2")]).encode()))
    _bytes(d / "c.jsonl.bz2", bz2.compress(_jsonl(line("bz2-1")).encode()))
    _bytes(d / "d.ndjson.xz", lzma.compress(_jsonl(line("xz-1")).encode()))
    _bytes(d / "e.jsonl.zst", b"\x28\xb5\x2f\xfd not really zstd")


def _truncated_gzip(d: Path) -> None:
    body = _jsonl(*(line(f"t{n}") for n in range(200)))  # several blocks once decompressed
    packed = gzip.compress(body.encode())
    _bytes(d / "cut.jsonl.gz", packed[: len(packed) * 3 // 4])


def _symlinks(d: Path) -> None:
    _text(d / "real" / "one.jsonl", _jsonl(line("via-file-link")))
    _text(d / ".elsewhere" / "two.jsonl", _jsonl(line("in-linked-dir")))  # hidden: only reachable through the link
    os.symlink("real/one.jsonl", d / "link-to-file.jsonl")
    os.symlink("nowhere.jsonl", d / "broken.jsonl")
    os.symlink("loop-b.jsonl", d / "loop-a.jsonl")
    os.symlink("loop-a.jsonl", d / "loop-b.jsonl")
    os.symlink(".elsewhere", d / "linked-dir")
    os.symlink(".", d / "real" / "self")  # a directory loop


def _line_endings(d: Path) -> None:
    _bytes(d / "cr-only.jsonl", (line("cr-1") + "\r" + line("cr-2") + "\r" + line("cr-3")).encode())  # old Mac, no final CR
    _bytes(d / "cr-only.json", (line("crj-1") + "\r" + line("crj-2") + "\r").encode())  # JSONL in a .json
    _bytes(d / "crlf.jsonl", (line("crlf-1") + "\r\n" + "{broken\r\n" + line("crlf-3") + "\r\n").encode())
    _bytes(d / "mixed.jsonl", (line("mix-1") + "\r" + line("mix-2") + "\n" + "{broken" + "\r\n" + line("mix-4")).encode())


# --- 4. run directories and the command's own output -------------------------------------------------------


def _run_directory(d: Path) -> None:
    _text(d / "logs.jsonl", _jsonl(line("input-1")))
    run = d / "old-run"
    _text(run / "trajectories.jsonl", _jsonl(line("input-1")))
    _text(run / "verdicts.jsonl", '{"trajectory_id": "input-1", "status": "ok"}\n')
    _text(run / "run.json", "{}")


# --- encodings, empty files, huge lines, whole documents ---------------------------------------------------


def _encodings(d: Path) -> None:
    _bytes(d / "bom.jsonl", b"\xef\xbb\xbf" + _jsonl(line("bom-1"), line("bom-2")).encode())
    _bytes(d / "bom.json", b"\xef\xbb\xbf" + json.dumps(record("bom-doc")).encode())
    _bytes(d / "latin1.jsonl", _jsonl(line("u-1")).encode() + b'{"id": "caf\xe9"}\n' + _jsonl(line("u-3")).encode())
    _bytes(d / "utf16.jsonl", _jsonl(line("never")).encode("utf-16"))
    surrogates = record("lone-surrogate", metadata={"note": "cut emoji \ud83d"})
    surrogates["messages"][3]["content"] = "half a pair: \udc00 end"
    _text(d / "surrogates.jsonl", _jsonl(json.dumps(surrogates), line("after-surrogates")))


def _empty(d: Path) -> None:
    _text(d / "empty.jsonl", "")
    _text(d / "blank.jsonl", "\n  \n\r\n")
    _text(d / "empty.json", "")
    _text(d / "empty-list.json", "[]")
    _text(d / "notes.md", "not data: not read, listed as skipped")


def _huge_line(d: Path) -> None:
    big = record("huge")
    big["messages"][2]["content"] = "x" * 5_000_000
    _text(d / "huge.jsonl", _jsonl(json.dumps(big), line("after-huge")))


def _batch_text() -> str:
    unpaired = record("unpaired")
    unpaired["messages"][2]["tool_call_id"] = "nope"
    return json.dumps([record("doc-1"), {"id": "no-messages"}, record("doc-3"), unpaired], indent=1)


def _line_before(text: str, piece: str) -> int:
    """The line above the one holding ``piece``: where a record whose first key is ``piece`` opens."""
    return text[: text.index(piece)].count("\n")


def _document_with_bad_record(d: Path) -> None:
    _text(d / "batch.json", _batch_text())


# --- integers the run's tables cannot store, turn numbers out of order (issue 28, item 1) -------------------


def canonical(rid: str, turns: tuple[int | None, int | None, int | None] = (1, 1, 2), **metadata: Any) -> dict[str, Any]:
    """A small canonical trajectory (trajudge's own JSONL): T1 calls Bash, its receipt, T2 answers. ``turns``:
    the turn numbers of the first assistant message, the tool message and the last assistant message."""
    first, tool, last = turns
    return {
        "schema_version": "trajudge.trajectory/1", "id": rid, "query": f"task {rid}", "query_id": f"q-{rid}",
        "messages": [
            {"role": "user", "content": f"task {rid}", "turn": 0},
            {"role": "assistant", "content": "", "turn": first,
             "tool_calls": [{"id": "c1", "name": "Bash", "arguments": {"command": "ls"}}]},
            {"role": "tool", "content": "a.txt", "turn": tool, "receipt": {"call_id": "c1", "content": "a.txt"}},
            {"role": "assistant", "content": "done", "turn": last},
        ],
        "metadata": {"source_format": "openai", **metadata},
    }


def _canonical_turns(d: Path) -> None:
    rows = [canonical("ok"), canonical("negative", (-1, -1, 0)), canonical("zero", (0, 0, 1)),
            canonical("descending", (2, 2, 1)), canonical("gap", (1, 1, 3)), canonical("tool-ahead", (1, 2, 2)),
            canonical("beyond-int64", (2**63, 2**63, 2**63 + 1)), canonical("unnumbered", (None, None, None)),
            canonical("after")]
    _text(d / "canonical.jsonl", _jsonl(*map(json.dumps, rows)))


def _integers_beyond_int64(d: Path) -> None:
    receipt = canonical("exit-code")
    receipt["messages"][2]["receipt"]["exit_code"] = -(2**63) - 1
    index = canonical("source-index")
    index["messages"][3]["source_index"] = 2**64
    told = record("exit-code-in-text")  # a number in a tool's text is not a reason to refuse the record
    told["messages"][2]["content"] = "Exit code: 99999999999999999999999"
    _text(d / "ints.jsonl", _jsonl(
        line("usage", metadata={"usage": {"input_tokens": 2**64}}),
        line("usage-inf", metadata={"usage": {"output_tokens": 7}}).replace("7", "1e400"),  # parsed as inf
        json.dumps(canonical("branch", branch_turn=2**63)),
        json.dumps(receipt), json.dumps(index), json.dumps(told), line("fine")))


# --- entries a folder walk does not read (issue 28, item 2): each is a reject or a skipped row --------------


def _not_data(d: Path) -> None:
    _text(d / "data.jsonl", _jsonl(line("data")))
    _text(d / "notes.txt", "not data")
    _text(d / "README.md", "# not data")
    _text(d / ".hidden.jsonl", _jsonl(line("hidden")))  # read when named as an input, skipped in a walk
    _text(d / ".git" / "HEAD", "ref: refs/heads/main")
    _bytes(d / "batch.zip", b"PK\x03\x04 an archive")
    _bytes(d / "logs.tar.gz", gzip.compress(b"an archive"))
    _bytes(d / "e.7z", b"7z an archive")
    _bytes(d / "plain.zst", b"\x28\xb5\x2f\xfd not really zstd")


def _fifo(d: Path) -> None:
    _text(d / "ok.jsonl", _jsonl(line("beside-fifo")))
    os.mkfifo(d / "pipe.jsonl")


CASES: list[Case] = [
    Case("deep-value", _deep_value, ["a", "c"], [("deep-value.jsonl", 2, "nested deeper than 100 levels")]),
    Case("deep-parse", _deep_parse, ["a", "c"], [("deep-parse.jsonl", 2, "nested too deeply to parse")]),
    Case("deep-document", _deep_in_document, ["a", "c"],
         [("deep-document.json", 3, "nested too deeply to parse"), ("deep-document.json", 7, "unknown format")]),
    Case("deep-single-document", _deep_single_document, ["a"], [("deep-single.json", 1, "nested too deeply to parse")]),
    Case("deep-arguments", _deep_arguments, ["string-args"],
         [("deep-arguments.jsonl", 1, "arguments of tool call 'c1' are nested deeper than 100 levels")]),
    Case("duplicate-ids", _duplicate_ids, ["x", "x~2", "x~3", "x~3~2", "x~4"],
         note="x, x~2, x, x~3, x: every id unique after renaming, whatever the input holds"),
    Case("compressed", _compressed, ["gz-1", "gz-2", "gzdoc-1", "gzdoc-2", "bz2-1", "xz-1"],
         [("e.jsonl.zst", None, "compression is not supported")]),
    Case("truncated-gzip", _truncated_gzip, [f"t{n}" for n in range(200)], [("cut.jsonl.gz", None, "cannot read past line")],
         partial=True, note="the records before the cut are imported: a prefix whose length depends on zlib"),
    Case("symlinks", _symlinks, ["via-file-link", "via-file-link~2"],
         [("broken.jsonl", None, "broken symlink"), ("loop-a.jsonl", None, "symlink loop"), ("loop-b.jsonl", None, "symlink loop")],
         [(".elsewhere", "a hidden folder"), ("linked-dir", "symlink to a directory"), ("real/self", "symlink to a directory")]),
    Case("line-endings", _line_endings, ["crj-1", "crj-2", "cr-1", "cr-2", "cr-3", "crlf-1", "crlf-3", "mix-1", "mix-2", "mix-4"],
         [("crlf.jsonl", 2, "broken JSON"), ("mixed.jsonl", 3, "broken JSON")]),
    Case("run-directory", _run_directory, ["input-1"], skipped=[("old-run", "trajudge run directory")]),
    Case("encodings", _encodings, ["bom-doc", "bom-1", "bom-2", "u-1", "u-3", "lone-surrogate", "after-surrogates"],
         [("latin1.jsonl", 2, "invalid UTF-8"), ("utf16.jsonl", 1, "UTF-16")]),
    Case("empty", _empty, [],
         [("blank.jsonl", None, "empty file"), ("empty-list.json", None, "no records"), ("empty.json", None, "empty file"),
          ("empty.jsonl", None, "empty file")], [("notes.md", "not a data file (.md)")]),
    Case("huge-line", _huge_line, ["huge", "after-huge"]),
    Case("document-with-bad-records", _document_with_bad_record, ["doc-1", "doc-3"],
         [("batch.json", _line_before(_batch_text(), '"id": "no-messages"'), "unknown format"),
          ("batch.json", _line_before(_batch_text(), '"id": "unpaired"'), "no matching tool call")]),
    Case("fifo", _fifo, ["beside-fifo"], [("pipe.jsonl", None, "not a regular file")]),
    Case("not-data", _not_data, ["data"],
         [("batch.zip", None, "an archive (.zip) is not read"), ("e.7z", None, "an archive (.7z) is not read"),
          ("logs.tar.gz", None, "an archive (.tar.gz) is not read"), ("plain.zst", None, ".zst compression is not supported")],
         [(".git", "a hidden folder"), (".hidden.jsonl", "a hidden file"), ("README.md", "not a data file (.md)"),
          ("notes.txt", "not a data file (.txt)")]),
    Case("canonical-turns", _canonical_turns, ["ok", "unnumbered", "after"],
         [("canonical.jsonl", 2, "message 1 (assistant) has turn -1"), ("canonical.jsonl", 3, "message 1 (assistant) has turn 0"),
          ("canonical.jsonl", 4, "message 1 (assistant) has turn 2"), ("canonical.jsonl", 5, "message 3 (assistant) has turn 3"),
          ("canonical.jsonl", 6, "message 2 (tool) has turn 2"), ("canonical.jsonl", 7, f"message 1 (assistant) has turn {2**63}")],
         note="turn numbers are checked, never renumbered: every output points at turns by number"),
    Case("integers-beyond-int64", _integers_beyond_int64, ["exit-code-in-text", "fine"],
         [("ints.jsonl", 1, "input_tokens 18446744073709551616 is outside the 64-bit integer range"),
          ("ints.jsonl", 2, "output_tokens is inf"), ("ints.jsonl", 3, f"branch_turn {2**63} is outside"),
          ("ints.jsonl", 4, f"exit_code {-(2**63) - 1} is outside"), ("ints.jsonl", 5, f"source_index {2**64} is outside")]),
]


def build(root: Path, cases: list[Case] = CASES) -> dict[str, Path]:
    """Write every case into ``root/<case name>``; returns the folders by case name."""
    folders = {}
    for case in cases:
        folder = root / case.name
        folder.mkdir(parents=True, exist_ok=True)
        case.write(folder)
        folders[case.name] = folder
    return folders


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/adversarial/inputs.py OUT_DIR")
    for name, folder in build(Path(sys.argv[1])).items():
        print(f"{name:28} {folder}")
