"""``kill -9`` of ``logscope ingest --jobs 2`` at several points of its work, then a re-ingest: the
store is byte for byte a clean ingest's (the same runs, the same events), readable at every moment,
and no worker of the killed ingest lives on (orphaned workers went on writing their queued runs into
the staging area behind the next ingest's back, and never ended: ``logscope.pools.die_with_parent``).

The kill points are states of the store a watcher sees (workers started, a run staged, a partition
published, the runs table written), each plus a random delay (seeded: the seed is in the failure)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from logscope.store import ingest, layout, open_store
from tests.conftest import ROOT
from tests.store.helpers import log_set, tree_digest

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
SEED = int(os.environ.get("LOGSCOPE_KILL_SEED", "0")) or random.SystemRandom().randrange(1, 1 << 30)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except OSError:
        return []


def _live(pids: list[int]) -> list[int]:
    """Which of ``pids`` are still running (a zombie waiting to be reaped has ended)."""
    out = []
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            out.append(p)
    return out


def _staged(store: Path) -> bool:
    return any((store / layout.STAGING_DIR).glob(f"*/*/{layout.PART_FILE}"))


POINTS: dict[str, Callable[[Path, int], bool]] = {
    "workers started": lambda store, pid: len(_children(pid)) >= 2,
    "a run staged": lambda store, pid: _staged(store),
    "a partition published": lambda store, pid: bool(layout.partitions(store)),
    "runs table written": lambda store, pid: (store / layout.RUNS_FILE).exists(),
}


# ``logscope ingest`` whose runs table is rewritten after every finished run (``RUNS_FLUSH_S`` = 0), not
# every 2 s, and which pauses 1 s after each write: on an idle machine a small ingest otherwise writes it at
# its end only, or ends within the kill's random delay (up to 0.25 s) after its first write
FLUSH_EACH_RUN = [
    sys.executable,
    "-c",
    "import importlib, sys, time\n"
    # (the module, not the package's ``ingest`` function of the same name: ``import ... as`` gives that)
    "i = importlib.import_module('logscope.store.ingest'); i.RUNS_FLUSH_S = 0.0\n"
    "write = i.layout.write_runs\n"
    "def slow(*a, **k):\n    write(*a, **k)\n    time.sleep(1.0)\n"
    "i.layout.write_runs = slow\n"
    "from logscope.cli import main; sys.argv[0] = 'logscope'; main()",
]


def _kill_at(logs: Path, store: Path, point: str, delay: float) -> tuple[bool, list[int]]:
    """Start ``ingest --jobs 2``, SIGKILL it ``delay`` s after ``point`` is seen. (killed?, its workers)"""
    exe = FLUSH_EACH_RUN if point == "runs table written" else [sys.executable, "-m", "logscope"]
    proc = subprocess.Popen(
        [*exe, "ingest", str(logs), "--out", str(store), "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=ENV,
        start_new_session=True,
    )
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 180
        while proc.poll() is None and time.monotonic() < deadline and not POINTS[point](store, proc.pid):
            seen.update(_children(proc.pid))
            time.sleep(0.002)
        end = time.monotonic() + delay
        while proc.poll() is None and time.monotonic() < end:
            seen.update(_children(proc.pid))
            time.sleep(0.002)
        seen.update(_children(proc.pid))
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
        proc.wait(60)
        return killed, sorted(seen)
    finally:
        if proc.poll() is None:  # pragma: no cover - only when the test itself failed above
            proc.kill()


def _readable(store: Path) -> None:
    """What a reader sees now: whole Parquet files, and every listed run's events readable."""
    for f in layout.partitions(store).values():
        pl.read_parquet(f)
    if (store / layout.RUNS_FILE).exists():
        s = open_store(store)
        for kind in s.kinds():
            s[kind].collect()


@pytest.fixture(scope="module")
def logs_and_clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[str]]:
    base = tmp_path_factory.mktemp("kill")
    logs = log_set(base / "logs", 6)  # real vLLM and SGLang logs of 20-90 KB
    clean = base / "clean"
    summary = ingest([logs], clean, jobs=1)
    assert len(summary.runs) == 6 and not summary.failed
    return logs, tree_digest(clean), summary.runs


@pytest.mark.parametrize("point", list(POINTS))
def test_kill_9_then_reingest_is_a_clean_ingest(
    point: str, logs_and_clean: tuple[Path, str, list[str]], tmp_path: Path
) -> None:
    logs, clean, runs = logs_and_clean
    rng = random.Random(f"{SEED}-{point}")
    store = tmp_path / "store"
    killed, workers = _kill_at(logs, store, point, rng.uniform(0.0, 0.25))
    if not killed:  # on a fast machine the ingest may end within the random delay: kill at the point itself
        shutil.rmtree(store, ignore_errors=True)
        killed, workers = _kill_at(logs, store, point, 0.0)
    why = f"kill point {point!r}, LOGSCOPE_KILL_SEED={SEED}"
    assert killed, f"the ingest ended before it was killed ({why})"
    assert len(workers) >= 2, why
    deadline = time.monotonic() + 10
    while _live(workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _live(workers), f"workers of the killed ingest still run: {_live(workers)} ({why})"
    _readable(store)
    if point == "a run staged":  # a second kill, of the re-ingest that clears the first one's leftovers
        _kill_at(logs, store, "a run staged", rng.uniform(0.0, 0.25))
        _readable(store)
    done = subprocess.run(
        [sys.executable, "-m", "logscope", "ingest", str(logs), "--out", str(store), "--jobs", "2"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(open_store(store).run_ids()) == sorted(runs), why
    assert tree_digest(store) == clean, why
