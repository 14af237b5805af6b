"""Output for people: rich on an interactive terminal, plain text everywhere else (a pipe, a file, CI logs).

A stream is *interactive* when it is a terminal and ``TERM`` is not ``dumb``. Colour also needs ``NO_COLOR``
unset (https://no-color.org). Off a terminal nothing is truncated to fit a width and nothing is redrawn:
a progress bar becomes a plain line per step (:class:`Progress`), a table becomes tab-separated lines (the
commands choose), and long lines are written whole.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

PROGRESS_STEP = 0.1  # off a terminal: one line per tenth of the work ...
PROGRESS_EVERY_S = 60.0  # ... or per minute, whichever comes first, and one at the end;
PROGRESS_GAP_S = 2.0  # but lines at least this far apart (a batch done in seconds prints its start and end)


def interactive(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default stdout) is a terminal that can redraw: a TTY, and ``TERM`` is not dumb."""
    stream = stream if stream is not None else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
    return tty and os.environ.get("TERM", "") not in ("dumb", "unknown")


def colour(stream: TextIO | None = None) -> bool:
    """Whether colour may be written to ``stream``: interactive, and ``NO_COLOR`` unset or empty."""
    return interactive(stream) and not os.environ.get("NO_COLOR")


def clip(text: str | None, limit: int) -> str:
    """``text`` cut to ``limit`` characters (0: no limit), saying how much was left out."""
    text = text or ""
    if limit and len(text) > limit:
        return text[:limit] + f" ... [{len(text) - limit} more chars]"
    return text


def shown(text: object, *, identifier: bool = False) -> str:
    """Data for a rich console: control and bidi characters as visible escapes (:func:`judge.visible.visible`),
    then rich markup escaped, so a trajectory's text can neither style nor reorder what is printed."""
    from rich.markup import escape

    from judge.visible import visible

    return escape(visible(str(text), identifier=identifier))


def console(*, stderr: bool = False) -> Any:
    """A rich Console for stdout (or stderr): colour only where :func:`colour` allows it; off a terminal, lines
    are written whole instead of wrapped to a guessed width."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    plain = not interactive(stream)
    # On a terminal as this module sees it (TERM=dumb is not one) rich is told so; elsewhere it decides (it honours
    # FORCE_COLOR).
    return Console(stderr=stderr, force_terminal=None if plain else True, no_color=not colour(stream),
                   soft_wrap=plain, highlight=False, emoji=False)


class Progress:
    """Progress of ``total`` steps on stderr, ``done`` of them already done (cached); ``total`` None: a count
    without a total (the steps of a stream whose length is not known in advance), shown at the start, every
    minute and at the end.

    On an interactive stderr: a live bar (label, bar, done/total, elapsed, then ``stats``, the column that is cut
    when the terminal is narrow). Otherwise: a plain line ``label: done/total (pct%) elapsed · stats`` at the
    start, at every tenth of the work or every minute (never two within ``gap_s`` seconds), and at the end.
    Disabled: nothing.
    """

    def __init__(self, label: str, total: int | None, done: int = 0, *, enabled: bool = True, stream: TextIO | None = None,
                 live: bool | None = None, stats: str = "", gap_s: float = PROGRESS_GAP_S):
        self.label = label
        self.total = total
        self.done = done
        self.enabled = enabled and (total is None or total > 0)
        self.stream = stream
        self.live = live
        self.stats = stats
        self.gap_s = gap_s
        self.started = time.monotonic()
        self._bar: Any = None
        self._task: Any = None
        self._last_step = -1
        self._printed: int | None = None  # ``done`` at the last plain line
        self._last_line_at = 0.0

    def __enter__(self) -> Progress:
        if not self.enabled:
            return self
        stream = self.stream if self.stream is not None else sys.stderr
        live = self.live if self.live is not None else interactive(stream)
        if live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar
            from rich.table import Column

            # The counts keep their width; the free text takes what is left and is the one cut when narrow.
            def fixed(width: int) -> Column:
                return Column(no_wrap=True, min_width=width)

            self._bar = Bar(TextColumn(self.label, table_column=fixed(len(self.label))), BarColumn(bar_width=24),
                            MofNCompleteColumn(table_column=fixed(2 * len(str(self.total or 0)) + 1)),
                            TimeElapsedColumn(table_column=fixed(7)),
                            TextColumn("{task.fields[stats]}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
                            console=Console(file=stream, no_color=not colour(stream)), transient=False, expand=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total, completed=self.done, stats=self.stats)
        else:
            self._line(stream)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None
        elif self.enabled and self._printed != self.done:  # the end, or where an interruption left it
            self._line(self.stream if self.stream is not None else sys.stderr)

    def advance(self, steps: int = 1, stats: str | None = None) -> None:
        """``steps`` more done; ``stats`` replaces the free text shown after the counts."""
        self.done += steps
        if stats is not None:
            self.stats = stats
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=steps, stats=self.stats)
            return
        since = time.monotonic() - self._last_line_at
        if (self._step() != self._last_step and since >= self.gap_s) or since >= PROGRESS_EVERY_S:
            self._line(self.stream if self.stream is not None else sys.stderr)

    def _step(self) -> int:
        return int(min(self.done, self.total) / self.total / PROGRESS_STEP + 1e-9) if self.total else 0

    def _line(self, stream: TextIO) -> None:
        self._last_step = self._step()
        self._printed = self.done
        self._last_line_at = time.monotonic()
        elapsed = int(time.monotonic() - self.started)
        clock = f"{elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}"
        if self.total is None:
            text = f"{self.label}: {self.done} {clock}"
        else:
            percent = 100 * self.done // self.total if self.total else 100
            text = f"{self.label}: {self.done}/{self.total} ({percent}%) {clock}"
        print(text + (f" · {self.stats}" if self.stats else ""), file=stream, flush=True)
