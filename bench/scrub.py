"""What scrubbing secrets by value costs (judge.secrets, issue 28 item 4).

Prints, for 0 to 30 registered secrets: the time to scrub one judge answer (a 5 kB text that holds no secret, the
common case, and one that echoes every secret), to redact a judge name (done once per pass), and to print a
line through the scrubbed stdout, beside printing it to the plain stream.

    python bench/scrub.py [--repeat 20000]

Figures are per call, in microseconds; on a shared machine compare them with each other, not across runs.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judge.secrets import forget_secrets, redact, register_secret, scrub, scrub_output  # noqa: E402


def per_call_us(action: Callable[[], object], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        action()
    return (time.perf_counter() - started) / repeat * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20000)
    repeat = parser.parse_args().repeat
    clean = ("The agent ran the tests, read the failure and fixed the parser. " * 80)[:5000]
    name = "openai-compatible:qwen2.5@http://127.0.0.1:8000/v1"
    line = "T3 bash: pytest -x -> exit 1 (2 failed, 40 passed)\n"
    print(f"{'secrets':>8} {'answer, none echoed':>20} {'answer, all echoed':>19} {'judge name':>11} "
          f"{'print scrubbed':>15} {'print plain':>12}   (microseconds per call)")
    for count in (0, 1, 3, 9, 30):
        forget_secrets()
        secrets = [f"secret-{index:03d}-{'x' * 16}" for index in range(count)]
        for secret in secrets:
            register_secret(secret)
        echoed = clean[: 5000 - 30 * count] + " ".join(secrets)
        sink = io.StringIO()
        real = sys.stdout
        sys.stdout = sink
        try:
            plain = per_call_us(partial(sink.write, line), repeat)
            restore = scrub_output()
            try:
                scrubbed = per_call_us(lambda: sys.stdout.write(line), repeat)
            finally:
                restore()
        finally:
            sys.stdout = real
        print(f"{count:>8} {per_call_us(lambda: scrub(clean), repeat):>20.1f} "
              f"{per_call_us(partial(scrub, echoed), repeat):>19.1f} {per_call_us(lambda: redact(name), repeat):>11.1f} "
              f"{scrubbed:>15.2f} {plain:>12.2f}")
    forget_secrets()


if __name__ == "__main__":
    main()
