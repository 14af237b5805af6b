"""The settings a ``judge score`` config file may hold besides the panel's: read when the command runs, so that
``judge --help`` does not import pydantic (issue 27)."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import BaseModel, ConfigDict

from judge.panel import PanelConfig

# The options of `judge score` that a config file may hold besides the panel's (judge.panel.PANEL_KEYS), under
# the flags' names; tests/test_cli_config.py checks that together they are every option but --out and --config.
SCORE_FILE_KEYS = {"format": "format", "rubric": "rubric", "embedder": "embedder", "strict": "strict",
                   "no-preflight": "no_preflight", "engine": "engine", "address": "address"}


class ScoreFileOptions(BaseModel):
    """The non-panel options a ``judge score`` config file set (None / False: not set)."""

    model_config = ConfigDict(extra="forbid")

    format: str | None = None
    rubric: Path | None = None
    embedder: str | None = None
    strict: bool = False
    no_preflight: bool = False
    engine: str | None = None
    address: str | None = None



def load_config(path: Path) -> tuple[PanelConfig, ScoreFileOptions]:
    """The panel settings and the other options of a ``judge score`` config file; notes about old key names go
    to stderr. Raises :class:`judge.config.ConfigError` (a ValueError) naming the file, line and key."""
    from judge.config import build_checked
    from judge.panel import read_panel_file

    file = read_panel_file(path, SCORE_FILE_KEYS)
    for note in file.notes:
        typer.echo(f"note: {note}", err=True)
    options = build_checked(ScoreFileOptions.model_validate, file.subset(SCORE_FILE_KEYS.values()))
    return PanelConfig.from_file(file), options
