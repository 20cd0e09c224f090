"""What every analysis shares: the run's data as frames, the result base classes, small statistics.

An analysis is a function ``RunData -> Result | NotApplicable``. It reads polars frames (never raw
lines), states its method in words, and says why not when the log lacks what it needs.
"""

from __future__ import annotations

import heapq
import math
import statistics
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.frames import Frames
from logscope.analyses.settings import Settings, settings_of
from logscope.events import Event

# literals of the text lines analyses read from raw text (SGLang's weight-load start, the clean-stop
# marker, running-request caps in warnings): the sparse reader keeps lines holding one

TEXT_ANCHORS = ("Load weight begin", "[shutdown]", "unning")


class RunLike(Protocol):
    """What the analyses need of a run (``logscope.api.Run`` is one)."""

    files: list[str]
    engine: str | None
    events: list[Event]


class Result(BaseModel):
    """Base of every analysis result: ``method`` says what was averaged over which samples."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(description="what was measured, over which samples or window, and how")


class NotApplicable(BaseModel):
    """The log lacks what an analysis needs; ``reason`` says what is missing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str


class Evidence(BaseModel):
    """A line of the log that backs a number."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    line: int
    text: str = ""


@dataclass
class RunData:
    """One run's events, their frames (built once) and its configuration, as the analyses see it."""

    events: Sequence[Event]
    engine: str | None = None
    files: list[str] = field(default_factory=list)
    memo: dict[str, Any] = field(default_factory=dict, repr=False)  # results shared between analyses
    stats: Any = field(
        default=None, repr=False
    )  # the run's read statistics (``ReadStats``), when it has them

    @classmethod
    def of(cls, run: RunLike | RunData, *, fresh: bool = False) -> RunData:
        """``run`` as the analyses see it: a ``Run``'s own (``Run.run_data``: its frames, series and
        memos, built once, are shared by the report, the rules, the plots and compare), or a new one
        for any other run-like object or with ``fresh``."""
        if isinstance(run, RunData):
            return run
        shared = None if fresh else getattr(run, "run_data", None)
        if callable(shared):
            data = shared()
            if isinstance(data, RunData):
                return data
        return cls(
            events=run.events, engine=run.engine, files=list(run.files), stats=getattr(run, "stats", None)
        )

    @cached_property
    def kind_index(self) -> dict[str, array[int]]:
        """Each kind's run-order indexes (``events[i]`` for ``i`` in ``kind_index[kind]``), in order.

        One pass over the run, shared by the frames and the digest's ``of_kind``: a frame of a kind
        does not scan every event again. Machine integers (8 bytes an event, not a 36-byte int object
        and its pointer): on an event-dense log this index is as long as the run."""
        out: dict[str, array[int]] = {}
        for i, e in enumerate(self.events):
            idx = out.get(e.kind)
            if idx is None:
                idx = out[e.kind] = array("q")
            idx.append(i)
        return out

    @cached_property
    def frames(self) -> Frames:
        return Frames(self.events, self.kind_index)

    def frame(self, kind: str) -> pl.DataFrame:
        return self.frames[kind]

    @cached_property
    def settings(self) -> Settings:
        return settings_of(
            [self.events[i] for i in self.seqs("config", "scheduler_limits", "max_concurrency")]
        )

    @cached_property
    def engine_version(self) -> str | None:
        seqs = self.kind_index.get("version")
        return str(getattr(self.events[seqs[0]], "engine_version", "")) or None if seqs else None

    def seqs(self, *kinds: str) -> Iterable[int]:
        """The run-order indexes of the events of these kinds, in order (from ``kind_index``: no pass
        over the run, no event object made)."""
        index = self.kind_index
        found = [index[k] for k in kinds if k in index]
        if len(found) <= 1:
            return found[0] if found else ()
        return heapq.merge(*found)

    def event(self, seq: int) -> Event:
        return self.events[seq]

    def time_at(self, seq: int) -> float | None:
        """The event's ``t_s``, or that of the last timestamped event before it (untimed lines)."""
        for i in range(seq, -1, -1):
            t = self.events[i].t_s
            if t is not None:
                return t
        return None

    def ready(self) -> Event | None:
        """The first ``server_ready`` event."""
        seq = self.ready_seq()
        return None if seq is None else self.events[seq]

    def ready_seq(self) -> int | None:
        seqs = self.kind_index.get("server_ready")
        return seqs[0] if seqs else None


# -- small statistics -----------------------------------------------------------------------------


def mean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs)


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def r(x: float | None, nd: int = 2) -> float | None:
    """Round for display; keeps None and non-finite values as None."""
    if x is None or not math.isfinite(x):
        return None
    return round(x, nd)


def ols(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line; slope 0 when x does not vary."""
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0, my
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return slope, my - slope * mx


def theil_sen(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """(slope, intercept) robust to a few outliers: median of pairwise slopes (for long series, of the
    pairs half the series apart, which keeps it linear in time)."""
    n = len(xs)
    if n > 300:
        h = n // 2
        pairs = [(i, i + h) for i in range(n - h)]
    else:
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i]) for i, j in pairs if xs[j] != xs[i]]
    slope = median(slopes) if slopes else 0.0
    return slope, median([y - slope * x for x, y in zip(xs, ys, strict=True)])


def intervals(ts: Sequence[float]) -> list[float]:
    return [b - a for a, b in zip(ts, ts[1:], strict=False)]


def typical_interval(ts: Sequence[float]) -> float | None:
    """Median positive spacing of a time series (the logging interval), or None."""
    d = [x for x in intervals(ts) if x > 0]
    return median(d) if d else None


def is_gap(dt: float, interval: float) -> bool:
    """A spacing too long for the logging interval: the engine was idle (vLLM stops logging then).

    Printed times have one-second resolution, hence the 1.5 s of slack.
    """
    return dt > gap_threshold(interval)


def gap_threshold(interval: float) -> float:
    """The shortest spacing ``is_gap`` calls a gap (for a polars expression on a time column)."""
    return 1.5 * interval + 1.5


def bursts(times: Sequence[float], gap: float = 30.0) -> list[list[int]]:
    """Indexes of ``times`` (sorted) grouped into bursts separated by more than ``gap`` seconds.

    Lines printed by every rank for one step arrive within seconds of each other; the next step
    (a draft model's load after the target's, another kind of graph capture) comes later."""
    out: list[list[int]] = []
    for i, t in enumerate(times):
        if out and t - times[out[-1][-1]] <= gap:
            out[-1].append(i)
        else:
            out.append([i])
    return out
