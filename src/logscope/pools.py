"""Worker processes that are safe to start from a command line, a script or a notebook.

A fork copies the parent's memory, not its threads: a process that runs polars (whose thread pool
starts at import) or any other thread must not be forked, a child could wait forever on a lock a
parent's thread held. A spawned worker starts a fresh interpreter, safe always but slower to start,
and it imports the parent's main module first, to unpickle what was defined there: an unguarded
script (no ``if __name__ == "__main__"``) would run again in every worker and kill it at start (a
``BrokenProcessPool``). So: fork while this process has a single thread (the command line, before
polars is imported: workers start at once with what is imported), else spawn, hiding the caller's
main module while the workers start (our workers run logscope functions only).

A worker ends with the process that started it: after a ``kill -9`` of ``ingest --jobs 2`` its
workers would otherwise live on (orphans blocked on the task queue forever) and go on writing the
tasks already queued into the store's staging area, behind the back of the next ingest.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
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


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent (the thread that forked it) ends


def die_with_parent(parent: int) -> None:
    """A worker's initializer: be killed when ``parent`` ends (Linux ``PR_SET_PDEATHSIG``; elsewhere a
    thread that polls the parent id once a second). Ends at once when the parent is already gone."""
    armed = False
    if sys.platform == "linux":
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, name="logscope-parent-watch", daemon=True).start()


def process_pool(jobs: int, method: str | None = None) -> ProcessPoolExecutor:
    """A pool of ``jobs`` workers, all started now (see the module's doc). A spawning pool starts a
    worker on a ``submit`` only while none is idle and fewer than ``jobs`` run: once all have started,
    later submits start none, so only these first ones need the main module hidden."""
    import multiprocessing

    method = method or start_method()
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context(method),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
    if method != "fork":
        with without_main():
            for _ in range(jobs * 4):  # a worker that finished its warm-up is reused: submit until all run
                pool.submit(os.getpid)
                if len(getattr(pool, "_processes", None) or ()) >= jobs:
                    break
    return pool
