"""Throughput of the judge panel against the SIMULATED judge server (not a model).

Two batches, each 300 trajectories x 3 passes, the simulated server answering each request after 200 ms, at
--concurrency 32: synthetic trajectories (small: ~1 KB of messages) and real ones (tau-bench airline, ~18 KB
each, from ../shared/datasets when it is there, else the 12-record excerpt in bench/data, repeated with a
distinct query each time so no answer is reused). For each it prints the wall time, the ideal (calls x latency /
concurrency), their ratio (target <= 1.15 on the real rows, issue 27), the client's CPU per call (target < 4 ms)
and the calls one core can feed per second (1000 / CPU ms per call). Then it reruns the synthetic batch on the
same run directory and prints how many calls the cached rerun made (target 0).

The server runs in its own process (``python -m judge.testing.simjudge``) so that its threads do not
compete with the client for the GIL, as a real remote API would not. Importing the SDK and its HTTP
transport (about a second, once per process) happens before the timed run and is printed apart; the timed
run builds its judges and clients as usual. The client is CPU-bound once latency is overlapped, so the
client CPU per call is printed too: unlike the ratio, it does not depend on how busy the machine is. The
openai SDK runs over aiohttp when that package is installed (about 1 ms less CPU per call), else httpx.

    python bench/throughput.py [--trajectories 300] [--passes 3] [--latency 0.2] [--concurrency 32] [--only real]
                               [--shared-cache]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from judge.judges.llm import LLMJudge
from judge.model import Trajectory, Usage
from judge.panel import PanelConfig, run_panel, run_queue_wait_s, summary_lines
from judge.providers import Completion
from judge.testing.synthetic import synthetic_batch

EMPTY_VERDICT = '{"reasoning": "in-process stand-in", "issues": [], "efficiency": "high"}'


class SleepProvider:
    """An in-process stand-in provider (no HTTP): waits ``latency`` and returns an empty verdict.

    Running the same panel with it separates the panel's own overhead from the SDK's HTTP stack.
    """

    provider, model, spec = "openai-compatible", "sleep-stub", "openai-compatible:sleep-stub@http://in-process/v1"

    def __init__(self, latency: float):
        self.latency = latency

    async def complete(self, messages: list[dict], **kwargs: object) -> Completion:
        await asyncio.sleep(self.latency)
        return Completion(text=EMPTY_VERDICT, parsed=json.loads(EMPTY_VERDICT), finish_reason="stop", refusal=None,
                          usage=Usage(input_tokens=1000, output_tokens=20, cached_tokens=0), model=self.model,
                          latency_s=self.latency)

    async def aclose(self) -> None:
        return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_requests(base_url: str) -> int:
    with urllib.request.urlopen(f"{base_url}/stats", timeout=5) as response:
        return int(json.loads(response.read())["requests"])


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) a process has used, from /proc (None where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def warm_up_imports(config: PanelConfig) -> float:
    """Import what the timed run would import lazily, and return how long that took (start-up, not throughput).

    ``import openai`` and the modules the SDK imports when its first client is built (HTTP transport,
    resources, types) take about a second of CPU once per process; the timed run then builds its own judges
    and clients as usual. Nothing is cached across the boundary except Python's module table.
    """
    started = time.monotonic()
    from judge.panel import build_judges

    async def build_and_close() -> None:
        for judge in build_judges(config).values():
            await judge.aclose()

    asyncio.run(build_and_close())
    return time.monotonic() - started


ROOT = Path(__file__).resolve().parents[1]
TAU_AIRLINE = ROOT.parent / "shared" / "datasets" / "tau_bench_trajectories" / "gpt-4o-airline.json"
TAU_EXCERPT = ROOT / "bench" / "data" / "tau_airline_12.json"


def real_batch(count: int) -> tuple[list[Trajectory], str]:
    """``count`` tau-bench airline trajectories (the shared file, else the shipped excerpt), cycled with a distinct
    query and id each time round, so every request differs (no answer is shared) and each has a real size."""
    from judge.importers import load_trajectories

    source = TAU_AIRLINE if TAU_AIRLINE.exists() else TAU_EXCERPT
    base = load_trajectories(source)
    batch = []
    for index in range(count):
        original = base[index % len(base)]
        round_ = index // len(base)
        if round_ == 0:
            batch.append(original)
            continue
        messages = [m.model_copy(deep=True) for m in original.messages]
        first_user = next(m for m in messages if m.role == "user")
        first_user.content = f"{first_user.content} (round {round_})"
        batch.append(original.model_copy(update={"id": f"{original.id}~r{round_}", "query": first_user.content,
                                                 "messages": messages}))
    where = "the shared dataset" if source == TAU_AIRLINE else "the shipped 12-record excerpt, cycled"
    return batch, f"tau-bench airline ({where})"


def message_kb(trajectories: list[Trajectory]) -> float:
    """Mean size of a trajectory's messages as JSON, in KB."""
    return sum(len(json.dumps([m.model_dump(mode="json") for m in t.messages])) for t in trajectories) / len(trajectories) / 1000


