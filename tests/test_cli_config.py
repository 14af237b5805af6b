"""Config files (``--config``): the flags' names with dashes or underscores, YAML / TOML / JSON, old keys with a
note, and errors that name the file, the line, the key and the valid keys. Flags win over the file."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from judge.cli import app
from judge.cli.cluster_cmds import CLUSTER_KEYS
from judge.cli.score_config import SCORE_FILE_KEYS, ScoreFileOptions, load_config
from judge.cluster import ClusterConfig
from judge.config import ConfigError, flag_key, read_option_file
from judge.panel import PANEL_KEYS, PANEL_RENAMED, PanelConfig

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "batch"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# (file name, text, the PanelConfig fields expected)
READ_CASES = [
    ("dashes.yaml", "judge: [openai:gpt-4o]\nmax-cost: 5\nbase-url: http://h/v1\n",
     {"judges": ["openai:gpt-4o"], "max_cost_usd": 5, "base_url": "http://h/v1"}),
    ("underscores.yaml", "judge: openai:gpt-4o\nmax_cost: 5\nbase_url: http://h/v1\n",
     {"judges": ["openai:gpt-4o"], "max_cost_usd": 5, "base_url": "http://h/v1"}),
    ("section.yaml", "panel:\n  timeout: 30\n  max-input-tokens: 9000\nother_tool: {x: 1}\n",
     {"timeout_s": 30, "max_input_tokens": 9000}),
    ("panel.toml", 'judge = ["rules", "openai:gpt-4o"]\nmax-cost = 2.5\nretry-base-delay = 0.5\n[params]\nseed = 3\n',
     {"judges": ["rules", "openai:gpt-4o"], "max_cost_usd": 2.5, "retry_base_delay_s": 0.5, "params": {"seed": 3}}),
    ("section.toml", '[panel]\nmax_cost = 1\nconcurrency = 2\n', {"max_cost_usd": 1, "concurrency": 2}),
    ("panel.json", '{"judge": ["rules"], "max-cost": 3, "temperature": "none"}',
     {"judges": ["rules"], "max_cost_usd": 3, "temperature": "none"}),
    ("empty.yaml", "", {"judges": [], "max_cost_usd": None}),
]


@pytest.mark.parametrize(("name", "text", "expected"), READ_CASES, ids=[c[0] for c in READ_CASES])
def test_panel_config_reads_the_flag_names(tmp_path: Path, name: str, text: str, expected: dict[str, Any]):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none of these is an old key
        config = PanelConfig.load(write(tmp_path, name, text))
    assert {key: getattr(config, key) for key in expected} == expected


# (text, old key as written, the current key named in the note, field, value)
OLD_KEYS = [
    ("max_cost_usd: 4\n", "max_cost_usd", "max-cost", "max_cost_usd", 4),
    ("timeout_s: 9\n", "timeout_s", "timeout", "timeout_s", 9),
    ("judges: [rules]\n", "judges", "judge", "judges", ["rules"]),
    ("retry_base_delay_s: 0.1\n", "retry_base_delay_s", "retry-base-delay", "retry_base_delay_s", 0.1),
]


@pytest.mark.parametrize(("text", "old", "new", "field", "value"), OLD_KEYS, ids=[c[1] for c in OLD_KEYS])
def test_old_keys_still_work_with_a_note(tmp_path: Path, text: str, old: str, new: str, field: str, value: Any):
    path = write(tmp_path, "old.yaml", text)
    with pytest.warns(FutureWarning, match=f"old.yaml:1: '{old}' is the old name of '{new}'"):
        config = PanelConfig.load(path)
    assert getattr(config, field) == value


def test_every_old_key_is_a_field_name_that_run_json_records():
    """The old names are PanelConfig's field names (run.json's panel.params keys), each renamed to a current key."""
    assert all(new in PANEL_KEYS for new in PANEL_RENAMED.values())
    assert {flag_key(field) for field in PanelConfig.model_fields} <= set(PANEL_KEYS) | set(PANEL_RENAMED)
    assert set(PANEL_KEYS.values()) == set(PanelConfig.model_fields)


# (file name, text, fragments the one error message must hold)
ERROR_CASES = [
    ("typo.yaml", "judge: rules\nmax_cots: 3\n",
     ["typo.yaml:2", "unknown key 'max_cots'", "did you mean 'max-cost'?", "valid keys", "max-cost, max-input-tokens"]),
    ("oldtypo.yaml", "max_cost_uds: 3\n", ["oldtypo.yaml:1", "did you mean 'max-cost'?"]),
    ("nothing.yaml", "colour: blue\n", ["unknown key 'colour'", "valid keys"]),
    ("twice.toml", 'max-cost = 2\nmax_cost_usd = 3\n', ["twice.toml:2", "'max_cost_usd' sets 'max-cost' a second time"]),
    ("type.yaml", "passes: abc\n", ["type.yaml:1: passes:", "valid integer", "(got 'abc')"]),
    ("range.json", '{"judge": "rules", "max-cost": -1}', ["range.json:1: max-cost:", "greater than or equal to 0"]),
    ("temp.yaml", "temperature: hot\n", ["temp.yaml:1: temperature: temperature must be a number >= 0 or 'none'"]),
    ("syntax.yaml", "judge: [rules\n", ["syntax.yaml:2", "not valid YAML"]),
    ("syntax.toml", "judge = [\n", ["syntax.toml", "not valid TOML", "line"]),
    ("syntax.json", '{"judge": \n', ["syntax.json:2", "not valid JSON"]),
    ("list.yaml", "- judge\n", ["list.yaml", "a mapping"]),
    ("key.yaml", "params: {api_key: sk-x}\n", ["key.yaml:1: params", "only from the environment"]),
]


@pytest.mark.parametrize(("name", "text", "fragments"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_name_the_file_line_and_key(tmp_path: Path, name: str, text: str, fragments: list[str]):
    with pytest.raises(ConfigError) as caught:
        PanelConfig.load(write(tmp_path, name, text))
    message = str(caught.value)
    assert "validation error" not in message and "pydantic" not in message  # our words, not pydantic's report
    for fragment in fragments:
        assert fragment in message, message


def test_a_missing_file_is_named(tmp_path: Path):
    with pytest.raises(ConfigError, match="nope.yaml: cannot read"):
        PanelConfig.load(tmp_path / "nope.yaml")


def _options(command: str, skip: set[str]) -> set[str]:
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return {param.opts[0].lstrip("-") for param in click_command.params
            if getattr(param, "param_type_name", None) == "option" and param.opts[0].lstrip("-") not in skip}


def test_a_score_config_file_takes_every_option_of_judge_score():
    """The file's keys are the command's flags: all of them except those naming this invocation's files (and
    --dry-run and --reset-store, which say what this invocation does, not how runs are made, and --limit, --sample
    and --seed, which choose this run's trajectories)."""
    assert _options("score", {"out", "config", "json", "help", "dry-run", "reset-store", "limit", "sample", "seed"}) == set(PANEL_KEYS) & _options("score", set()) | set(SCORE_FILE_KEYS)
    assert set(SCORE_FILE_KEYS.values()) == set(ScoreFileOptions.model_fields)


