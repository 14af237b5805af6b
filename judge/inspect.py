"""trajudge as an inspect_ai scorer: judge a sample's message history with a trajudge panel.

Needs the ``inspect`` extra (``pip install 'trajudge[inspect]'``)::

    from inspect_ai import Task
    from judge.inspect import trajudge

    Task(dataset=..., solver=[use_tools(...), generate()], scorer=trajudge())              # the rules judge
    Task(..., scorer=trajudge(judges=["openai:gpt-4o"], run_dir="runs/inspect"))           # 3 LLM passes

The sample (its messages with tool calls and results, the tools offered, input, target, metadata) is read
by trajudge's inspect importer, exactly as ``judge import`` reads the same sample from the eval's log, and
judged by :func:`judge.api.score_async` (``judge score``'s code path, without the report): same panel,
clustering, rubric and release gate. The Score:

- ``value``: the 2-5 score; a trajectory the panel could not score is ``Score.unscored`` (NaN, which
  inspect's metrics and reducers skip), never a 0, with the reason in ``explanation`` and ``reason``;
- ``metadata``: ``release``, the majority ``issues`` (and ``environment`` ledger), ``failed_checks``, the
  panel, how many passes were valid or unscored and why, the cost, and ``trajudge_version``, the marker
  by which trajudge's inspect importer knows this score is a trajudge judgment and not the task's result.

Registered with inspect as ``judge/trajudge`` through the ``inspect_ai`` entry point, so ``inspect score
LOG --scorer judge/trajudge -S judges=rules --action overwrite`` finds it; its metrics are the mean score and
its stderr.
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:
    from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
    from inspect_ai.solver import TaskState
    from inspect_ai.util import registry_info
except ImportError as error:  # the optional extra is not installed
    raise ImportError("judge.inspect needs inspect_ai: pip install 'trajudge[inspect]'") from error

import judge
from judge.api import NothingImported, Run, panel_settings, score_async
from judge.model import Trajectory

# inspect's ScoreReason for a trajectory with no score: the panel failed (a grader failure), or the sample
# had nothing to judge (the model never answered).
_NO_RESPONSE_REASONS = frozenset({"no_assistant_turn"})
MARKER = "trajudge_version"  # the metadata key that marks a trajudge Score (read by judge.importers.inspect_log)


def _trajudge(
    judges: Sequence[str] | str | None = None,
    passes: int | None = None,
    config: str | None = None,
    rubric: str | None = None,
    embedder: str | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    max_cost: float | None = None,
    temperature: float | str | None = None,
    run_dir: str | None = None,
    task: str | None = None,
) -> Scorer:
    """A scorer that judges the sample's message history with a trajudge panel.

    The arguments are ``judge score``'s flags (``judges`` is ``--judge``, repeatable; default: the offline
    rules judge). ``run_dir``: keep each sample's run under ``run_dir/<trajectory id>`` (verdicts, clusters,
    scores, the call store - so scoring the same sample again pays nothing); by default each sample is judged
    in a temporary directory that is removed. ``max_cost`` is the cap of one sample's run. ``task``: the task
    name written in each trajectory's id and run folder (``inspect-TASK-SAMPLE-eEPOCH``; default ``task``):
    inspect's public API does not tell a scorer which task it scores, so name it when two tasks share a
    ``run_dir``. Bad settings raise here, before the eval starts.
    """
    specs = [judges] if isinstance(judges, str) else list(judges or [])
    score_sample = functools.partial(
        score_async, judges=specs, passes=passes, config=config, base_url=base_url, concurrency=concurrency,
        timeout=timeout, max_cost=max_cost, temperature=temperature, rubric=rubric, embedder=embedder)
    panel_settings(config, judges=specs, passes=passes, base_url=base_url, concurrency=concurrency, timeout_s=timeout,
              max_cost_usd=max_cost, temperature=temperature)  # raises SetupError now rather than per sample

    async def score(state: TaskState, target: Target) -> Score:
        record = sample_record(state, target, task=task or "task")
        with tempfile.TemporaryDirectory(prefix="trajudge-") as scratch:
            source = Path(scratch) / "sample.json"
            source.write_text(json.dumps(record, ensure_ascii=False, default=str), encoding="utf-8")
            out = Path(scratch) / "run" if run_dir is None else Path(run_dir) / _dir_name(record)
            try:
                run = await score_sample([source], out, format="inspect", preflight=False, report=False)
            except NothingImported:
                reject = next(Run(out).rejects(missing_ok=True), None)
                why = reject.reason if reject is not None else "the sample could not be read"
                return Score.unscored(reason="scoring_failed", explanation=f"trajudge could not read the sample: {why}",
                                      metadata={MARKER: judge.__version__})
            return to_score(run, None if run_dir is None else out)

    return score


def sample_record(state: TaskState, target: Target, task: str = "task") -> dict[str, Any]:
    """The sample as inspect writes it in an eval log (``{eval: {...}, samples: [...]}``), for the importer.

    The tools offered are put where the log has them, in a model event.
    """
    return {
        "eval": {"task": task, "model": str(state.model)},
        "samples": [{
            "id": state.sample_id,
            "epoch": state.epoch,
            "input": state.input if isinstance(state.input, str) else [m.model_dump(mode="json") for m in state.input],
            "target": target.target,
            "metadata": state.metadata,
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in state.messages],
            "events": [{"event": "model", "tools": _tool_infos(state)}],
        }],
    }


def to_score(run: Run, kept: Path | None = None) -> Score:
    """The inspect Score of a one-trajectory run that :func:`judge.api.score_async` returned."""
    assert run.invocation is not None and run.invocation.panel is not None
    row = run.invocation.scores[0]
    panel = run.invocation.panel
    verdicts = [v for v in panel.verdicts if v.trajectory_id == row.trajectory_id]
    unscored = Counter(v.reason or "unknown" for v in verdicts if v.status != "ok")
    metadata: dict[str, Any] = {
        MARKER: judge.__version__,
        "trajectory_id": row.trajectory_id,
        "release": row.release,
        "failed_checks": row.failed_checks,
        "issues": [issue.model_dump() for issue in row.issues],
        "environment": [issue.model_dump() for issue in row.environment],
        "efficiency_votes": row.efficiency_votes,
        "panel": [plan.pass_key for plan in panel.plans],
        "panel_size": row.panel_size,
        "valid_passes": row.valid_passes,
        "unscored_passes": dict(unscored),
        "rubric": row.rubric,
        "cost_usd": panel.cost_this_run_usd,
        "run_dir": str(kept) if kept is not None else None,
    }
    answer = final_answer(next(iter(run.trajectories(missing_ok=True)), None))
    if row.score is None:
        reason = "no_response" if unscored and set(unscored) <= _NO_RESPONSE_REASONS else "grader_failed"
        return Score.unscored(reason=reason, explanation=row.reason, metadata=metadata, answer=answer)
    return Score(value=row.score, answer=answer, explanation=row.reason, metadata=metadata)


def final_answer(trajectory: Trajectory | None) -> str | None:
    """The text of the trajectory's last assistant message that has text (what the judged agent answered), or
    None when it never wrote any."""
    if trajectory is None:
        return None
    return next((m.content for m in reversed(trajectory.messages) if m.role == "assistant" and m.content.strip()), None)


# Registered as ``judge/trajudge``: inspect prefixes a name with its package's when the module is installed
# (site-packages or an editable install it recognises) and not when it is imported from a checkout. Registering
# under the plain name and reading back what inspect made of it tells which, with its public API only.
trajudge = scorer(metrics=[mean(), stderr()], name="trajudge")(_trajudge)
if not registry_info(trajudge).name.startswith("judge/"):
    trajudge = scorer(metrics=[mean(), stderr()], name="judge/trajudge")(_trajudge)


def _tool_infos(state: TaskState) -> list[dict[str, Any]]:
    from inspect_ai.tool import ToolDef

    infos = []
    for tool in state.tools:
        try:
            definition = ToolDef(tool)
        except Exception:  # a tool inspect cannot describe is left out of the schemas shown to the judge
            continue
        infos.append({"name": definition.name, "description": definition.description,
                      "parameters": definition.parameters.model_dump(mode="json", exclude_none=True)})
    return infos


def _dir_name(record: dict[str, Any]) -> str:
    """A folder name for the sample's run: its task, id and epoch, with anything outside [A-Za-z0-9._-] as _."""
    sample = record["samples"][0]
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{record['eval']['task']}-{sample['id']}-e{sample['epoch']}")[:120]


__all__ = ["MARKER", "final_answer", "sample_record", "to_score", "trajudge"]
