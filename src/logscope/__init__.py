"""logscope: forensics for the logs of LLM inference engines (vLLM, SGLang).

import logscope
run = logscope.load("vllm.log")
run.frame("throughput")
report = run.analyze()
cmp = logscope.compare(run_a, run_b)
store = logscope.open_store("store/")   # many runs (``logscope ingest``), as polars LazyFrames
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from logscope.api import Run, iter_events, load
from logscope.errors import LogscopeError, UnreadableInput
from logscope.events import AnyEvent, Event
from logscope.version import __version__

if TYPE_CHECKING:
    import os

    from logscope.analyses.compare import Comparison
    from logscope.store.open import Store


def compare(run_a: Run, run_b: Run, labels: list[str] | tuple[str, ...] | None = None) -> Comparison:
    """Two runs side by side (``run_a`` is BASE): every report section, the stable-decode degradation
    ratio BASE / OTHER by mean, median and peak, and the configuration differences."""
    from logscope.analyses.compare import compare as _compare

    return _compare(run_a, run_b, labels)


def open_store(path: str | os.PathLike[str]) -> Store:
    """A store made by ``logscope ingest``: ``.runs`` (one row per run) and ``store[kind]`` (every run's
    events of that kind), as polars LazyFrames. Imports polars on first call."""
    from logscope.store.open import open_store as _open_store

    return _open_store(path)


__all__ = [
    "AnyEvent",
    "Event",
    "LogscopeError",
    "Run",
    "UnreadableInput",
    "__version__",
    "compare",
    "iter_events",
    "load",
    "open_store",
]
