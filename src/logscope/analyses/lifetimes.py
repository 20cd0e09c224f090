"""Server lifetimes: one log (``>>`` appends, a restart loop) or one directory (a folder of runs) can
hold several starts of a server, and each start is its own run.

A lifetime **starts** at a start marker, a line the server's front end prints once per start:

- vLLM's ASCII banner (``version 0.32.0``) or the older ``vLLM API server version ...`` line;
- vLLM's ``non-default args: {...}`` / ``args: Namespace(...)``; SGLang's ``server_args=ServerArgs(...)``.

(The engine core's ``Initializing a V1 LLM engine (v...) with config`` is not one: every DP rank
prints it.) Within one file, a marker of a family already seen in the current lifetime starts a
new one, except when it comes from another process within ``SAME_START_S`` seconds (several API
servers of one start). After a ``[shutdown]`` line, a startup line (model load, engine init, KV
pool, config, version) from a process not seen before starts a new lifetime too (a restart whose
banner was not logged). A file's lines before its first marker belong to its first lifetime.

Across files, a file's segments are **merged** when their time spans overlap (the rank and node files
of one start); a file without a marker (a rotated continuation, a client's output with timestamps)
joins the lifetime that started last before it; a file without marker and without timestamps (a
client's result block, a ``--save-result`` JSON) goes with the analysed lifetime.

Lifetimes are numbered from 1 in order of their start time (in line order when a file's times run
backwards, as when two logs were concatenated out of order). Built from events only, so the full,
sparse, parallel and follow readers, which give the same events, give the same lifetimes.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import RunData
from logscope.events import Event

SAME_START_S = 5.0  # markers of one family from other processes within this many seconds: one start
FLOATING = -1  # an event that goes with whichever lifetime is analysed
SHUTDOWN = "[shutdown]"
_ARGS_FORMS = ("non_default_args", "args", "server_args")
_STARTUP_KINDS = ("model_load", "engine_init", "kv_cache_pool", "config", "version")


class FileSpan(BaseModel):
    """The lines of one file that belong to a lifetime."""

    model_config = ConfigDict(extra="forbid")

    file: str
    start_line: int
    end_line: int


class Lifetime(BaseModel):
    """One start of the server, up to the next start (or the end of the log)."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(description="1-based, in order of start")
    start_line: int = Field(description="first line, in the first of `files`")
    end_line: int = Field(description="last line, in the first of `files`")
    start_time: str | None = Field(None, description="the first timestamp, as printed")
    end_time: str | None = Field(None, description="the last timestamp, as printed")
    engine_version: str | None = None
    files: list[str]
    spans: list[FileSpan] = Field(default_factory=list, description="the lines of each file")
    served_traffic: bool = Field(description="the engine reported requests or tokens (stats, batch lines)")
    ready: bool = Field(description="the server said it was ready")
    started_by: str | None = Field(
        None,
        description="the start marker, e.g. 'banner', 'args'; null for the "
        "lines of a log that starts mid-run",
    )


class LifetimeChoice(BaseModel):
    """Which lifetime the report's sections describe, and why."""

    model_config = ConfigDict(extra="forbid")

    index: int
    of: int = Field(description="how many lifetimes the input holds")
    reason: str


def _family(e: Event) -> str | None:
    """The start-marker family of an event, or None."""
    if e.kind == "config":
        return "args" if getattr(e, "form", None) in _ARGS_FORMS else None
    if e.kind == "version":
        return None if "LLM engine" in (e.raw or "") else "banner"
    return None


@dataclass
class _Segment:
    """A file's lines from one start to the next."""

    file_index: int
    file: str
    start_line: int
    started_by: str | None
    end_line: int = 0
    t0: float | None = None
    t0_line: int | None = None
    t1: float | None = None
    time0: str | None = None
    time1: str | None = None
    version: str | None = None
    served: bool = False
    ready: bool = False
    events: int = 0


