"""The judge-answer cache shared across runs: a new --out makes no call; failures, other prompts and other
templates are not shared; no secret reaches the file; ``judge cache stats|prune``; several processes at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge import rundir
from judge.cli import app
from judge.schema import Verdict
from judge.sharedcache import SharedCache, cache_path, default_cache_dir
from judge.store import RunStore
from judge.testing.servers import FakeLLMServer, Scripted
from judge.testing.synthetic import make_trajectory
from trajudge_socket_guard import child_pythonpath

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text('batch_discount: 0.5\nprices:\n  "openai-compatible:*": {input: 1.0, output: 2.0}\n')
    return path


def score(*args: str):
    return runner.invoke(app, ["score", *args, "--embedder", "lexical"])


def verdicts(run_dir: Path) -> list[Verdict]:
    return list(rundir.read_jsonl(run_dir / rundir.VERDICTS, Verdict))


def config(tmp_path: Path, prices: Path, **extra: object) -> Path:
    path = tmp_path / f"panel-{len(list(tmp_path.glob('panel-*')))}.yaml"
    path.write_text(json.dumps({"prices": str(prices), "passes": 3, **extra}))
    return path


def test_a_new_folder_makes_no_call_and_pays_nothing(batch: Path, tmp_path: Path, prices: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai") as fake:
        common = [str(batch), "--judge", f"openai-compatible:m@{fake.base_url}", "--config", str(config(tmp_path, prices))]
        first = score(*common, "--out", str(tmp_path / "a"))
        assert first.exit_code == 0, first.output
        assert fake.request_count == 10  # the preflight request, then 3 trajectories x 3 passes
        second = score(*common, "--out", str(tmp_path / "b"))
        assert second.exit_code == 0, second.output
        assert fake.request_count == 10, "the second folder called the server"
        assert "calls made: 0" in second.output and "9 of them from the shared cache" in second.output
    paid = {(v.trajectory_id, v.pass_key): v for v in verdicts(tmp_path / "a")}
    taken = verdicts(tmp_path / "b")
    assert len(taken) == 9 and all(v.cached and v.cached_from == "shared" and v.cost_usd == 0.0 for v in taken)
    for verdict in taken:
        original = paid[(verdict.trajectory_id, verdict.pass_key)]
        assert original.cost_usd and verdict.original_cost_usd == pytest.approx(original.cost_usd)
        assert (verdict.issues, verdict.efficiency) == (original.issues, original.efficiency)
    with RunStore.for_run(tmp_path / "b") as store:  # the run's own record of what it used; nothing was attempted
        assert store.count_verdicts() == 9 and store.attempts() == [] and store.spent_usd() == 0.0
    budget = json.loads((tmp_path / "b" / "run.json").read_text())["budget"]
    assert budget["spent_usd"] == 0.0
    with SharedCache.open() as cache:
        stats = cache.stats()
    assert (stats.entries, stats.hits) == (9, 9)


def test_another_prompt_version_or_template_text_or_no_shared_cache_calls(
        batch: Path, tmp_path: Path, prices: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    edited = tmp_path / "judge-edited.md"  # the same version number, one word changed
    text = (ROOT / "prompts" / "judge-v2.1.md").read_text(encoding="utf-8")
    edited.write_text(text.replace("You review one trajectory", "You review, today, one trajectory", 1), encoding="utf-8")
    assert edited.read_text() != text
    with FakeLLMServer("openai") as fake:
        common = [str(batch), "--judge", f"openai-compatible:m@{fake.base_url}", "--no-preflight"]
        assert score(*common, "--config", str(config(tmp_path, prices)), "--out", str(tmp_path / "a")).exit_code == 0
        assert fake.request_count == 9
        older = score(*common, "--config", str(config(tmp_path, prices, prompt="judge-v2")), "--out", str(tmp_path / "b"))
        assert older.exit_code == 0, older.output
        assert fake.request_count == 18 and "calls made: 9" in older.output
        retold = score(*common, "--config", str(config(tmp_path, prices, prompt=str(edited))), "--out", str(tmp_path / "c"))
        assert retold.exit_code == 0, retold.output
        assert fake.request_count == 27 and "calls made: 9" in retold.output
        entries = SharedCache.open().stats().entries
        opted_out = score(*common, "--config", str(config(tmp_path, prices)), "--no-shared-cache", "--out", str(tmp_path / "d"))
        assert opted_out.exit_code == 0, opted_out.output
        assert fake.request_count == 36 and "calls made: 9" in opted_out.output
        assert SharedCache.open().stats().entries == entries == 27


def test_failures_are_never_shared(batch: Path, tmp_path: Path, prices: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok("this is not a verdict")) as fake:
        common = [str(batch), "--judge", f"openai-compatible:m@{fake.base_url}", "--no-preflight", "--passes", "1",
                  "--config", str(config(tmp_path, prices))]
        first = score(*common, "--out", str(tmp_path / "a"))
        assert first.exit_code == 3 and fake.request_count == 6  # each pass: the call and one corrective retry
        assert {v.reason for v in verdicts(tmp_path / "a")} == {"parse_error"}
        assert not cache_path().exists() or SharedCache.open().stats().entries == 0
        fake.responder = lambda request: Scripted.ok()
        second = score(*common, "--out", str(tmp_path / "b"))
        assert second.exit_code == 0, second.output
        assert fake.request_count == 9 and {v.status for v in verdicts(tmp_path / "b")} == {"ok"}
        assert SharedCache.open().stats().entries == 3


def test_no_secret_reaches_the_cache(batch: Path, tmp_path: Path, prices: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ENVSECRET123")
    with FakeLLMServer("openai") as fake:
        url = fake.base_url.replace("http://", "http://alice:URLSECRET456@") + "?api_key=QUERYSECRET789"
        panel = config(tmp_path, prices, params={"headers": {"X-Gateway-Token": "HEADERSECRET000"}})
        result = score(str(batch), "--judge", f"openai-compatible:m@{url}", "--config", str(panel), "--out",
                       str(tmp_path / "a"), "--no-preflight", "--passes", "1")
        assert result.exit_code == 0, result.output
        assert fake.request_headers[0]["x-gateway-token"] == "HEADERSECRET000"  # sent, so the test means something
    with SharedCache.open() as cache:
        assert cache.stats().entries == 3
        judges = {row.judge for row in cache.stats().by_judge}
    data = b"".join(p.read_bytes() for p in cache_path().parent.iterdir() if p.is_file())
    for secret in (b"ENVSECRET123", b"URLSECRET456", b"QUERYSECRET789", b"HEADERSECRET000", b"alice"):
        assert secret not in data, secret
    assert judges == {f"openai-compatible:m@{fake.base_url}"}  # named by its URL without user info or query


def test_cache_location_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TRAJUDGE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "trajudge"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "trajudge"
    monkeypatch.setenv("TRAJUDGE_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_path() == tmp_path / "mine" / "cache.sqlite"


def ok_verdict(trajectory_id: str = "t", cost: float = 0.01, **extra: object) -> dict:
    return Verdict(trajectory_id=trajectory_id, judge="openai:gpt-4o", pass_index=1, pass_key="openai:gpt-4o#1",
                   status="ok", cost_usd=cost, **extra).model_dump(mode="json")


def put(cache: SharedCache, key: str, judge: str = "openai:gpt-4o", model: str = "gpt-4o", **extra: object) -> bool:
    return cache.put(key, ok_verdict(**extra), judge=judge, provider=judge.split(":")[0], model=model,
                     prompt_version="judge-v2.1", pass_index=1, trajectory_hash="h")


def test_only_ok_verdicts_are_stored_and_the_first_answer_is_kept(tmp_path: Path) -> None:
    with SharedCache.open(tmp_path) as cache:
        failed = Verdict(trajectory_id="t", judge="j", pass_index=1, pass_key="j#1", status="unscored",
                         reason="parse_error", raw="garbage").model_dump(mode="json")
        with pytest.raises(ValueError, match="only successful"):
            cache.put("k", failed, judge="j", provider="p", model="m", prompt_version=None, pass_index=1, trajectory_hash="h")
        assert put(cache, "k", cost=0.5) and not put(cache, "k", cost=0.9)
        found = cache.get("k")
        assert found is not None and found.cost_usd == 0.5
        assert cache.get("other") is None


def test_added_answers_are_stored_in_chunks_and_at_close(tmp_path: Path) -> None:
    # A run's verdicts were each one autocommitted write of the shared file (and its lock); now they are kept and
    # stored PUTS_CHUNK at a time, the rest when the run ends. Another process sees them once they are stored.
    from judge.sharedcache import PUTS_CHUNK

    def add(cache: SharedCache, key: str) -> None:
        cache.add(key, ok_verdict(), judge="openai:gpt-4o", provider="openai", model="gpt-4o",
                  prompt_version="judge-v2.1", pass_index=1, trajectory_hash="h")

    with SharedCache.open(tmp_path) as cache, SharedCache.open(tmp_path) as other:
        for index in range(PUTS_CHUNK - 1):
            add(cache, f"k{index}")
        assert other.get("k0") is None  # kept, not stored yet
        add(cache, "last-of-the-chunk")
        assert other.get("k0") is not None and other.get("last-of-the-chunk") is not None
        add(cache, "after")
        assert other.get("after") is None
        with pytest.raises(ValueError, match="only successful"):
            cache.add("bad", {**ok_verdict(), "status": "unscored"}, judge="j", provider="p", model="m",
                      prompt_version=None, pass_index=1, trajectory_hash="h")
    with SharedCache.open(tmp_path) as cache:
        assert cache.get("after") is not None  # stored when the cache was closed


def test_stats_and_prune(tmp_path: Path) -> None:
    with SharedCache.open(tmp_path) as cache:
        for index in range(4):
            put(cache, f"old-{index}")
        for index in range(3):
            put(cache, f"claude-{index}", judge="anthropic:claude-sonnet-4-5", model="claude-sonnet-4-5")
        cache.record_hits(["claude-0", "claude-0", "claude-1"])
        stats = cache.stats()
        assert (stats.entries, stats.hits) == (7, 3) and stats.saved_usd == pytest.approx(0.03)
        assert {(row.judge, row.entries, row.hits) for row in stats.by_judge} == {
            ("openai:gpt-4o", 4, 0), ("anthropic:claude-sonnet-4-5", 3, 3)}
        in_a_month = time.time() + 30 * 86400
        assert cache.prune(older_than_days=31, now=in_a_month).removed == 0
        assert cache.prune(older_than_days=29, judge="nothing-matches", now=time.time()).removed == 0
        assert cache.prune(judge="anthropic:*").removed == 3
        size = cache.stats().payload_bytes
        result = cache.prune(max_size_mb=(size // 2) / 1_000_000)
        assert result.removed == 2 and result.kept == 2 and cache.stats().payload_bytes <= size // 2


def test_cache_commands(tmp_path: Path) -> None:
    empty = runner.invoke(app, ["cache", "stats", "--cache-dir", str(tmp_path / "none")])
    assert empty.exit_code == 0 and "does not exist yet" in empty.output and not (tmp_path / "none").exists()
    with SharedCache.open(tmp_path) as cache:
        for index in range(3):
            put(cache, f"k{index}")
        cache.record_hits(["k0"])
    stats = runner.invoke(app, ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert stats.exit_code == 0, stats.output
    assert "entries: 3; hits: 1" in stats.output and "openai:gpt-4o" in stats.output
    document = json.loads(runner.invoke(app, ["cache", "stats", "--cache-dir", str(tmp_path), "--json"]).stdout)
    assert (document["entries"], document["hits"], document["by_judge"][0]["judge"]) == (3, 1, "openai:gpt-4o")
    nothing = runner.invoke(app, ["cache", "prune", "--cache-dir", str(tmp_path)])
    assert nothing.exit_code == 1 and "--older-than" in nothing.output
    pruned = runner.invoke(app, ["cache", "prune", "--judge", "openai:*", "--cache-dir", str(tmp_path)])
    assert pruned.exit_code == 0 and "removed 3 entries, kept 0" in pruned.output


WORKER = """
import sys
from judge.schema import Verdict
from judge.sharedcache import SharedCache
name, directory = sys.argv[1], sys.argv[2]
verdict = Verdict(trajectory_id="t", judge="j", pass_index=1, pass_key="j#1", status="ok").model_dump(mode="json")
seen = 0
for index in range(150):
    with SharedCache.open(directory) as cache:  # a connection per entry: the worst case for contention
        cache.put(f"{name}-{index}", verdict, judge="j", provider="p", model="m", prompt_version=None, pass_index=1,
                  trajectory_hash="h")
        cache.put(f"common-{index}", verdict, judge="j", provider="p", model="m", prompt_version=None, pass_index=1,
                  trajectory_hash="h")
        seen += cache.get(f"common-{index}") is not None
        cache.record_hits([f"common-{index}"])