def test_a_cluster_config_file_takes_the_flags_and_the_fitted_settings():
    assert _options("cluster", {"out", "config", "json", "help"}) <= set(CLUSTER_KEYS)
    assert set(CLUSTER_KEYS.values()) == set(ClusterConfig.model_fields)


def test_score_config_splits_panel_and_other_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = write(tmp_path, "score.toml", 'judge = "rules"\nembedder = "lexical"\nno_preflight = true\nmax_cost_usd = 1\n')
    panel, other = load_config(path)
    assert panel.judges == ["rules"] and panel.max_cost_usd == 1
    assert other.embedder == "lexical" and other.no_preflight is True and other.strict is False
    assert "'max_cost_usd' is the old name of 'max-cost'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="strict: Input should be a valid boolean"):
        load_config(write(tmp_path, "bad.yaml", "strict: maybe\n"))


def _budget_cap(run: Path) -> Any:
    return json.loads((run / "run.json").read_text())["budget"]["max_cost_usd"]


# (file text, extra flags, expected recorded cap, expected embedder in run.json)
PRECEDENCE = [
    ("max-cost: 5\nembedder: lexical\n", [], 5.0, "lexical"),
    ("max_cost: 5\nembedder: lexical\n", ["--max-cost", "7"], 7.0, "lexical"),  # the flag wins
    ("max_cost_usd: 5\n", ["--embedder", "lexical"], 5.0, "lexical"),  # an old key, and a flag the file lacks
]


@pytest.mark.parametrize(("text", "flags", "cap", "embedder"), PRECEDENCE)
def test_judge_score_reads_the_file_and_flags_win(tmp_path: Path, text: str, flags: list[str], cap: float,
                                                   embedder: str):
    config = write(tmp_path, "panel.yaml", text)
    run = tmp_path / "run"
    result = runner.invoke(app, ["score", str(EXAMPLES / "anthropic_runs.jsonl"), "--out", str(run),
                                 "--config", str(config), *flags])
    assert result.exit_code == 0, result.output
    assert _budget_cap(run) == cap
    assert json.loads((run / "run.json").read_text())["cluster"]["embedder"] == embedder


def test_judge_score_stops_on_a_bad_key_before_reading_input(tmp_path: Path):
    config = write(tmp_path, "panel.yaml", "judge: rules\nmax_cots: 3\n")
    result = runner.invoke(app, ["score", str(EXAMPLES), "--out", str(tmp_path / "run"), "--config", str(config)])
    assert result.exit_code == 2
    assert "unknown key 'max_cots'" in result.output and "max-cost" in result.output
    assert not (tmp_path / "run").exists()


def test_cluster_config_in_yaml_with_a_flag_override(tmp_path: Path):
    rows = Path(__file__).parent / "fixtures" / "cluster" / "multilingual_defects.jsonl"
    config = write(tmp_path, "cluster.yaml", "embedder: lexical\nthreshold: 99\nturn_window: 1\n")
    strict = runner.invoke(app, ["cluster", str(rows), "--out", str(tmp_path / "a.jsonl"), "--config", str(config)])
    loose = runner.invoke(app, ["cluster", str(rows), "--out", str(tmp_path / "b.jsonl"), "--config", str(config),
                                "--threshold", "-99", "--json"])
    assert strict.exit_code == 0 and loose.exit_code == 0, strict.output + loose.output
    assert json.loads(loose.stdout)["config"]["threshold"] == -99  # the flag won
    # A threshold no link reaches leaves every row alone; one every link reaches merges across passes.
    assert "36 issue rows -> 36 clusters" in strict.output and json.loads(loose.stdout)["clusters"] < 36
    bad = write(tmp_path, "bad.yaml", "embeder: lexical\n")
    result = runner.invoke(app, ["cluster", str(rows), "--out", str(tmp_path / "c.jsonl"), "--config", str(bad)])
    assert result.exit_code == 2 and "did you mean 'embedder'?" in result.output


def test_read_option_file_maps_keys_to_destinations(tmp_path: Path):
    path = write(tmp_path, "x.yaml", "Max_Cost: 1\n")
    file = read_option_file(path, {"max-cost": "cap"})
    assert file.values == {"cap": 1} and file.spelled == {"cap": "Max_Cost"} and file.lines == {"cap": 1}