@dataclass
class Lifetimes:
    """The lifetimes of a run, and each event's lifetime (``FLOATING`` for the ones that go with any)."""

    items: list[Lifetime]
    assignment: array[int] = field(repr=False)

    def default(self) -> LifetimeChoice:
        """The last lifetime that served traffic; else the last one that became ready; else the last."""
        n = len(self.items)
        if n == 1:
            return LifetimeChoice(index=1, of=1, reason="the input holds one server lifetime")
        served = [lt for lt in self.items if lt.served_traffic]
        if served:
            lt = served[-1]
            why = f"the last of the {n} lifetimes that served traffic"
        else:
            ready = [lt for lt in self.items if lt.ready]
            lt = ready[-1] if ready else self.items[-1]
            why = (
                f"no lifetime served traffic; the last of the {n} that became ready"
                if ready
                else f"no lifetime served traffic or became ready; the last of the {n}"
            )
        return LifetimeChoice(index=lt.index, of=n, reason=why + " (choose another with --lifetime N)")

    def choice(self, index: int) -> LifetimeChoice:
        n = len(self.items)
        if not 1 <= index <= n:
            from logscope.errors import LogscopeError

            raise LogscopeError(f"there is no lifetime {index}: the input holds {n} (numbered from 1)")
        if n == 1:
            return LifetimeChoice(index=1, of=1, reason="the input holds one server lifetime")
        return LifetimeChoice(index=index, of=n, reason=f"lifetime {index} of {n}, as asked")

    def events_of(self, events: Sequence[Event], index: int) -> list[Event]:
        """The events of lifetime ``index`` (1-based) and the floating ones, in run order."""
        k = index - 1
        a = self.assignment
        return [e for i, e in enumerate(events) if a[i] == k or a[i] == FLOATING]


def split_lifetimes(events: Sequence[Event] | RunData, files: Sequence[str]) -> Lifetimes:
    """Cut the run's events into lifetimes (module docstring).

    Works on the run's kind frames (``RunData.frames``): one row per event in polars, never one
    Python object per event; only the few start markers, startup lines and unparsed lines are read
    as events."""
    data = events if isinstance(events, RunData) else RunData(events=events, files=list(files))
    n = len(data.events)
    rows = _rows(data)
    order = {f: i for i, f in enumerate(files)}
    cuts = _cuts(data, rows)  # file -> [(line, started_by)], files in order of their first event
    flat: list[_Segment] = []
    base: dict[str, int] = {}
    for f, cs in cuts.items():
        base[f] = len(flat)
        flat.extend(_Segment(order.get(f, len(order)), f, line, by) for line, by in cs)
    parts = []
    for key, df in rows.partition_by("file", as_dict=True, maintain_order=True).items():
        name = str(key[0])  # each row's segment: the last cut at or before its line (the first for line 0)
        starts = pl.Series([line for line, _ in cuts[name]], dtype=pl.Int64)
        local = (starts.search_sorted(df["line"], side="right").cast(pl.Int64) - 1).clip(lower_bound=0)
        parts.append(df.with_columns((local + base[name]).alias("gid")))
    rows = pl.concat(parts) if parts else rows.with_columns(pl.lit(0, dtype=pl.Int64).alias("gid"))
    _aggregate(rows, flat)
    groups, floating = _group(flat)
    items = [_lifetime(k + 1, g) for k, g in enumerate(groups)]
    where = {id(s): k for k, g in enumerate(groups) for s in g}
    lifetime_of = [FLOATING if id(s) not in where else where[id(s)] for s in flat]
    assignment = array("h")
    if n:
        by_seq = rows.sort("seq").select(
            pl.col("gid").replace_strict(list(range(len(flat))), lifetime_of, return_dtype=pl.Int16)
        )
        assignment.frombytes(by_seq.to_series().to_numpy().astype("int16").tobytes())
    return Lifetimes(items=items, assignment=assignment)


