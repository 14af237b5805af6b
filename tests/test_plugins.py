"""Plugins through entry points: the example plugin package (tests/plugins/trajudge_example_plugin) adds a judge,
an importer and a provider that ``judge score`` uses; a broken plugin is reported and stops nothing else.

A plugin is "installed" by writing a dist-info folder (METADATA, entry_points.txt made from the plugin's own
pyproject.toml) into a temporary folder put on the path: importlib.metadata finds it as it finds an installed
distribution, with no pip and no network.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge import plugins, rundir
from judge.cli import app
from judge.judges import make_judge
from judge.model import Trajectory
from judge.schema import Verdict
from trajudge_socket_guard import child_pythonpath

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "tests" / "plugins" / "trajudge_example_plugin"


def install_dist_info(site: Path, name: str, version: str, entry_points: dict[str, dict[str, str]]) -> Path:
    """Write ``NAME-VERSION.dist-info`` with these entry points into ``site``; returns the folder."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = []
    for group, entries in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{key} = {value}" for key, value in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return info


def install_example(site: Path) -> None:
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    install_dist_info(site, project["name"], project["version"], project["entry-points"])


def judge_cli(*args: str, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``judge ARGS`` in a fresh process that sees the plugin (entry points are read once per process)."""
    env = {**os.environ, "PYTHONPATH": child_pythonpath(site, EXAMPLE, REPO)}
    env.pop(plugins.ONLY_ENV, None)
    return subprocess.run([sys.executable, "-c", "from judge.cli import main; main()", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_judge_score_uses_the_judge_importer_and_provider_of_an_installed_plugin(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_example(site)
    out = tmp_path / "run"
    result = judge_cli("score", str(EXAMPLE / "sample.jsonl"), "--out", str(out), "--judge", "example:TODO",
                       "--judge", "example-llm:echo", "--embedder", "lexical", site=site, cwd=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "warning" not in result.stderr
    trajectories = list(rundir.read_jsonl(out / rundir.TRAJECTORIES, Trajectory))
    assert [t.id for t in trajectories] == ["ex-1", "ex-2"]  # read by the plugin's importer
    assert {t.metadata.source_format for t in trajectories} == {"example-log"}
    assert [m.role for m in trajectories[0].messages] == ["user", "assistant", "tool", "assistant"]
    verdicts = {(v.trajectory_id, v.judge): v for v in rundir.read_jsonl(out / rundir.VERDICTS, Verdict)}
    assert set(verdicts) == {(t, j) for t in ("ex-1", "ex-2") for j in ("example:TODO", "example-llm:echo")}
    flagged = verdicts[("ex-1", "example:TODO")]
    assert [(i.turn, i.tag) for i in flagged.issues] == [(2, "example-word")] and flagged.deterministic
    assert verdicts[("ex-2", "example:TODO")].issues == []
    echoed = verdicts[("ex-1", "example-llm:echo")]  # the plugin provider, driven by the built-in LLM judge
    assert echoed.status == "ok" and echoed.model == "echo" and echoed.attempts == 1
    assert echoed.reasoning == "echo found nothing wrong."
    members = json.loads((out / rundir.MANIFEST).read_text())["panel"]["members"]
    independence = {m["judge"]: m["independence"] for m in members}
    assert "seed" not in independence["example-llm:echo"]  # registered with supports_seed=False
    listed = judge_cli("plugins", site=site, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count(": loaded") == 3 and "trajudge-example-plugin 0.1" in listed.stdout
    assert "example" in listed.stdout.split("judge kinds: ")[1].splitlines()[0]
    assert "example-log" in listed.stdout.split("input formats: ")[1]


@pytest.fixture
def broken_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A distribution whose trajudge.judges entry point names a module that does not exist, on sys.path for one
    test (plugin loading state is reset before and after, so other tests see no plugin)."""
    site = tmp_path / "site"
    install_dist_info(site, "trajudge-broken-plugin", "0.3",
                      {"trajudge.judges": {"broken": "trajudge_no_such_module"}})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv(plugins.ONLY_ENV, raising=False)
    importlib.invalidate_caches()
    plugins.reset()
    yield site
    plugins.reset()


def test_a_broken_plugin_is_reported_once_and_named_where_it_is_needed(broken_plugin: Path, capsys) -> None:
    first = plugins.load_plugins(plugins.JUDGES)
    again = plugins.load_plugins(plugins.JUDGES)
    assert first is again and len(first) == 1  # loaded once
    warned = capsys.readouterr().err
    assert warned.count("warning: trajudge plugin not loaded") == 1
    assert "'broken' = trajudge_no_such_module (from trajudge-broken-plugin 0.3)" in warned
    assert "ModuleNotFoundError" in warned
    with pytest.raises(ValueError, match=r"unknown judge 'broken:x'.*not loaded: .*trajudge-broken-plugin 0.3.*ModuleNotFoundError"):
        make_judge("broken:x")
    assert type(make_judge("rules")).__name__ == "RulesJudge"  # the other judges still work


def test_a_broken_judge_plugin_does_not_stop_unrelated_commands(broken_plugin: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    batch = REPO / "examples" / "batch" / "openai_runs.jsonl"
    imported = runner.invoke(app, ["import", str(batch), "--out", str(tmp_path / "out.jsonl")])
    assert imported.exit_code == 0 and "imported" in imported.output, imported.output
    assert "trajudge plugin not loaded" not in imported.output  # `judge import` never loads judge plugins
    listed = runner.invoke(app, ["plugins"])
    assert listed.exit_code == 1 and "NOT LOADED: ModuleNotFoundError" in listed.output
    assert "judge kinds: replay, rules" in listed.output


def test_trajudge_load_plugins_limits_loading_to_named_distributions(broken_plugin: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(plugins.ONLY_ENV, "")
    assert plugins.load_plugins(plugins.JUDGES) == []
    plugins.reset()
    monkeypatch.setenv(plugins.ONLY_ENV, "Trajudge_Broken.Plugin")  # names are compared as PEP 503 normalises them
    assert [p.name for p in plugins.load_plugins(plugins.JUDGES)] == ["broken"]
