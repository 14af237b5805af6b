"""Commands ``judge cluster``, ``judge calibrate`` and ``judge rescore``: thin wrappers over judge.cluster and
judge.pipeline.score_run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from judge.cli.app import ExitCode, app, outcome_code


def _config(embedder: str | None, threshold: float | None, config_file: Path | None) -> Any:
    from judge.cluster import ClusterConfig

    options: dict[str, Any] = {}
    if config_file is not None:
        try:
            options = json.loads(config_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise typer.BadParameter(f"{config_file}: {error}") from error
        options = options.get("cluster", options)  # a run.json or a `judge calibrate --out` file
    if embedder is not None:
        options["embedder"] = embedder
    if threshold is not None:
        options["threshold"] = threshold
    settings = ClusterConfig.from_options(options)
    from judge.embed import check_embedder

    try:
        check_embedder(settings.embedder)
    except (ValueError, ImportError) as error:
        raise typer.BadParameter(str(error)) from error
    return settings


def _read_rows(path: Path) -> list[dict[str, Any]]:
    from judge.cluster import read_issue_rows

    if not path.is_file():
        raise typer.BadParameter(f"no such file: {path}")
    rows, errors = read_issue_rows(path)
    for error in errors:
        typer.echo(f"skipped {error}", err=True)
    return rows


@app.command("cluster")
def cluster_command(
    file: Path = typer.Argument(..., help="Issue rows, one JSON object a line (DESIGN.md 'Clustering input')."),
    out: Path = typer.Option(..., "--out", help="Where to write the rows with `cluster` and `votes`."),
    embedder: str | None = typer.Option(None, help="use-m3 (default), minilm, lexical or st:NAME_OR_PATH."),
    threshold: float | None = typer.Option(None, help="Merge while the mean link score is >= this."),
    config: Path | None = typer.Option(None, "--config", help="A cluster config JSON (e.g. from `judge calibrate --out`)."),
) -> None:
    """Cluster issue rows from any source with the pipeline's clusterer; bad rows are reported and skipped."""
    from judge.cluster import cluster_rows
    from judge.embed import make_embedder

    settings = _config(embedder, threshold, config)
    rows = _read_rows(file)
    result = cluster_rows(rows, settings, make_embedder(settings.embedder))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for row in result:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    clusters = {(r["trajectory_id"], r["cluster"]) for r in result}
    typer.echo(f"{len(result)} issue rows -> {len(clusters)} clusters in {len({r['trajectory_id'] for r in result})} "
               f"trajectories; wrote {out}")


@app.command("calibrate")
def calibrate_command(
    labels: Path = typer.Argument(..., help="`judge cluster` rows plus `label` (or `truth`): the true cluster id."),
    out: Path | None = typer.Option(None, "--out", help="Write the fitted cluster config (JSON) here."),
    embedder: str | None = typer.Option(None, help="Embedder to fit the weights for (default use-m3)."),
    panel_size: int | None = typer.Option(None, help="Planned passes for majority recall (default: passes in the file)."),
) -> None:
    """Fit the link weights and threshold on labelled rows; print pairwise P/R/F1 and ARI before and after."""
    from judge.cluster import calibrate
    from judge.embed import make_embedder

    settings = _config(embedder, None, None)
    rows = _read_rows(labels)
    try:
        fit = calibrate(rows, settings, make_embedder(settings.embedder), panel_size=panel_size)
    except ValueError as error:
        typer.echo(f"error: {labels}: {error}", err=True)
        raise typer.Exit(ExitCode.ERROR) from error
    typer.echo(f"{len(rows)} rows, {fit.pairs} cross-pass pairs ({fit.positives} same defect), embedder {settings.embedder}")
    typer.echo(f"{'':8} {'P':>6} {'R':>6} {'F1':>6} {'ARI':>6} {'maj.rec':>7} {'x-merge':>7}")
    for name, q in (("default", fit.before), ("fitted", fit.after)):
        typer.echo(f"{name:8} {q.precision:6.3f} {q.recall:6.3f} {q.f1:6.3f} {q.ari:6.3f} {q.majority_recall:7.3f} {q.cross_merge_rate:7.3f}")
    typer.echo("weights: " + ", ".join(f"{k}={v:+.3f}" for k, v in fit.config.weights.items())
               + f"; bias={fit.config.bias:+.3f}; threshold={fit.config.threshold:+.2f}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(fit.config.describe(), indent=2) + "\n", encoding="utf-8")
        typer.echo(f"wrote {out} (use: judge cluster --config {out}, or as run.json 'cluster')")


@app.command("rescore")
def rescore_command(
    run: Path = typer.Argument(..., help="A run directory with trajectories.jsonl and verdicts.jsonl."),
    rubric: Path | None = typer.Option(None, "--rubric", help="A rubric YAML (default rubrics/default-v2.yaml)."),
) -> None:
    """Recompute clusters and scores from the stored verdicts, then repairs, summary and reports; no judge call.

    Exits like `judge score` on the stored verdicts: 2 when some passes are unscored, 3 when none is scored.
    """
    from judge import rundir
    from judge.pipeline import finish_run, score_run
    from judge.rundir import RunDir
    from judge.runlock import run_lock

    for name in (rundir.TRAJECTORIES, rundir.VERDICTS):
        if not RunDir(run).has(name):
            typer.echo(f"error: {run} has no {name}", err=True)
            raise typer.Exit(ExitCode.ERROR)
    try:
        with run_lock(run, "judge rescore"):
            scores = score_run(run, rubric_path=rubric)
            written = finish_run(run) or {}
    except (FileNotFoundError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(ExitCode.ERROR) from error
    scored = [s for s in scores if s.score is not None]
    values = [s.score for s in scored if s.score is not None]
    histogram = {value: values.count(value) for value in sorted(set(values))}
    typer.echo(f"{len(scores)} trajectories: {len(scored)} scored {histogram}, {len(scores) - len(scored)} unscored, "
               f"{sum(s.release for s in scores)} released; wrote {run / rundir.SCORES}")
    for name, path in written.items():
        typer.echo(f"  {name}: {path}")
    code = outcome_code((v.status, v.reason) for v in RunDir(run).verdicts())
    if code:
        raise typer.Exit(code)
