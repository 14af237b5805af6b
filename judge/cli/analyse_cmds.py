"""Analysis commands: ``judge export``, ``judge validate``, ``judge compare`` (thin layers over library code)."""

from __future__ import annotations

from pathlib import Path

import typer

from judge.cli.app import app


@app.command("export")
def export_cmd(
    run: Path = typer.Argument(..., help="A scored run directory (trajectories.jsonl + scores.jsonl)."),
    out: Path = typer.Option(..., "--out", help="Directory for train.jsonl, test.jsonl and split.json."),
    test_size: float = typer.Option(0.1, "--test-size", help="Share of trajectories on the test side (split by query)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the query split (same seed, same split)."),
    min_score: int | None = typer.Option(None, "--min-score", help="Export only trajectories scored at least this."),
    include_unreleased: bool = typer.Option(False, "--include-unreleased", help="Also export trajectories the release gate held back."),
    exclude_category: list[str] = typer.Option([], "--exclude-category", help="Skip trajectories with a majority issue of this category (repeatable)."),
    fmt: str = typer.Option("openai", "--format", help="openai (weight 0/1 on assistant messages) or anthropic (mask list)."),
) -> None:
    """Expand released trajectories into per-turn training samples, split train/test by query.

    Example: judge export runs/demo --out exports/demo --test-size 0.1 --seed 0
    """
    from judge.export import ExportOptions, export_run

    try:
        options = ExportOptions(
            test_size=test_size, seed=seed, min_score=min_score, include_unreleased=include_unreleased,
            exclude_categories=tuple(exclude_category), format=fmt,  # type: ignore[arg-type]
        )
        record = export_run(run, out, options)
    except (ValueError, FileNotFoundError) as error:
        raise typer.BadParameter(str(error)) from error
    for side in ("train", "test"):
        counts = record[side]
        typer.echo(f"{side:5}: {counts['trajectories']} trajectories, {counts['queries']} queries, {counts['samples']} samples")
    excluded = record["excluded"]
    if excluded["trajectories"]:
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(excluded["by_reason"].items()))
        typer.echo(f"excluded: {excluded['trajectories']} trajectories ({reasons})")
    typer.echo(f"split disjoint by query: {'yes' if record['disjoint_by_query'] else 'NO'}; wrote {out}/")


@app.command("validate")
def validate_cmd(
    run: Path = typer.Argument(..., help="A scored run directory."),
    labels: Path = typer.Option(..., "--labels", help="Label file or folder (Who&When folder, AgentRx ground truth, MAST json)."),
    kind: str | None = typer.Option(None, "--kind", help="who-and-when | agentrx | mast (detected from the file when omitted)."),
    k: int = typer.Option(1, "--k", min=0, help="Tolerance in turns for the 'within +-k' figures."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the full comparison (per trajectory) as JSON."),
) -> None:
    """Compare a run's majority issues with human failure labels; print our figures beside published ones.

    Example: judge validate runs/ww --labels ../shared/datasets/who_and_when/Hand-Crafted --kind who-and-when
    """
    from judge import rundir
    from judge.validate import LABEL_KINDS, LabelError, format_table, validate_run

    if kind is not None and kind not in LABEL_KINDS:
        raise typer.BadParameter(f"--kind must be one of {', '.join(LABEL_KINDS)}, got {kind!r}")
    try:
        report = validate_run(run, labels, kind, k=k)  # type: ignore[arg-type]
    except (LabelError, FileNotFoundError, ValueError) as error:
        raise typer.BadParameter(str(error)) from error
    typer.echo(format_table(report))
    if json_out is not None:
        rundir.write_json(json_out, report.to_json())
        typer.echo(f"wrote {json_out}")
