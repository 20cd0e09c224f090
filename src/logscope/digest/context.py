"""What a rule sees of a run: its events and frames, its settings, the analysis results, the phases.

Analysis results come from the report when one is given (``Report.section`` names), else they are
computed here on first use. A result that is not applicable reads as ``None``: a rule that needs it
then reports nothing (it cannot tell a problem from its absence).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import polars as pl

from logscope.analyses.base import NotApplicable, RunData, RunLike
from logscope.analyses.registry import ANALYSES as REGISTERED
from logscope.analyses.settings import Settings
from logscope.events import Event

# analysis name -> "module:function" (called with RunData, and the stable decode result when it takes two;
# None: only in a report), from the one registry of the report's analyses
ANALYSES: dict[str, str | None] = {a.name: a.compute for a in REGISTERED}

# kinds whose raw text the text rules search (warnings and errors by level, lines no grammar took)
TEXT_KINDS = ("warning", "error", "unparsed", "oom")

# a clean stop: errors after it are the shutdown's, not a crash (vLLM's EngineDeadError on SIGINT)
SHUTDOWN = re.compile(
    r"\[shutdown\]|Shutting down FastAPI|^INFO:\s+Shutting down|SIGTERM received|SIGINT received|"
    r"Gracefully exiting|Shutdown initiated|received signal=SIG(?:TERM|INT)"
)
_SHUTDOWN_ANCHORS = ("shutdown]", "Shutting down", "SIG", "Gracefully exiting", "Shutdown initiated")


@dataclass(frozen=True)
class Hit:
    """A line that matched a text rule."""

    seq: int
    event: Event
    match: re.Match[str]

    @property
    def text(self) -> str:
        return self.match.group(0)


class Context:
    """One run as the rules see it."""

    def __init__(self, run: RunLike | RunData, report: Any = None) -> None:
        self.data = RunData.of(run)
        self.report = report
        self._results: dict[str, Any] = {}
        self._ids: dict[str, dict[int, int]] = {}  # kind -> {id(event): run-order index} (index_of)

    # -- events ---------------------------------------------------------------------------------
    @property
    def events(self) -> Sequence[Event]:
        return self.data.events

    @cached_property
    def engines(self) -> dict[str, int]:
        """Events per engine (a run can mix files: a server log and a client's output)."""
        out: dict[str, int] = {}
        for kind in self.data.kind_index:
            if kind == "unparsed":
                continue
            counts = self.data.frame(kind)["engine"].drop_nulls().value_counts()
            for engine, n in counts.iter_rows():
                out[engine] = out.get(engine, 0) + n
        return out

    @cached_property
    def engine(self) -> str | None:
        """The engine most of the run's events come from (the run's own label when none says)."""
        if not self.engines:
            return self.data.engine
        return max(sorted(self.engines), key=lambda k: self.engines[k])

    def of_kind(self, *kinds: str) -> list[tuple[int, Event]]:
        """(run-order index, event) of these kinds, in run order.

        Made on each call from the run's kind index (``RunData.kind_index``, machine integers), not
        kept: on an event-dense log a kept list of pairs would cost ~100 bytes an event for the
        run's lifetime, and rules ask each kind only a few times."""
        events = self.data.events
        return [(i, events[i]) for i in self._seqs(kinds)]

    def _seqs(self, kinds: Sequence[str]) -> Iterable[int]:
        """The run-order indexes of the events of these kinds, in order (no pair made per event)."""
        return self.data.seqs(*kinds)

    def has(self, kind: str) -> bool:
        return kind in self.data.kind_index

    def frame(self, kind: str) -> pl.DataFrame:
        """The polars frame of ``kind`` (with a ``seq`` column: the run-order index)."""
        return self.data.frame(kind)

    @property
    def settings(self) -> Settings:
        return self.data.settings

    def grep(
        self, pattern: re.Pattern[str], anchors: Iterable[str], kinds: Sequence[str] = TEXT_KINDS
    ) -> list[Hit]:
        """Lines of ``kinds`` holding one of the literal ``anchors`` and matching ``pattern``."""
        anchors = tuple(anchors)
        out: list[Hit] = []
        events = self.data.events
        for i in self._seqs(kinds):
            e = events[i]
            raw = e.raw
            if not any(a in raw for a in anchors):
                continue
            m = pattern.search(raw)
            if m is not None:
                out.append(Hit(i, e, m))
        return out

    # -- phases ---------------------------------------------------------------------------------
    @cached_property
    def ready_seq(self) -> int | None:
        """Index of the first ``server_ready`` event (the server accepts requests from here on)."""
        return self.data.ready_seq()

    @cached_property
    def shutdown_seq(self) -> int | None:
        """Index of the first line that starts a clean stop (SIGINT/SIGTERM, ``[shutdown]``)."""
        events = self.data.events
        for i in self._seqs(("unparsed", "warning", "error")):
            e = events[i]
            if not any(a in e.raw for a in _SHUTDOWN_ANCHORS) or (e.kind == "error" and "Traceback" in e.raw):
                continue
            first = e.raw.split("\n", 1)[0]
            if SHUTDOWN.search(_message(first)):
                return i
        return None

    def phase(self, seq: int) -> str:
        """``startup`` (before the ready line), ``serving``, ``shutdown`` (after a clean stop began), or
        ``unknown`` (the log has no ready line and no serving lines before this one)."""
        if self.shutdown_seq is not None and seq > self.shutdown_seq:
            return "shutdown"
        if self.ready_seq is not None:
            return "startup" if seq < self.ready_seq else "serving"
        if self.first_busy_seq is not None and seq > self.first_busy_seq:
            return "serving"
        return "unknown"

    @cached_property
    def first_busy_seq(self) -> int | None:
        """The first stats/batch line with running requests (the server was serving from there)."""
        events = self.data.events
        for i in self._seqs(("throughput", "decode_batch", "prefill_batch")):
            e = events[i]
            if getattr(e, "running", 0) or getattr(e, "new_seq", 0):
                return i
        return None

    # -- analyses -------------------------------------------------------------------------------
    def analysis(self, name: str) -> Any:
        """The result of analysis ``name``, or None when it does not apply to this run (or does not exist)."""
        if name in self._results:
            return self._results[name]
        value: Any = None
        if self.report is not None and name in getattr(type(self.report), "model_fields", {}):
            value = getattr(self.report, name)
        elif name in ANALYSES:
            spec = ANALYSES[name]
            fn = _load(spec) if spec else None
            if fn is not None:
                value = _call(fn, self)
        if isinstance(value, NotApplicable):
            value = None
        self._results[name] = value
        return value

    def index_of(self, event: Event) -> int | None:
        """The run-order index of ``event`` (identity), or None.

        Looked up among the events of its kind only (rules ask this of a few errors or compile
        events; a map of every event's id would cost ~100 bytes an event of an event-dense log)."""
        ids = self._ids.get(event.kind)
        if ids is None:
            events = self.data.events
            ids = self._ids[event.kind] = {id(events[i]): i for i in self.data.kind_index.get(event.kind, ())}
        return ids.get(id(event))


def _message(first_line: str) -> str:
    """The text after an engine header (``... [file.py:12] msg``, ``[date TP0] msg``), for anchored markers."""
    m = re.search(r"\] ", first_line)
    return first_line[m.end() :] if m else first_line


def _load(spec: str) -> Callable[..., Any] | None:
    module, _, attr = spec.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    fn = getattr(mod, attr, None)
    return fn if callable(fn) else None


def _call(fn: Callable[..., Any], ctx: Context) -> Any:
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(params) >= 2 and params[1].name in ("stable", "stable_decode", "sd"):
        return fn(ctx.data, ctx.analysis("stable_decode"))
    return fn(ctx.data)


__all__ = ["ANALYSES", "Context", "Hit", "SHUTDOWN", "TEXT_KINDS"]
