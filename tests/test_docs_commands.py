"""Every fenced command block of README.md and docs/*.md marked ``runnable`` (its info string is ``bash runnable``)
runs as written: in a fresh folder holding the repository's ``examples/``, offline, each block one bash script that
stops at the first failing command. A block that needs an API key or a cluster is not marked.

The ``judge`` and ``python`` the blocks call are this checkout's (a ``judge`` shim and the interpreter running the
tests come first on ``PATH``), with the socket guard inherited, so a block that reaches past loopback fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trajudge_socket_guard import child_pythonpath

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def runnable_blocks() -> list[tuple[str, int, str]]:
    """(document, line of the fence, script) of every block whose info string has the word ``runnable``."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if "runnable" in match.group(1).split():
                line = text.count("\n", 0, match.start()) + 1
                found.append((document.relative_to(ROOT).as_posix(), line, match.group(2)))
    return found


BLOCKS = runnable_blocks()


def test_the_documents_mark_their_offline_examples_runnable() -> None:
    assert {doc for doc, _, _ in BLOCKS} >= {"README.md", "docs/review.md"}
    assert len(BLOCKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize(("document", "line", "script"), BLOCKS, ids=[f"{doc}:{line}" for doc, line, _ in BLOCKS])
def test_a_runnable_block_runs_as_written(document: str, line: int, script: str, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    shim = bin_dir / "judge"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from judge.cli import main; "
                    f"sys.argv[0] = \"judge\"; main()' \"$@\"\n", encoding="utf-8")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": child_pythonpath(ROOT), "TRAJUDGE_CACHE_DIR": str(tmp_path / ".cache"), "NO_COLOR": "1"}
    # job control on, so that `kill %1` in a block finds its background server; any server left is stopped after
    wrapped = "set -euo pipefail -m\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + script
    result = subprocess.run(["bash", "-c", wrapped], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{document}:{line} failed (exit {result.returncode}):\n{result.stdout}\n{result.stderr}"
