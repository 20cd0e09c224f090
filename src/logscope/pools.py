"""Worker processes that are safe to start from a command line, a script or a notebook.

A fork copies the parent's memory, not its threads: a process that runs polars (whose thread pool
starts at import) or any other thread must not be forked, a child could wait forever on a lock a
parent's thread held. A spawned worker starts a fresh interpreter, safe always but slower to start,
and it imports the parent's main module first, to unpickle what was defined there: an unguarded
script (no ``if __name__ == "__main__"``) would run again in every worker and kill it at start (a
``BrokenProcessPool``). So: fork while this process has a single thread (the command line, before
polars is imported: workers start at once with what is imported), else spawn, hiding the caller's
main module while the workers start (our workers run logscope functions only).
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor


def single_threaded() -> bool:
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # not Linux: cannot tell
        return False


def start_method() -> str:
    """``fork`` when it is safe (a single thread, and the platform has it), else ``spawn``."""
    import multiprocessing

    return "fork" if "fork" in multiprocessing.get_all_start_methods() and single_threaded() else "spawn"


@contextlib.contextmanager
def without_main() -> Iterator[None]:
    """While the body runs, ``__main__`` is a module without a file (as in a notebook): a worker spawned
    then does not import the caller's script again."""
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


def process_pool(jobs: int, method: str | None = None) -> ProcessPoolExecutor:
    """A pool of ``jobs`` workers, all started now (see the module's doc). A spawning pool starts a
    worker on a ``submit`` only while none is idle and fewer than ``jobs`` run: once all have started,
    later submits start none, so only these first ones need the main module hidden."""
    import multiprocessing

    method = method or start_method()
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method))
    if method != "fork":
        with without_main():
            for _ in range(jobs * 4):  # a worker that finished its warm-up is reused: submit until all run
                pool.submit(os.getpid)
                if len(getattr(pool, "_processes", None) or ()) >= jobs:
                    break
    return pool
