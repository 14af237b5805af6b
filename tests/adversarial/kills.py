"""Killing a `judge score` process while its calls are in flight (SIGKILL: nothing of it runs after)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from judge.testing.servers import FakeLLMServer
from trajudge_socket_guard import child_pythonpath

REPO = Path(__file__).resolve().parents[2]
SCORE = "import sys; from judge.cli import main; sys.argv = ['judge', 'score', *sys.argv[1:]]; main()"


def kill_score_at(fake: FakeLLMServer, requests: int, *args: str) -> None:
    """Run ``judge score ARGS`` in a child process (no API key in its environment) and SIGKILL it once ``fake``
    has received ``requests`` requests (the server should leave the last ones unanswered: they are in flight)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = child_pythonpath(REPO)
    child = subprocess.Popen([sys.executable, "-c", SCORE, *args], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while fake.request_count < requests and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # a request beyond the count would arrive now: the caller's assertion then sees it
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
