"""The garbage collector's pace while logscope builds many objects that all stay alive.

Parsing a run keeps every event (an event, its dict, a list or dict field: a few objects a line);
CPython's collector, tuned for programs that make garbage, walks that growing heap over and over.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# Collections of the youngest generation: once per this many new container objects (CPython's
# default: 700) while a run is loaded or analyzed, or a range of a file is parsed in a worker
# (``parsers.chunks``). At the default the collector ran ~1,400 times on a 100k-line SGLang log and
# walked the growing heap of events each time it reached the older generations: ~20% of ``analyze``
# (measured with gc.callbacks; ~2% at this value, the peak memory the same), and ~15% of a worker's
# range (CPU time of one 8 MB range: 2.62 s -> 2.16 s). Only garbage in reference cycles waits for a
# collection (rare here: a caught exception's traceback), and at most this many allocations.
THRESHOLD = 100_000


@contextlib.contextmanager
def fewer_collections(threshold: int = THRESHOLD) -> Iterator[None]:
    """Raise the collector's first threshold (``THRESHOLD``) for the block, then put back
    what it was. A threshold set higher (or to 0: collection off) is left as it is."""
    old = gc.get_threshold()
    if old[0] == 0 or old[0] >= threshold:
        yield
        return
    gc.set_threshold(threshold, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
