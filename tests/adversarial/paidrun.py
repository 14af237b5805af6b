"""A paid run against a fake server: its batch and config, `judge score` on it, and killing that process while
its calls are in flight (SIGKILL: nothing of it runs after)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from judge.cli import app
from judge.testing.servers import FakeLLMServer
from judge.testing.synthetic import synthetic_batch
from trajudge_socket_guard import child_pythonpath

REPO = Path(__file__).resolve().parents[2]
SCORE = "import sys; from judge.cli import main; sys.argv = ['judge', 'score', *sys.argv[1:]]; main()"
FIXED_USAGE = {"input": 1000, "output": 0, "cached": 0}  # $0.01 a call at $10 per million tokens
runner = CliRunner()


def setup_run(tmp_path: Path, count: int = 6, settings: str = "") -> tuple[Path, Path]:
    """A batch of ``count`` synthetic trajectories and a panel config (one pass, max-tokens 100, every model at $10
    per million tokens, plus ``settings`` lines)."""
    trajectories, _ = synthetic_batch(count)
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices:\n  '*': {input: 10.0, output: 10.0}\n")
    config = tmp_path / "panel.yaml"
    config.write_text(f"passes: 1\nmax-tokens: 100\nretry-base-delay: 0.001\nprices: {prices}\n{settings}")
    return batch, config


def score(batch: Path, config: Path, run_dir: Path, url: str, *extra: str):
    """``judge score`` in this process with the config's panel judging through the server at ``url``."""
    return runner.invoke(app, ["score", str(batch), "--out", str(run_dir), "--config", str(config), "--judge",
                               f"openai-compatible:m@{url}", "--embedder", "lexical", "--no-preflight", *extra])


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