def measure(label: str, trajectories: list[Trajectory], truth: list[dict], args: argparse.Namespace, tmp: Path,
            *, rerun: bool) -> None:
    """One batch against a fresh simulated server: wall vs ideal, client CPU per call, calls/s per core."""
    truth_path = tmp / f"truth-{label}.jsonl"
    truth_path.write_text("".join(json.dumps(row) + "\n" for row in truth), encoding="utf-8")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "judge.testing.simjudge", "--port", str(port), "--truth", str(truth_path),
         "--latency", str(args.latency), "--miss-rate", "0.1", "--false-alarm-rate", "0.1"],
        stdout=subprocess.PIPE, text=True)
    try:
        banner = server.stdout.readline().strip() if server.stdout else ""  # the server's banner (it says SIMULATED)
        base_url = f"http://127.0.0.1:{port}/v1"
        # No shared cache unless --shared-cache (then an empty one of its own): every run of the benchmark must make
        # its calls, and leave the user's cache alone.
        cache = {"cache_dir": str(tmp / f"cache-{label}")} if args.shared_cache else {"no_shared_cache": True}
        config = PanelConfig(judges=[f"openai-compatible:simjudge@{base_url}"], passes=args.passes,
                             concurrency=args.concurrency, timeout_s=30, **cache)
        run_dir = tmp / f"run-{label}"
        warm_up = warm_up_imports(config)
        print(f"== {label}: {len(trajectories)} trajectories, {message_kb(trajectories):.1f} KB of messages each on average")
        print(f"  {banner}")
        load_before = os.getloadavg()[0]
        server_cpu_before = process_cpu_s(server.pid)
        started, cpu_started, waited_before = time.monotonic(), time.process_time(), run_queue_wait_s()
        result = asyncio.run(run_panel(trajectories, config, run_dir, progress=False))
        wall, cpu = time.monotonic() - started, time.process_time() - cpu_started
        waited = run_queue_wait_s() - waited_before
        server_cpu_after = process_cpu_s(server.pid)
        calls = server_requests(base_url)
        ideal = calls * args.latency / args.concurrency
        for line in summary_lines(result):
            print("  " + line)
        per_call = 1000 * cpu / max(1, calls)
        print(f"  first run:  {len(trajectories)} trajectories x {args.passes} passes = {len(result.verdicts)} verdicts, "
              f"{calls} calls to the SIMULATED server")
        print(f"  wall time:  {wall:.2f} s")
        print(f"  ideal:      {ideal:.2f} s  (calls x latency / concurrency = {calls} x {args.latency} / {args.concurrency})")
        print(f"  ratio:      {wall / ideal:.3f}  (target <= 1.15 on real trajectories)"
              f" {'OK' if wall / ideal <= 1.15 else 'ABOVE TARGET'}")
        # The client is CPU-bound once latency is overlapped: its CPU per call does not depend on how busy the
        # machine is the way the ratio does, and 1000 / (ms per call) is the most calls/s one core can feed.
        print(f"  client CPU: {cpu:.2f} s = {per_call:.1f} ms per call (target < 4), {1000 / max(per_call, 1e-9):.0f} calls/s "
              f"per core at most; {100 * cpu / wall:.0f}% of one core; load average {load_before:.1f} on {os.cpu_count()} cores")
        # On a shared host the client also waits for a CPU while ready to run: that time is in the wall, not the CPU.
        print(f"  CPU wait:   {waited:.2f} s ready to run but waiting for a CPU other processes held "
              f"({100 * waited / wall:.0f}% of the wall time; 0 on an idle host)")
        print(f"  start-up:   {warm_up:.2f} s importing the SDK and its HTTP transport before the timed run "
              f"(once per process; not in the wall time above)")
        if server_cpu_before is not None and server_cpu_after is not None:
            print(f"  server CPU: {server_cpu_after - server_cpu_before:.2f} s (the simulated server shares this machine)")
        if rerun:
            started = time.monotonic()
            again = asyncio.run(run_panel(trajectories, config, run_dir, progress=False))
            rerun_calls = server_requests(base_url) - calls
            print(f"  cached rerun: {rerun_calls} calls (target 0), {again.cached} verdicts from the store, "
                  f"{time.monotonic() - started:.2f} s")
            stub = SleepProvider(args.latency)
            stub_config = config.model_copy(update={"judges": [stub.spec]})
            judge = LLMJudge(stub.spec, {**stub_config.judge_options(), "provider": stub})
            started, cpu_started = time.monotonic(), time.process_time()
            asyncio.run(run_panel(trajectories, stub_config, tmp / f"stub-{label}", progress=False, judges={stub.spec: judge}))
            stub_wall, stub_cpu = time.monotonic() - started, time.process_time() - cpu_started
            print(f"  same panel, in-process provider stand-in (no HTTP): wall {stub_wall:.2f} s, ratio {stub_wall / ideal:.3f}, "
                  f"client CPU {1000 * stub_cpu / max(1, calls):.1f} ms per call (the rest above is the SDK's HTTP stack)")
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--only", choices=["synthetic", "real"], help="measure one batch only")
    parser.add_argument("--shared-cache", action="store_true",
                        help="with the cache shared across runs on (empty, in a temporary folder), as judge score has it "
                             "by default for paid judges: each verdict is also put there")
    args = parser.parse_args()

    from judge.providers.openai_provider import choose_transport

    transport = choose_transport(None)
    print(f"transport: the openai SDK over {transport}"
          + ("" if transport == "aiohttp" else " (aiohttp is not installed; with it, about 1 ms less CPU per call)"))
    with tempfile.TemporaryDirectory() as tmp:
        if args.only != "real":
            trajectories, truth = synthetic_batch(args.trajectories)
            measure("synthetic", trajectories, truth, args, Path(tmp), rerun=True)
        if args.only != "synthetic":
            trajectories, where = real_batch(args.trajectories)
            print(f"real trajectories: {where}")
            measure("real", trajectories, [], args, Path(tmp), rerun=False)


if __name__ == "__main__":
    main()
