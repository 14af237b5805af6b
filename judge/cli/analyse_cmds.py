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