print(seen)
"""


def test_several_processes_share_one_cache(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": child_pythonpath(ROOT)}
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, f"w{n}", str(tmp_path)], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in range(3)]
    outputs = [worker.communicate(timeout=120) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0], [err for _, err in outputs]
    assert [out.strip() for out, _ in outputs] == ["150"] * 3
    with SharedCache.open(tmp_path) as cache:
        stats = cache.stats()
    assert stats.entries == 3 * 150 + 150 and stats.hits == 3 * 150


# --- judge score --dry-run ---------------------------------------------------------------------------


def dry_run(*args: str):
    result = runner.invoke(app, ["score", *args, "--dry-run"])
    assert result.exit_code == 0, result.output
    return result.output


def test_dry_run_counts_calls_tokens_and_cost_and_sends_and_writes_nothing(
        batch: Path, tmp_path: Path, prices: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai") as fake:
        common = [str(batch), "--judge", f"openai-compatible:m@{fake.base_url}", "--judge", "rules", "--passes", "2",
                  "--config", str(config(tmp_path, prices, passes=None))]
        before = dry_run(*common, "--out", str(tmp_path / "a"))
        assert fake.request_count == 0 and not (tmp_path / "a").exists() and not cache_path().exists()
        assert "no shared cache yet" in before
        assert "6 pass(es): 0 in the run store, 0 in the shared cache, 6 to judge in 6 call(s)" in before
        assert "rules: 3 pass(es), local: no call" in before and "total: 6 call(s)" in before
        tokens = int(before.split("tokens: ")[1].split(" input")[0].replace(",", ""))
        assert tokens > 6 * 500  # the rendered prompts, not a guess
        # the cost: input at $1/M, output at $2/M (600 assumed per call), half of it in batches
        expected = (tokens * 1.0 + 6 * 600 * 2.0) / 1e6
        assert f"cost: ${expected:.4f} expected" in before
        batched = dry_run(*common, "--out", str(tmp_path / "a"), "--batch")
        assert "sent in batches" in batched and f"cost: ${expected / 2:.4f} expected" in batched
        as_json = runner.invoke(app, ["score", *common, "--out", str(tmp_path / "a"), "--dry-run", "--json"])
        document = json.loads(as_json.stdout)
        assert as_json.exit_code == 0 and document["calls"] == 6 and document["dry_run"] is True
        llm = next(row for row in document["estimate"]["judges"] if not row["local"])
        assert llm["input_tokens"] == tokens and llm["cost_expected"] == pytest.approx(expected)

        result = score(*common, "--out", str(tmp_path / "a"), "--no-preflight")
        assert result.exit_code == 0, result.output
        assert fake.request_count == 6
        again = dry_run(*common, "--out", str(tmp_path / "a"))
        assert "6 in the run store, 0 in the shared cache, 0 to judge in 0 call(s)" in again and "total: 0 call(s)" in again
        elsewhere = dry_run(*common, "--out", str(tmp_path / "b"))
        assert "0 in the run store, 6 in the shared cache, 0 to judge in 0 call(s)" in elsewhere
        assert not (tmp_path / "b").exists()
        opted_out = dry_run(*common, "--out", str(tmp_path / "b"), "--no-shared-cache")
        assert "6 to judge in 6 call(s)" in opted_out and "no shared cache (turned off)" in opted_out
        assert fake.request_count == 6


def test_dry_run_counts_windows_as_the_run_calls_them(tmp_path: Path, prices: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    long = [make_trajectory(f"long-{n}", f"Migrate settings module {n}.", [  # two contents: identical ones are judged once
        {"text": f"step {t} " + "lorem ipsum " * 60, "calls": [("bash", {"cmd": f"run step {t}"}, "ok " * 20, False, 0)]}
        for t in range(1, 25)]) for n in range(2)]
    path = tmp_path / "long.jsonl"
    path.write_text("".join(t.to_json_line() + "\n" for t in long))
    with FakeLLMServer("openai") as fake:
        common = [str(path), "--judge", f"openai-compatible:m@{fake.base_url}", "--passes", "1", "--no-shared-cache",
                  "--config", str(config(tmp_path, prices, passes=None, max_input_tokens=5000))]
        estimate = dry_run(*common, "--out", str(tmp_path / "run"))
        calls = int(estimate.split("to judge in ")[1].split(" call")[0])
        assert calls > 2 and "2 pass(es) in windows" in estimate
        result = score(*common, "--out", str(tmp_path / "run"), "--no-preflight")
        assert result.exit_code == 0, result.output
        assert fake.request_count == calls


def test_the_python_api_takes_the_cache_options(batch: Path, tmp_path: Path, prices: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.api import score as api_score
    from judge.panel import PanelConfig

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai") as fake:
        settings = PanelConfig(judges=[f"openai-compatible:m@{fake.base_url}"], passes=1, prices=str(prices))
        api_score(batch, tmp_path / "a", config=settings, preflight=False, report=False, embedder="lexical")
        taken = api_score(batch, tmp_path / "b", config=settings, preflight=False, report=False, embedder="lexical")
        assert fake.request_count == 3
        frame = taken.verdicts_df()
        assert list(frame["cached_from"]) == ["shared"] * 3 and (frame["original_cost_usd"] > 0).all()
        api_score(batch, tmp_path / "c", config=settings, preflight=False, report=False, embedder="lexical",
                  no_shared_cache=True)
        assert fake.request_count == 6


def test_each_trajectory_is_hashed_once_for_the_run_store_and_the_shared_cache(tmp_path: Path, prices: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The content hash (the canonical JSON of a whole trajectory) keys every pass in the run store and in the shared
    cache: it is taken once per trajectory, not once more for each pass put in the shared cache (issue 27)."""
    import asyncio

    from judge.model import Trajectory
    from judge.panel import PanelConfig, run_panel
    from judge.testing.synthetic import synthetic_batch

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("TRAJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    trajectories, _ = synthetic_batch(3)
    hashed: list[str] = []
    content_hash = Trajectory.content_hash

    def counting(self: Trajectory) -> str:
        hashed.append(self.id)
        return content_hash(self)

    monkeypatch.setattr(Trajectory, "content_hash", counting)
    with FakeLLMServer("openai") as fake:
        config = PanelConfig(judges=[f"openai-compatible:m@{fake.base_url}"], passes=2, prices=str(prices))
        asyncio.run(run_panel(trajectories, config, tmp_path / "run", progress=False))
        assert fake.request_count == 6
    assert sorted(hashed) == sorted(t.id for t in trajectories)
    import sqlite3
    rows = sqlite3.connect(cache_path(tmp_path / "cache")).execute("SELECT trajectory_hash FROM verdicts").fetchall()
    assert sorted(row[0] for row in rows) == sorted(content_hash(t) for t in trajectories for _ in range(2))


def test_the_template_hash_follows_the_template_it_is_kept_for() -> None:
    """template_hash is kept per template object (every pass asks for it): a template whose front matter changed, or
    another template, gets its own hash, the same one a fresh computation gives."""
    import dataclasses
    from types import SimpleNamespace

    from judge.prompting import load_template
    from judge.sharedcache import template_hash

    loaded = load_template("judge-v2")
    template = dataclasses.replace(loaded, meta=dict(loaded.meta))  # its own front matter, changed below
    first = template_hash(SimpleNamespace(template=template))
    assert template_hash(SimpleNamespace(template=template)) == first
    template.meta["note"] = "changed"
    changed = template_hash(SimpleNamespace(template=template))
    assert changed != first
    fresh = dataclasses.replace(template, meta=dict(template.meta))  # another object, the same text
    assert template_hash(SimpleNamespace(template=fresh)) == changed
    other = dataclasses.replace(template, sections=(*template.sections, ("user", "one more section")))
    assert template_hash(SimpleNamespace(template=other)) not in (first, changed)
    assert template_hash(SimpleNamespace(template=None)) is None
