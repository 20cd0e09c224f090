"""A progress bar on stderr while a large input is read: only on a terminal, never in a pipe or a file."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

LARGE_BYTES = 64 * 2**20  # below this, reading is quick enough to need no bar


def _total(paths: Sequence[str]) -> int | None:
    """Bytes to read, or None when unknown (stdin, compressed input)."""
    total = 0
    for p in paths:
        if p == "-":
            return None
        try:
            if os.path.isdir(p):
                files = [os.path.join(p, f) for f in os.listdir(p) if ".log" in f]
            else:
                files = [p]
            for f in files:
                if f.endswith(".gz"):
                    return None
                total += os.path.getsize(f)
        except OSError:
            return None
    return total


def _size_on_disk(paths: Sequence[str]) -> int:
    out = 0
    for p in paths:
        try:
            if os.path.isdir(p):
                out += sum(os.path.getsize(os.path.join(p, f)) for f in os.listdir(p) if ".log" in f)
            elif p != "-":
                out += os.path.getsize(p)
        except OSError:
            pass
    return out


@contextmanager
def reading_progress(
    paths: Sequence[str],
    stats: Any,
    stream: TextIO | None = None,
    min_bytes: int = LARGE_BYTES,
    interval_s: float = 0.2,
) -> Iterator[None]:
    """Show how many bytes of ``paths`` were read (``stats.bytes``) while the body runs.

    Shown only when ``stream`` (stderr by default) is a terminal and the input is at least
    ``min_bytes`` on disk; the bar disappears when done.
    """
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()) or _size_on_disk(paths) < min_bytes:
        yield
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    total = _total(paths)
    console = Console(file=stream, force_terminal=True)
    columns = [
        TextColumn("reading"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("reading", total=total)
        stop = threading.Event()

        def poll() -> None:
            while not stop.wait(interval_s):
                progress.update(task, completed=stats.bytes)

        thread = threading.Thread(target=poll, name="logscope-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            progress.update(task, completed=stats.bytes)


class RunsProgress:
    """A bar of finished runs on stderr for ``logscope ingest`` (only on a terminal): the ingest's
    ``progress`` callback. Drawn when a run finishes, by the caller's thread: no refresh thread is
    started, so the ingest can still fork its workers (``store.ingest.ProcessExecutor``)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self._progress: Any = None
        self._task: Any = None
        self.failed = 0

    def __enter__(self) -> RunsProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, done: int, total: int, res: Any) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        if self._progress is None:
            console = Console(file=self.stream, force_terminal=True)
            self._progress = Progress(
                TextColumn("ingest"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[last]}"),
                console=console,
                auto_refresh=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("ingest", total=total, last="")
        self.failed += res.error is not None
        last = f"{res.run} ({'failed' if res.error else f'{res.seconds:.1f} s'})"
        if self.failed:
            last += f", {self.failed} failed"
        self._progress.update(self._task, completed=done, last=last)
        self._progress.refresh()
