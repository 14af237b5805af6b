"""What a failing judge server costs a run: wall time, requests and exit code of ``judge score`` (issue 28 item 7).

Scenarios, each against a local fake OpenAI-compatible server (judge.testing.servers), 5 trajectories x 3
passes, default retry settings unless named:

- a constant 429 with ``Retry-After`` (the preflight on, then off);
- a server that accepts and never answers (``--timeout`` given; preflight on, then off);
- 4 transient 429s at the start, then answers (the preflight must pass).

    python bench/provider_faults.py [--retry-after 1] [--timeout 2] [--concurrency 8]

Figures only: the behaviour is asserted in tests/adversarial/test_provider_breaker.py with short timeouts.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from typer.testing import CliRunner  # noqa: E402

from judge.cli import app  # noqa: E402
from judge.testing.servers import FakeLLMServer, Scripted  # noqa: E402
from judge.testing.synthetic import synthetic_batch  # noqa: E402


def run(name: str, responder: Scripted | None, queued: list[Scripted], extra: list[str], folder: Path) -> None:
    batch = folder / "batch.jsonl"
    if not batch.exists():
        batch.write_text("".join(t.to_json_line() + "\n" for t in synthetic_batch(5)[0]))
    with FakeLLMServer("openai", responder=(lambda request: responder) if responder else None) as server:
        server.queue(*queued)
        started = time.monotonic()
        result = CliRunner().invoke(app, ["score", str(batch), "--out", str(folder / name), "--judge",
                                          f"openai-compatible:m@{server.base_url}", "--embedder", "lexical", *extra])
        wall = time.monotonic() - started
        requests = server.request_count
    last = [line for line in result.output.splitlines() if line.strip()][-1] if result.output.strip() else ""
    print(f"{name:<32} exit {result.exit_code}  requests {requests:>3}  wall {wall:6.1f} s  | {last[:150]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    os.environ.pop("OPENAI_API_KEY", None)
    limited = Scripted.rate_limited(retry_after=args.retry_after)
    hung = Scripted.slow(3600.0)
    common = ["--concurrency", str(args.concurrency)]
    with tempfile.TemporaryDirectory(prefix="trajudge-faults-") as scratch:
        folder = Path(scratch)
        run("429 always, preflight", limited, [], common, folder)
        run("429 always, no preflight", limited, [], [*common, "--no-preflight"], folder)
        run("hung, preflight", hung, [], [*common, "--timeout", str(args.timeout)], folder)
        run("hung, no preflight", hung, [], [*common, "--timeout", str(args.timeout), "--no-preflight"], folder)
        run("4 transient 429s, preflight", None, [Scripted.rate_limited(retry_after=0.2)] * 4, common, folder)


if __name__ == "__main__":
    main()