def _rows(data: RunData) -> pl.DataFrame:
    """One row per event (every kind): run order ``seq`` and what a segment counts of it."""
    parts = []
    for kind in data.kind_index:
        df = data.frame(kind)
        if kind == "throughput":
            serves = (
                (pl.col("running").fill_null(0) != 0)
                | (pl.col("gen_tok_s").fill_null(0) != 0)
                | (pl.col("prompt_tok_s").fill_null(0) != 0)
            )
        else:
            serves = pl.lit(kind in ("prefill_batch", "decode_batch"))
        version = pl.col("engine_version") if kind == "version" else pl.lit(None, dtype=pl.Utf8)
        end = pl.col("end_line")
        parts.append(
            df.select(
                pl.col("seq"),
                pl.lit(kind, dtype=pl.Utf8).alias("kind"),
                pl.col("file"),
                pl.col("line").cast(pl.Int64),
                pl.when(end.is_null() | (end == 0))
                .then(pl.col("line"))
                .otherwise(end)
                .cast(pl.Int64)
                .alias("end"),
                pl.col("t_s").cast(pl.Float64),
                pl.col("time"),
                pl.col("process"),
                serves.alias("serves"),
                version.alias("version"),
            )
        )
    if not parts:
        return pl.DataFrame(
            schema={
                "seq": pl.Int64,
                "kind": pl.Utf8,
                "file": pl.Utf8,
                "line": pl.Int64,
                "end": pl.Int64,
                "t_s": pl.Float64,
                "time": pl.Utf8,
                "process": pl.Utf8,
                "serves": pl.Boolean,
                "version": pl.Utf8,
            }
        )
    # files in the order of their first event, each file's rows in line order (see ``_in_line_order``)
    rows = pl.concat(parts)
    first = rows.group_by("file").agg(pl.col("seq").min().alias("_first"))
    return rows.join(first, on="file").sort(["_first", "line", "seq"]).drop("_first")


def _aggregate(rows: pl.DataFrame, flat: list[_Segment]) -> None:
    """Fill each segment's counts from its rows (``_Segment.add``'s rules, in polars)."""
    known = pl.col("kind") != "unparsed"
    timed = pl.col("t_s").is_not_null()
    agg = rows.group_by("gid").agg(
        pl.col("line").filter(timed).first().alias("t0_line"),  # rows are in line order, then run order
        pl.col("t_s").filter(timed).first().alias("t0"),
        pl.col("time").filter(timed).first().alias("time0"),
        known.sum().alias("events"),
        pl.col("end").filter(known).max().alias("end_line"),
        _last(pl.col("t_s"), known & timed, ["t_s", "seq"]).alias("t1"),
        _last(pl.col("time"), known & timed, ["t_s", "seq"]).alias("time1"),
        _last(
            pl.col("version"),
            pl.col("version").is_not_null() & (pl.col("version") != ""),
            ["seq"],
            first=True,
        ).alias("version"),
        (pl.col("serves") & known).any().alias("served"),
        (pl.col("kind") == "server_ready").any().alias("ready"),
    )
    for g in agg.iter_rows(named=True):
        s = flat[g["gid"]]
        s.t0_line, s.t0, s.time0 = g["t0_line"], g["t0"], g["time0"]
        s.events, s.end_line = g["events"], g["end_line"] or 0
        s.t1, s.time1, s.version = g["t1"], g["time1"], g["version"]
        s.served, s.ready = g["served"], g["ready"]


def _last(col: pl.Expr, where: pl.Expr, by: list[str], *, first: bool = False) -> pl.Expr:
    """``col`` of the last (or first) row where ``where`` holds, in the order of the ``by`` columns."""
    kept = col.filter(where).sort_by([pl.col(b).filter(where) for b in by])
    return kept.first() if first else kept.last()


