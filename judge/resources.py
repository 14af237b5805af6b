"""Locate the versioned data folders (rubrics/, prompts/, reports/) and the documents (docs/) in a checkout or
an installed wheel."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Literal

ResourceKind = Literal["rubrics", "prompts", "reports", "docs"]

_CHECKOUT_ROOT = Path(__file__).resolve().parent.parent


def resource_dir(kind: ResourceKind) -> Path:
    """Return the folder holding ``kind`` data files.

    A source checkout (and an editable install) uses the top-level folder; a wheel ships the same
    files as the package ``judge._<kind>`` (force-included in pyproject.toml).
    """
    checkout = _CHECKOUT_ROOT / kind
    if checkout.is_dir():
        return checkout
    # The data folders are namespace packages (no __init__.py), so take the folder from __path__
    # rather than importlib.resources, which wraps namespace folders in a MultiplexedPath.
    packaged = importlib.import_module(f"judge._{kind}")
    return Path(next(iter(packaged.__path__)))


def resource_path(kind: ResourceKind, name: str) -> Path:
    """Path of one data file; a clear error names what was looked for and where."""
    path = resource_dir(kind) / name
    if not path.exists():
        raise FileNotFoundError(f"no {kind} file named {name!r} in {resource_dir(kind)}")
    return path
