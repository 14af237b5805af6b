"""``judge score --engine ray``: on a local Ray instance started by this module, a run leaves the same run
directory as the local engine on the same input (rules judge, and an LLM panel through a local fake server), the
cache is the run's (a rerun makes no call), and ``--max-cost`` holds across workers.

One Ray instance serves the module (start-up takes seconds): two CPUs, no dashboard, listening on 127.0.0.1 only,
so the socket guard of conftest.py has nothing to refuse, in this process or in Ray's workers (Ray's dashboard head
is left unguarded: tests/netguard/sitecustomize.py says why). It is shut down after the last test.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import judge
from judge import rundir
from judge.cli import app
from judge.testing.simjudge import SimConfig, SimulatedJudge, simulated_server
from judge.testing.synthetic import synthetic_batch
from trajudge_socket_guard import child_pythonpath

if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is not installed (pip install 'trajudge[ray]'): the Ray engine cannot be tested",
                allow_module_level=True)

from judge.engine.ray_engine import RayEngine  # noqa: E402 - after the skip: it is only useful with Ray

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "batch"
LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # 0: a Ray instance started here listens on 127.0.0.1 only
# Fields that differ between any two runs (durations, clock times, where the run is) or name the engine.
VOLATILE = frozenset({"latency_s", "judge_latency_s", "elapsed_s", "wall_s", "started_at", "finished_at",
                      "generated_at", "engine", "dir", "store_id"})  # store_id: a random id per store


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[RayEngine]:
    """The module's Ray instance, started as ``--engine ray`` starts one (so that start is tested too)."""
    engine = RayEngine(num_cpus=2)
    engine.__enter__()
    try:
        yield engine
    finally:
        engine.__exit__(None, None, None)


def batch_with_problems(tmp_path: Path) -> Path:
    """The example batch plus what the import merge must handle like a local import: a repeated id (renamed
    ``~2``, ``~3``), an unreadable line, a file that is not data, several files and spans of lines."""
    folder = tmp_path / "inputs"
    shutil.copytree(EXAMPLES, folder)
    first = (EXAMPLES / "openai_runs.jsonl").read_text().splitlines()[0]
    (folder / "zz_repeats.jsonl").write_text(first + "\n{not json\n" + first + "\n")
    (folder / "notes.txt").write_text("not a data file")
    return folder


def comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def assert_same_run(local: Path, ray: Path) -> None:
    """Every JSONL and JSON file of the two runs has the same rows, modulo :data:`VOLATILE` fields."""
    names = sorted(p.name for p in local.iterdir() if p.suffix in (".jsonl", ".json"))
    assert names == sorted(p.name for p in ray.iterdir() if p.suffix in (".jsonl", ".json"))
    assert {rundir.TRAJECTORIES, rundir.VERDICTS, rundir.CLUSTERS, rundir.SCORES, rundir.REPAIRS, rundir.SUMMARY} <= set(names)
    for name in names:
        if name.endswith(".jsonl"):
            rows = [[comparable(json.loads(line)) for line in (run / name).read_text().splitlines()] for run in (local, ray)]
        else:
            rows = [comparable(json.loads((run / name).read_text())) for run in (local, ray)]
        assert rows[0] == rows[1], f"{name} differs between the local and the Ray run: {_difference(*rows)}"
    for name in ("scores.parquet", "clusters.parquet", "issues.parquet"):
        assert (local / name).read_bytes() == (ray / name).read_bytes(), f"{name} differs"


def _difference(local: Any, ray: Any, where: str = "") -> str:
    """Where two JSON values first differ (for the failure message)."""
    if isinstance(local, dict) and isinstance(ray, dict):
        for key in sorted(set(local) | set(ray)):
            if local.get(key) != ray.get(key):
                return _difference(local.get(key), ray.get(key), f"{where}.{key}")
    if isinstance(local, list) and isinstance(ray, list) and len(local) == len(ray):
        for index, (a, b) in enumerate(zip(local, ray)):
            if a != b:
                return _difference(a, b, f"{where}[{index}]")
    return f"{where or 'the value'}: local {local!r:.300} / ray {ray!r:.300}"


def test_the_workers_of_a_run_instance_have_the_socket_guard(ray_instance: RayEngine, socket_guard: Any) -> None:
    """Ray's workers, where trajudge's tasks run, are Python processes started with the tests' PYTHONPATH: a
    connection that would leave the machine is refused there and reaches this test although the task caught it."""
    import ray

    @ray.remote
    def probe() -> str:
        try:
            socket.create_connection(("10.255.255.1", 9), timeout=5)
        except Exception as error:  # the guard's refusal is not an OSError
            return type(error).__name__
        return "connected"

    assert ray.get(probe.remote()) == "BlockedConnection"
    (refused,) = socket_guard.take()  # consumed: this test expected it
    assert refused.startswith("in a child process") and "10.255.255.1" in refused