def _cuts(data: RunData, rows: pl.DataFrame) -> dict[str, list[tuple[int, str | None]]]:
    """Per file, the first line of each lifetime (1 for the first), with what started it (None: no
    marker). Reads known kinds and the ``[shutdown]`` lines only, so that a sparse read (which skips
    other unparsed lines) cuts where a full read does. Only the lines that can cut are read as
    events; which processes a file printed from since its last cut is asked of ``rows``."""
    out: dict[str, list[tuple[int, str | None]]] = {}
    seen: dict[
        str, dict[str, tuple[str | None, float | None]]
    ] = {}  # file -> family -> (process, t) of its first
    since: dict[str, tuple[int, int]] = {}  # file -> (line, seq) of the current lifetime's first event
    after: dict[str, bool] = {}  # file -> a [shutdown] line since the current lifetime's start
    for f in rows["file"].unique(maintain_order=True):
        out[f], seen[f], since[f], after[f] = [(1, None)], {}, (-1, -1), False
    few = rows.filter(pl.col("kind").is_in((*_STARTUP_KINDS, "unparsed")))
    for seq, f, line in few.select("seq", "file", "line").iter_rows():
        e = data.events[seq]
        if e.kind == "unparsed":
            if SHUTDOWN in (e.raw or getattr(e, "text", "")):
                after[f] = True
            continue
        fam = _family(e)
        if fam is not None:
            if fam in seen[f] and _new_start(seen[f][fam], e):
                out[f].append((line, fam))
                seen[f], since[f], after[f] = {}, (line, seq), False
            elif len(out[f]) == 1 and out[f][0][1] is None:
                out[f][0] = (1, fam)
            seen[f].setdefault(fam, (e.process, e.t_s))
        elif after[f] and e.process and not _printed(rows, f, e.process, since[f], (line, seq)):
            out[f].append((line, "restart after shutdown"))
            seen[f], since[f], after[f] = {}, (line, seq), False
    return out


def _printed(rows: pl.DataFrame, f: str, process: str, lo: tuple[int, int], hi: tuple[int, int]) -> bool:
    """Did ``process`` print a known line of ``f`` from position ``lo`` up to (not with) ``hi``?
    (Positions are (line, seq): a file's line order.)"""
    line, seq = pl.col("line"), pl.col("seq")
    at_or_after = (line > lo[0]) | ((line == lo[0]) & (seq >= lo[1]))
    before = (line < hi[0]) | ((line == hi[0]) & (seq < hi[1]))
    hit = rows.filter(
        (pl.col("file") == f)
        & (pl.col("process") == process)
        & (pl.col("kind") != "unparsed")
        & at_or_after
        & before
    )
    return hit.height > 0


def _new_start(first: tuple[str | None, float | None], e: Event) -> bool:
    """Does a repeated marker start another lifetime? Not when another process printed it within
    ``SAME_START_S`` seconds of the first (several API servers of one start)."""
    proc, t = first
    if (
        proc is not None
        and e.process is not None
        and proc != e.process
        and t is not None
        and e.t_s is not None
    ):
        return abs(e.t_s - t) > SAME_START_S
    return True


