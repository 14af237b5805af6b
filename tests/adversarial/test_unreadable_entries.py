"""Entries the import cannot or does not read (issue 28, item 2): a folder or file without permission, an archive,
a hidden file, a document that is not data, a symlink loop named on the command line. Each is a reject or a
skipped row with its reason; nothing aborts the batch and nothing is left out silently.

Tests run as root, whom ``chmod 000`` does not stop, so :func:`deny` makes the operating system's answers for a
folder or file without permission (what a normal user meets): a folder can be seen in its parent but not listed,
and nothing inside it can be looked at or opened; a file can be seen but not opened.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import judge
from adversarial.inputs import CASES, build, line
from judge.cli import app
from judge.importers import iter_records
from judge.model import Trajectory
from judge.schema import Reject

runner = CliRunner()


def deny(monkeypatch: pytest.MonkeyPatch, *, folders: tuple[Path, ...] = (), files: tuple[Path, ...] = ()) -> None:
    """Answer as for ``chmod 000`` on ``folders`` and ``files``, for a user who is not root."""
    closed = [str(f) for f in folders]
    unopenable = {str(f) for f in files}

    def inside(target: Any) -> bool:
        if isinstance(target, int):
            return False
        path = os.path.abspath(os.fsdecode(os.fspath(target)))
        return any(path.startswith(folder + os.sep) for folder in closed)

    def refuse(target: Any) -> PermissionError:
        return PermissionError(errno.EACCES, "Permission denied", os.fsdecode(os.fspath(target)))

    def guard(real: Callable[..., Any], *, listing: bool = False, opening: bool = False) -> Callable[..., Any]:
        def call(target: Any = ".", *args: Any, **kwargs: Any) -> Any:
            if not isinstance(target, int):
                path = os.path.abspath(os.fsdecode(os.fspath(target)))
                if inside(path) or (listing and path in closed) or (opening and path in unopenable):
                    raise refuse(target)
            return real(target, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "scandir", guard(os.scandir, listing=True))
    monkeypatch.setattr(os, "listdir", guard(os.listdir, listing=True))
    monkeypatch.setattr(os, "stat", guard(os.stat))
    monkeypatch.setattr(os, "lstat", guard(os.lstat))
    opener = guard(io.open, opening=True)
    monkeypatch.setattr(io, "open", opener)
    monkeypatch.setattr(builtins, "open", opener)


def batch_with_locked_entries(root: Path) -> tuple[Path, Path, Path]:
    """``root`` holds a.jsonl, locked/ (a folder without permission), secret.jsonl (a file without permission),
    z.jsonl; returns (root, locked, secret)."""
    (root / "locked").mkdir(parents=True)
    (root / "a.jsonl").write_text(line("a") + "\n", encoding="utf-8")
    (root / "locked" / "inside.jsonl").write_text(line("inside") + "\n", encoding="utf-8")
    (root / "secret.jsonl").write_text(line("secret") + "\n", encoding="utf-8")
    (root / "z.jsonl").write_text(line("z") + "\n", encoding="utf-8")
    return root, root / "locked", root / "secret.jsonl"


def test_a_folder_and_a_file_without_permission_are_rejects_and_the_walk_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, locked, secret = batch_with_locked_entries(tmp_path / "in")
    deny(monkeypatch, folders=(locked,), files=(secret,))
    items = list(iter_records([root]))
    assert [i.id for i in items if isinstance(i, Trajectory)] == ["a", "z"]
    assert [(Path(r.source_file).name, r.reason) for r in items if isinstance(r, Reject)] == [
        ("locked", "cannot read: Permission denied"), ("secret.jsonl", "cannot open: Permission denied")]


def test_judge_import_of_a_folder_with_an_unreadable_subfolder_imports_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's repro: "Permission denied", exit 1, nothing imported, although the README says it is a reject."""
    root, locked, secret = batch_with_locked_entries(tmp_path / "in")
    deny(monkeypatch, folders=(locked,), files=(secret,))
    out = tmp_path / "out" / "all.jsonl"
    result = runner.invoke(app, ["import", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "imported 2, rejected 2" in result.output
    assert [json.loads(r)["id"] for r in out.read_text().splitlines()] == ["a", "z"]
    rejects = [json.loads(r) for r in out.with_name("all.rejects.jsonl").read_text().splitlines()]
    assert [(Path(r["source_file"]).name, "Permission denied" in r["reason"]) for r in rejects] == [
        ("locked", True), ("secret.jsonl", True)]


@pytest.mark.parametrize("named", ["folder", "inside"])
def test_an_unreadable_folder_named_as_an_input_is_a_reject(
        named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, locked, _ = batch_with_locked_entries(tmp_path / "in")
    deny(monkeypatch, folders=(locked,))
    target = locked if named == "folder" else locked / "inside.jsonl"
    items = list(iter_records([target, root / "a.jsonl"]))
    assert [i.id for i in items if isinstance(i, Trajectory)] == ["a"]
    (reject,) = [i for i in items if isinstance(i, Reject)]
    assert reject.source_file == str(target) and "Permission denied" in reject.reason
    out = tmp_path / "run"  # judge score says the same: the input is there, it cannot be read (not "not found")
    result = runner.invoke(app, ["score", str(target), str(root / "a.jsonl"), "--out", str(out), "--embedder", "lexical"])
    assert result.exit_code == 0 and "imported 1, rejected 1" in result.output, result.output


def test_a_symlink_loop_named_on_the_command_line_is_a_reject_not_input_not_found(tmp_path: Path) -> None:
    os.symlink("loop-b.jsonl", tmp_path / "loop-a.jsonl")
    os.symlink("loop-a.jsonl", tmp_path / "loop-b.jsonl")
    good = tmp_path / "good.jsonl"
    good.write_text(line("good") + "\n", encoding="utf-8")
    out = tmp_path / "run"
    result = runner.invoke(app, ["score", str(tmp_path / "loop-a.jsonl"), str(good), "--out", str(out), "--embedder", "lexical"])
    assert result.exit_code == 0, result.output
    assert "input not found" not in result.output and "imported 1, rejected 1" in result.output
    (reject,) = [json.loads(r) for r in (out / "rejects.jsonl").read_text().splitlines()]
    assert reject["source_file"] == str(tmp_path / "loop-a.jsonl") and "symlink loop" in reject["reason"]
    missing = runner.invoke(app, ["score", str(tmp_path / "nothing.jsonl"), "--out", str(tmp_path / "run2")])
    assert missing.exit_code != 0 and "input not found" in missing.output  # a path naming nothing still is


def test_what_a_folder_walk_does_not_read_is_listed_and_not_a_failure(tmp_path: Path) -> None:
    """Archives are rejects (they may hold data), documents and hidden entries skipped rows (not bad input): the
    strict reader of the Python API still takes the folder."""
    folder = build(tmp_path, [c for c in CASES if c.name == "not-data"])["not-data"]
    result = runner.invoke(app, ["import", str(folder), "--out", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 0, result.output
    assert "imported 1, rejected 4" in result.output and "skipped 4 path(s)" in result.output
    for name in ("batch.zip", "logs.tar.gz", "e.7z", "plain.zst", ".git", ".hidden.jsonl", "README.md", "notes.txt"):
        assert f"{folder / name}: " in result.output, name
    docs_only = tmp_path / "docs"
    docs_only.mkdir()
    (docs_only / "README.md").write_text("# about the data", encoding="utf-8")
    (docs_only / "a.jsonl").write_text(line("a") + "\n", encoding="utf-8")
    assert [t.id for t in judge.read_trajectories(docs_only)] == ["a"]


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root, to drop to the nobody user")
def test_real_permissions_as_another_user() -> None:
    """The same folder with real ``chmod 000``, read in a child process that has become ``nobody``: what
    :func:`deny` stands for."""
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="trajudge-perm-"))  # pytest's own folders are closed to other users
    locked = root / "in" / "locked"
    try:
        root.chmod(0o755)
        _, locked, secret = batch_with_locked_entries(root / "in")
        for path in (root / "in", root / "in" / "a.jsonl", root / "in" / "z.jsonl"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        locked.chmod(0)
        secret.chmod(0)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: no pytest machinery, only the walk, its answer written to the pipe
            code = 0
            try:
                os.close(read)
                os.setgid(65534)
                os.setuid(65534)
                items = list(iter_records([root / "in"]))
                answer = [i.id if isinstance(i, Trajectory) else f"{Path(i.source_file).name}: {i.reason}" for i in items]
                os.write(write, json.dumps(answer).encode())
            except BaseException as error:  # noqa: BLE001 - reported to the parent, which fails the test
                os.write(write, json.dumps([repr(error)]).encode())
                code = 1
            os._exit(code)
        os.close(write)
        with os.fdopen(read, "rb") as answer_pipe:
            answer = json.loads(answer_pipe.read())
        os.waitpid(pid, 0)
        assert answer == ["a", "locked: cannot read: Permission denied", "secret.jsonl: cannot open: Permission denied", "z"]
    finally:
        locked.chmod(0o755)
        shutil.rmtree(root, ignore_errors=True)
