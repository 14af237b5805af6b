"""A full disk that also fails the store's close still closes the judges' HTTP clients (issue 28: "Unclosed client
session" on stderr after a full disk).

The panel closed the run store, the shared cache, verdicts.jsonl and then the judges one after the other: when
the disk is full, the store's close (or the flush of verdicts.jsonl) raises too, and the judges' aiohttp sessions
were left open. The child process below fills the "disk" at the third verdict row and at the store's close.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import judge
from judge.testing.servers import FakeLLMServer, Scripted
from trajudge_socket_guard import child_pythonpath

PACKAGE_ROOT = Path(judge.__file__).resolve().parents[1]  # the child runs the code this test imported
CHILD = """
import errno, gc, sqlite3, sys
import judge.panel as panel
from judge.store import RunStore
from judge.cli import main

real_append, real_close, rows = panel._append, RunStore.close, []

def append(handle, verdict, flush):
    if len(rows) >= 2:
        raise OSError(errno.ENOSPC, "No space left on device", "verdicts.jsonl")
    rows.append(verdict)
    real_append(handle, verdict, flush)

def close(self):
    real_close(self)
    if len(rows) >= 2:  # the disk is full: the store's last write at close fails as well
        raise sqlite3.OperationalError("database or disk is full")

panel._append, RunStore.close = append, close
sys.argv = ["judge", "score", *sys.argv[1:]]
try:
    main()
finally:
    gc.collect()  # an unclosed aiohttp session says so when it is collected
"""


def test_a_full_disk_leaves_no_client_session_open(batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("aiohttp")
    config = tmp_path / "panel.yaml"
    config.write_text("params:\n  http_transport: aiohttp\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = child_pythonpath(PACKAGE_ROOT)
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok()) as fake:
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(batch), "--out", str(tmp_path / "run"), "--judge",
             f"openai-compatible:m@{fake.base_url}", "--passes", "1", "--concurrency", "1", "--no-preflight",
             "--config", str(config), "--embedder", "lexical"],
            env=env, capture_output=True, text=True, timeout=120)
    assert child.returncode == 1, child.stderr
    assert "disk is full" in child.stderr and "Traceback" not in child.stderr
    assert "Unclosed client session" not in child.stderr, child.stderr
    assert "Unclosed connector" not in child.stderr, child.stderr
