"""trajudge: a judge-and-repair evaluation pipeline for coding-agent trajectories.

The Python API (docs/python-api.md) is loaded on first use, so ``import judge`` stays cheap (the CLI and
every submodule import this package first)::

    import judge
    run = judge.score(["examples/batch"], out="runs/example")   # what `judge score` runs
    run = judge.load_run("runs/example")
    run.scores_df(), run.issues_df(), run.verdicts_df(), run.clusters_df(), run.messages_df()
    judge.load_runs(["runs/a", "runs/b"]).scores_df()            # several runs, with a ``run`` column
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> the module that defines it; imported on first access (PEP 562)
_API = {
    "score": "judge.api",
    "score_async": "judge.api",
    "rescore": "judge.api",
    "load_run": "judge.api",
    "load_runs": "judge.api",
    "Runs": "judge.api",
    "read_trajectories": "judge.api",
    "import_": "judge.api",
    "Run": "judge.api",
    "Invocation": "judge.api",
    "SetupError": "judge.api",
    "NothingImported": "judge.api",
    "PanelConfig": "judge.panel",
    "Trajectory": "judge.model",
}

__all__ = [  # a literal list, so that linters and type checkers see the names (tests check it matches _API)
    "Invocation", "NothingImported", "PanelConfig", "Run", "Runs", "SetupError", "Trajectory", "__version__",
    "import_", "load_run", "load_runs", "read_trajectories", "rescore", "score", "score_async",
]

if TYPE_CHECKING:
    from judge.api import (
        Invocation,
        NothingImported,
        Run,
        Runs,
        SetupError,
        import_,
        load_run,
        load_runs,
        read_trajectories,
        rescore,
        score,
        score_async,
    )
    from judge.model import Trajectory
    from judge.panel import PanelConfig


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'judge' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