def _group(flat: list[_Segment]) -> tuple[list[list[_Segment]], list[_Segment]]:
    """Segments -> lifetimes (lists of segments), and the floating segments."""
    marked = [s for s in flat if s.started_by is not None]
    unmarked = [s for s in flat if s.started_by is None]
    if not flat:  # no event at all (a file of plain text or junk): no lifetime
        return [], []
    if not marked:  # no start in the input: one lifetime (a log that starts mid-run), as before
        timed = [s for s in unmarked if s.t0 is not None]
        return ([timed or unmarked], [s for s in unmarked if s.t0 is None] if timed else [])
    groups: list[list[_Segment]] = []
    key = _start_key(marked)
    for s in sorted(marked, key=key):
        home = next(
            (g for g in groups if s.t0 is not None and all(x.file != s.file for x in g) and _overlaps(g, s)),
            None,
        )
        if home is None:
            groups.append([s])
        else:
            home.append(s)
    floating: list[_Segment] = []
    for s in sorted(unmarked, key=lambda s: (s.t0 is None, s.t0 or 0.0, s.file_index)):
        if s.t0 is None:  # no timestamp: goes with the analysed lifetime
            floating.append(s)
            continue
        same_file = [g for g in groups if any(x.file == s.file for x in g)]
        before = [g for g in (same_file or groups) if (t := _t0(g)) is not None and t <= s.t0]
        if before:
            before[-1].append(s)  # a rotated continuation, a client's output, a rank file without banner
        else:
            groups.append([s])  # lines before any start: a log that begins mid-run
    groups.sort(key=lambda g: min(key(x) for x in g))
    return groups, floating


def _t0(g: list[_Segment]) -> float | None:
    ts = [s.t0 for s in g if s.t0 is not None and s.started_by is not None]
    return min(ts) if ts else None


def _overlaps(g: list[_Segment], s: _Segment) -> bool:
    spans = [(x.t0, x.t1 if x.t1 is not None else x.t0) for x in g if x.t0 is not None]
    if not spans or s.t0 is None:
        return False
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    return s.t0 <= hi and (s.t1 if s.t1 is not None else s.t0) >= lo


def _start_key(marked: list[_Segment]) -> Any:
    """Order of starts: by start time, unless a file's starts run backwards in time (two logs joined
    out of order) or lack times: then by file and line."""
    by_file: dict[str, list[_Segment]] = {}
    for s in marked:
        by_file.setdefault(s.file, []).append(s)
    timed = all(s.t0 is not None for s in marked)
    ordered = timed and all(
        all(a.t0 <= b.t0 for a, b in zip(ss, ss[1:], strict=False))  # type: ignore[operator]
        for ss in (sorted(v, key=lambda x: x.start_line) for v in by_file.values())
    )
    if ordered:
        return lambda s: (s.t0, s.file_index, s.start_line)
    return lambda s: (s.file_index, s.start_line)


def _lifetime(index: int, g: list[_Segment]) -> Lifetime:
    marked = [s for s in g if s.started_by is not None]
    first = min(
        marked or g, key=lambda s: (s.t0 if s.t0 is not None else float("inf"), s.file_index, s.start_line)
    )
    spans: dict[str, FileSpan] = {}
    for s in sorted(g, key=lambda s: (s.file_index, s.start_line)):
        if not s.events:
            continue
        old = spans.get(s.file)
        if old is None:
            spans[s.file] = FileSpan(file=s.file, start_line=s.start_line, end_line=s.end_line)
        else:
            spans[s.file] = FileSpan(
                file=s.file,
                start_line=min(old.start_line, s.start_line),
                end_line=max(old.end_line, s.end_line),
            )
    files = [first.file] + [f for f in spans if f != first.file]
    main = spans.get(first.file) or FileSpan(
        file=first.file, start_line=first.start_line, end_line=first.end_line
    )
    timed = [s for s in g if s.t0 is not None]
    t_first = min(timed, key=lambda s: s.t0) if timed else None  # type: ignore[arg-type,return-value]
    ended = [s for s in g if s.t1 is not None]
    t_last = max(ended, key=lambda s: s.t1) if ended else None  # type: ignore[arg-type,return-value]
    return Lifetime(
        index=index,
        start_line=main.start_line,
        end_line=main.end_line,
        start_time=t_first.time0 if t_first else None,
        end_time=t_last.time1 if t_last else None,
        engine_version=next((s.version for s in sorted(g, key=lambda s: s.start_line) if s.version), None),
        files=files,
        spans=list(spans.values()),
        served_traffic=any(s.served for s in g),
        ready=any(s.ready for s in g),
        started_by=first.started_by,
    )
