"""logscope: forensics for the logs of LLM inference engines (vLLM, SGLang).

    import logscope
    run = logscope.load("vllm.log")
    run.frame("throughput")
    report = run.analyze()
    cmp = logscope.compare(run_a, run_b)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from logscope.api import Run, iter_events, load
from logscope.errors import LogscopeError, UnreadableInput
from logscope.events import AnyEvent, Event

if TYPE_CHECKING:
    from logscope.analyses.compare import Comparison


def compare(run_a: Run, run_b: Run, labels: list[str] | tuple[str, ...] | None = None) -> Comparison:
    """Two runs side by side (``run_a`` is BASE): every report section, the stable-decode degradation
    ratio BASE / OTHER by mean, median and peak, and the configuration differences."""
    from logscope.analyses.compare import compare as _compare

    return _compare(run_a, run_b, labels)


__all__ = ["AnyEvent", "Event", "LogscopeError", "Run", "UnreadableInput", "compare", "iter_events", "load"]
__version__ = "0.1.0"