def test_rules_run_is_the_same_on_both_engines(ray_instance: RayEngine, tmp_path: Path) -> None:
    inputs = batch_with_problems(tmp_path)
    local = judge.score([inputs], out=tmp_path / "local", embedder="lexical")
    engine = RayEngine(shard_size=3, part_bytes=1)  # several shards and import parts, on the module's instance
    ray = judge.score([inputs], out=tmp_path / "ray", embedder="lexical", engine=engine)
    assert local.invocation.imported == ray.invocation.imported
    imported = ray.invocation.imported
    assert imported.renamed == 2 and imported.rejected == 1 and imported.imported == 16
    # 16 trajectories in shards of 3; part_bytes=1: each line of a JSON Lines file is a span of its own (13 in the
    # examples, 3 in zz_repeats.jsonl), the .json file one part
    assert engine.shards == 6 and engine.import_parts == 17
    assert_same_run(tmp_path / "local", tmp_path / "ray")
    recorded = json.loads((tmp_path / "ray" / rundir.MANIFEST).read_text())["engine"]
    assert recorded["name"] == "ray" and recorded["shards"] == 6
    assert json.loads((tmp_path / "local" / rundir.MANIFEST).read_text())["engine"] == {"name": "local"}

    # Human decisions (judge review) apply on both engines: the same overrides.jsonl in both runs, scored again.
    released = next(row.trajectory_id for row in local.scores() if row.release)
    review = CliRunner().invoke(app, ["review", str(tmp_path / "local"), "--hold", released, "--reason", "checked by hand",
                                      "--reviewer", "tester"])
    assert review.exit_code == 0, review.output
    shutil.copy(tmp_path / "local" / rundir.OVERRIDES, tmp_path / "ray" / rundir.OVERRIDES)
    judge.score([inputs], out=tmp_path / "local", embedder="lexical")
    again = judge.score([inputs], out=tmp_path / "ray", embedder="lexical", engine=RayEngine(shard_size=3))
    held = next(row for row in again.scores() if row.trajectory_id == released)
    assert held.release is False and held.review is not None
    assert_same_run(tmp_path / "local", tmp_path / "ray")


@dataclass(frozen=True)
class LLMBatch:
    """Synthetic trajectories and what the simulated judge reports about them. Their queries are all different:
    the simulated judge draws failures per (query, seed) and attempt, so both engines meet the same ones only
    when no two trajectories share a query."""

    path: Path
    truth: list[dict[str, Any]]


@pytest.fixture(scope="module")
def llm_batch(tmp_path_factory: pytest.TempPathFactory) -> LLMBatch:
    trajectories, truth = synthetic_batch(14)
    path = tmp_path_factory.mktemp("llm") / "batch.jsonl"
    path.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    assert len({t.query for t in trajectories}) == len(trajectories)
    return LLMBatch(path, truth)


