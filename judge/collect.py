"""The cyclic garbage collector during a streaming pass over a batch (one policy for every such pass).

A pass over a batch makes millions of short-lived objects (trajectories, verdicts, views) that reference counting
frees; with the default thresholds the collector still runs thousands of times, and each collection of an older
generation walks every object the process holds (modules, templates, validators): 13-14% of the CPU of
``judge score`` and of the report build at 10k trajectories.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

GC_THRESHOLD = 200_000  # allocations between collections of the youngest generation during a pass (default 700)
_depth = 0  # passes running in this process (the outermost one sets and restores the collector)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run a streaming pass with the cyclic garbage collector mostly out of the way.

    The objects that exist before the pass are frozen (never walked again) and the youngest generation is
    collected less often; memory stays flat (the trajectory-sized garbage is acyclic, and cycles are still
    collected every :data:`GC_THRESHOLD` allocations), and both settings are restored after. Nested passes
    keep the outer one's settings.
    """
    global _depth
    if _depth:  # inside another pass: its settings hold (an inner unfreeze would thaw the outer pass's heap)
        yield
        return
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], GC_THRESHOLD), *threshold[1:])
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        gc.set_threshold(*threshold)
        gc.unfreeze()