def test_llm_panel_run_is_the_same_on_both_engines(ray_instance: RayEngine, llm_batch: LLMBatch,
                                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Failures, rate limits and malformed answers are drawn per request and attempt, so both runs meet the same ones
    # whatever order their calls take; each run gets a fresh simulated judge.
    config = SimConfig(latency_s=0.005, error_rate=0.1, rate_limit_rate=0.05, malformed_rate=0.1)
    with simulated_server(llm_batch.truth, config) as server:
        spec = f"openai-compatible:simjudge@{server.base_url}"
        options = {"judges": [spec], "embedder": "lexical", "rpm": 6000, "retry_base_delay": 0.01}
        # Each engine's first run has a shared cache of its own (the folder comes from the environment, as the
        # user's default does: run.json records no folder), so the Ray run is not answered by the local one's.
        monkeypatch.setenv("TRAJUDGE_CACHE_DIR", str(tmp_path / "cache-local"))
        judge.score([llm_batch.path], out=tmp_path / "local", **_panel(options))
        local_requests = server.request_count
        server.reset_count()
        server.responder = SimulatedJudge(llm_batch.truth, config)
        monkeypatch.setenv("TRAJUDGE_CACHE_DIR", str(tmp_path / "cache-ray"))
        ray = judge.score([llm_batch.path], out=tmp_path / "ray", engine=RayEngine(shard_size=3), **_panel(options))
        assert server.request_count == local_requests  # the same calls, failed attempts and preflight included
        panel = ray.invocation.panel
        assert panel.retries > 0 and panel.calls == local_requests - panel.preflight_calls
        assert_same_run(tmp_path / "local", tmp_path / "ray")
        # Every attempt is on record in the run's store (the actor wrote them), failed ones included.
        assert len(ray.attempts() or []) == local_requests

        # The run's cache, through the actor: a rerun on the Ray engine makes no call (but its preflight).
        server.reset_count()
        again = judge.score([llm_batch.path], out=tmp_path / "ray", engine=RayEngine(shard_size=3), **_panel(options))
        assert again.invocation.panel.calls == 0 and server.request_count == again.invocation.panel.preflight_calls == 1
        assert again.invocation.panel.cached == len(list(again.verdicts()))

        # The cache shared across runs, through the actor: a new run directory pays nothing for the answers the
        # Ray run stored, and leaves what a local run with the same cache leaves.
        server.reset_count()
        shared = judge.score([llm_batch.path], out=tmp_path / "ray-new", engine=RayEngine(shard_size=3), preflight=False,
                             **_panel(options))
        ok = sum(v.status == "ok" for v in shared.verdicts())
        assert server.request_count == 0 and shared.invocation.panel.shared_hits == ok > 0
        local_new = judge.score([llm_batch.path], out=tmp_path / "local-new", preflight=False, **_panel(options))
        assert server.request_count == 0 and local_new.invocation.panel.shared_hits == ok
        assert_same_run(tmp_path / "local-new", tmp_path / "ray-new")


def test_max_cost_holds_across_workers(ray_instance: RayEngine, llm_batch: LLMBatch, tmp_path: Path) -> None:
    with simulated_server(llm_batch.truth, SimConfig(latency_s=0.02)) as server:
        spec = f"openai-compatible:simjudge@{server.base_url}"
        run = judge.score([llm_batch.path], out=tmp_path / "ray", judges=[spec], embedder="lexical", max_cost=0.05,
                          concurrency=4, engine=RayEngine(shard_size=2), preflight=False)
        panel = run.invocation.panel
        assert panel.budget_exceeded and panel.unscored["budget_exceeded"] > 0
        assert panel.budget is not None and panel.budget.spent_usd <= 0.05
        # What the store holds is what the server was sent: the cap was reserved in one place for all workers.
        attempts = run.attempts() or []
        assert len(attempts) == server.request_count > 0
        assert sum(a["cost_usd"] or 0 for a in attempts) == pytest.approx(panel.budget.spent_usd)


def test_rate_limits_are_one_bucket_for_all_workers(ray_instance: RayEngine, tmp_path: Path) -> None:
    """Two workers' calls (two RunCalls from the same ledger) draw on one --tpm bucket: after one drains it, the
    other waits for the refill, as two calls of one local run would."""
    import asyncio

    from judge.engine.ledger import ledger_calls, start_ledger, stop_ledger
    from judge.runcalls import CallSettings

    ledger = start_ledger(tmp_path, CallSettings(tpm=6000), None)  # 6000 tokens a minute: 100 a second
    try:
        first, second = ledger_calls(ledger), ledger_calls(ledger)

        async def drain_then_wait() -> float:
            await first.runtime.limiter_for("openai:m").acquire(6000)
            started = time.monotonic()
            await second.runtime.limiter_for("openai:m").acquire(50)
            return time.monotonic() - started

        assert asyncio.run(drain_then_wait()) >= 0.4
    finally:
        stop_ledger(ledger)


@pytest.fixture
def ray_cluster(tmp_path: Path) -> Iterator[str]:
    """An existing cluster for ``--address``: ``ray start --head --block`` on 127.0.0.1 in a session of its own,
    ended (its process group, by id) after the test. Yields its GCS address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "ray-start.log"
    env = {**os.environ, LOOPBACK: "0", "PYTHONPATH": child_pythonpath(REPO)}
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    with log.open("w") as output:
        # The head's workers import this checkout, as a cluster's image has trajudge installed.
        head = subprocess.Popen(["ray", "start", "--head", "--block", "--port", str(port), "--num-cpus", "1",
                                 "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", temp],
                                env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "Ray runtime started" not in log.read_text():
            assert head.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(head.pid, signal.SIGTERM)  # the head's raylet, GCS and workers end with it
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=3)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)  # what SIGTERM left (ray start --block may outlive its children)
        head.wait(timeout=10)
        shutil.rmtree(temp, ignore_errors=True)


def test_the_cli_on_an_existing_cluster(ray_instance: RayEngine, ray_cluster: str, tmp_path: Path) -> None:
    """``judge score --engine ray --address HOST:PORT`` from another process: the driver joins a cluster it did
    not start (and leaves it running), the ledger and the import run on its node, and the run is the local one."""
    env = {**os.environ, "PYTHONPATH": child_pythonpath(REPO)}
    judge.score([EXAMPLES], out=tmp_path / "local", embedder="lexical")
    cli = "import sys; from judge.cli import main; sys.argv[0] = 'judge'; main()"
    done = subprocess.run([sys.executable, "-c", cli, "score", str(EXAMPLES), "--out", str(tmp_path / "ray"),
                           "--embedder", "lexical", "--engine", "ray", "--address", ray_cluster],
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "scores (14 trajectories)" in done.stdout
    progress = [line for line in (done.stdout + done.stderr).splitlines() if "shard(s)" in line]
    assert progress and not [line for line in progress if "calls" in line], progress  # the rules judge calls nothing
    assert_same_run(tmp_path / "local", tmp_path / "ray")
    recorded = json.loads((tmp_path / "ray" / rundir.MANIFEST).read_text())["engine"]
    assert recorded["address"] == ray_cluster and recorded["cpus"] == 1


def _panel(options: dict[str, Any]) -> dict[str, Any]:
    """judge.score's keywords for the panel options (the retry delay is a config setting, not a flag)."""
    from judge.panel import PanelConfig

    options = dict(options)
    config = PanelConfig(retry_base_delay_s=options.pop("retry_base_delay"))
    return {"config": config, **options}
