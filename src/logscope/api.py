"""The library's entry points: ``load`` a run, iterate its events, get polars frames.

A run is one or more files (ranks, nodes, rotated parts) of one server. Each file is parsed with the
engine's dialect (detected from its first lines unless given), then the files' events are merged by
time. ``t_s`` counts seconds from the run's first timestamp.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from logscope.collector import fewer_collections
from logscope.errors import LogscopeError, UnreadableInput
from logscope.events import Event, copy_event
from logscope.parsers import detect, dialect
from logscope.parsers.bench import result_file_events
from logscope.parsers.framing import Line, ReadStats, Sparse, expand_paths, read_lines
from logscope.parsers.pipeline import CUM_DAYS, Dialect, Parser, first_seconds
from logscope.parsers.scan import cached_scanner

if TYPE_CHECKING:
    import polars as pl

    from logscope.analyses.base import RunData
    from logscope.analyses.lifetimes import Lifetime, LifetimeChoice, Lifetimes
    from logscope.parsers.chunks import LineRenderer
    from logscope.timebase import TimeBase

PathLike = str | os.PathLike[str]


@dataclass(repr=False)
class Run:
    """Everything parsed from one run's logs.

    The input may hold several server lifetimes (restarts, ``>>`` appends, a folder of runs):
    ``lifetimes`` lists them (``logscope.analyses.lifetimes``), ``lifetime(N)`` is the run restricted
    to lifetime N, and ``analyze()`` reports on the last lifetime that served traffic (or on this
    one, for a run made by ``lifetime(N)``), with the findings of every lifetime."""

    files: list[str]
    engine: str | None
    events: list[Event]
    stats: ReadStats = field(default_factory=ReadStats)
    whole: Run | None = field(default=None, repr=False)
    """The run of the whole input, for a run made by ``lifetime(N)``."""
    chosen: LifetimeChoice | None = None
    """For a run made by ``lifetime(N)``: which lifetime it is, and why it was chosen."""
    _timebase: tuple[int, TimeBase] | None = field(default=None, init=False, compare=False)
    _data: RunData | None = field(default=None, init=False, repr=False, compare=False)

    def run_data(self) -> RunData:
        """The run as the analyses see it (``RunData``: frames built once), shared by the lifetime
        split, the report and the rules; made again when the events changed."""
        if self._data is None or self._data.events is not self.events:
            from logscope.analyses.base import RunData

            self._data = RunData.of(self, fresh=True)
        return self._data

    def __repr__(self) -> str:  # short (the events are many): logscope.render.notebook
        from logscope.render.notebook import run_repr

        return run_repr(self)

    def _repr_html_(self) -> str:
        from logscope.render.notebook import run_html

        return run_html(self)

    def of_kind(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.events:
            out[e.kind] = out.get(e.kind, 0) + 1
        return out

    def frame(self, kind: str) -> pl.DataFrame:
        """One polars DataFrame of the events of ``kind``: the model's fields, then ``ts`` (the wall-clock
        time, Datetime) and ``ts_source`` (where its date came from: ``logscope.timebase``)."""
        from logscope.analyses.frames import frame

        return frame(self.events, kind, timebase=self.timebase())

    def requests(self) -> pl.DataFrame:
        """The per-request table (polars): one row per request id when request logging is on (its lines
        joined by id), else one per inference access line; columns in ``logscope.analyses.requests``."""
        from logscope.analyses.base import RunData
        from logscope.analyses.requests import request_frame

        return request_frame(RunData.of(self))

    def timebase(self) -> TimeBase:
        """When ``t_s == 0`` was on the wall clock, and how that is known (``logscope.timebase``)."""
        from logscope.timebase import timebase

        if self._timebase is None or self._timebase[0] != len(self.events):
            self._timebase = (len(self.events), timebase(self.events))
        return self._timebase[1]

    @property
    def lifetimes(self) -> list[Lifetime]:
        """The server lifetimes of the whole input (one for an ordinary log), numbered from 1."""
        return self._split().items

    def _split(self) -> Lifetimes:
        root = self.whole or self
        if root._lifetimes is None or root._lifetimes[0] != len(root.events):
            from logscope.analyses.lifetimes import split_lifetimes

            root._lifetimes = (len(root.events), split_lifetimes(root.run_data(), root.files))
        return root._lifetimes[1]

    _lifetimes: tuple[int, Lifetimes] | None = field(default=None, init=False, repr=False, compare=False)

    def lifetime(self, index: int | None = None) -> Run:
        """The run restricted to lifetime ``index`` (1-based; None: the one ``analyze`` picks, the last
        that served traffic), with the events that belong to no lifetime (a client's untimed result
        block). Raises ``LogscopeError`` for an index the input does not hold."""
        if index is None and self.chosen is not None:
            return self  # a run made by lifetime(N) is that lifetime
        root = self.whole or self
        split = self._split()
        if not split.items and index is None:  # no event at all (plain text, junk): nothing to cut
            return root
        choice = split.default() if index is None else split.choice(index)
        if choice.of == 1:
            return root
        return Run(
            files=root.files,
            engine=root.engine,
            events=split.events_of(root.events, choice.index),
            stats=root.stats,
            whole=root,
            chosen=choice,
        )

    def analyze(self, metrics: Sequence[str] = (), slo: str | None = None) -> Any:
        """The full report: every analysis, and the digest's findings (worst first). On an input of
        several lifetimes: the sections of the chosen one (``lifetime(N)``, else the last that served
        traffic), the findings of every lifetime (each saying which), and the ``lifetimes`` table.
        ``metrics``: saved Prometheus scrapes of this run (files or folders; ``logscope.parsers.prometheus``);
        ``slo``: gates such as ``"ttft_p95<=2s,error_rate<=1%"`` (``logscope.analyses.slo``; a bad gate
        raises ``SloSyntaxError``)."""
        from logscope.analyses.report import build_report
        from logscope.digest import run_rules

        split = self._split()
        if len(split.items) > 1 and self.chosen is None:
            return self.lifetime().analyze(metrics=metrics, slo=slo)
        data = (
            self.run_data()
        )  # one for the lifetimes, the report and the rules: frames, series and stalls are built once
        with fewer_collections():  # the analyses make frames and lists over every event (logscope.collector)
            report = build_report(data)
            if metrics:
                add_metrics(report, self.events, metrics)
            if slo is not None:
                from logscope.analyses.slo import evaluate

                report.slo = evaluate(slo, self.events, report.metrics)
            report.findings = run_rules(data, report)
            # which lifetime the sections describe (none when the input has no event: plain text, junk)
            choice = self.chosen or (split.default() if split.items else None)
            if choice is not None and len(split.items) > 1:
                report.findings = _every_lifetime(self, choice.index, report.findings)
                whole = self.whole or self
                report.coverage = build_report_coverage(whole, report.lines)
        report.lifetimes = split.items
        report.analyzed_lifetime = choice
        return report


def _every_lifetime(run: Run, chosen: int, findings: list[Any]) -> list[Any]:
    """The chosen lifetime's findings and those of every other lifetime, each saying which, worst first."""
    from logscope.analyses.base import RunData
    from logscope.analyses.report import build_report
    from logscope.digest import run_rules
    from logscope.digest.finding import SEVERITY_RANK

    whole = run.whole or run
    out = [f.model_copy(update={"lifetime": chosen}) for f in findings]
    for lt in run.lifetimes:
        if lt.index == chosen:
            continue
        other = RunData.of(whole.lifetime(lt.index))
        out += [f.model_copy(update={"lifetime": lt.index}) for f in run_rules(other, build_report(other))]
    return sorted(out, key=lambda f: (-SEVERITY_RANK[f.severity], f.code, f.lifetime))


def build_report_coverage(run: Run, lines: int) -> Any:
    """The coverage of the whole input (every lifetime): lines are counted over all of it."""
    from logscope.analyses.base import RunData
    from logscope.analyses.report import _coverage

    return _coverage(RunData.of(run), lines)


def add_metrics(report: Any, events: Sequence[Event], paths: Sequence[str]) -> None:
    """Set ``report.metrics`` from the scrapes in ``paths`` (or say in ``not_applicable`` why not)."""
    from logscope.analyses.base import NotApplicable
    from logscope.analyses.metrics import ANALYSED, metrics_section
    from logscope.parsers.prometheus import read_metrics

    res = metrics_section(read_metrics(list(paths), ANALYSED), events)
    if isinstance(res, NotApplicable):
        report.not_applicable["metrics"] = res.reason
    else:
        report.metrics = res
        from logscope.analyses.metrics import fill_gaps

        fill_gaps(report, res)
        if report.requests is not None:
            from logscope.analyses.requests import add_metrics as requests_metrics

            requests_metrics(report.requests, res)


def _with_lookahead(lines: Iterator[Line], n: int) -> tuple[list[Line], Iterator[Line]]:
    head = list(itertools.islice(lines, n))
    return head, itertools.chain(head, lines)


def iter_file_events(
    path: str,
    engine: str | None = "auto",
    *,
    stats: ReadStats | None = None,
    keep_unparsed: bool = True,
    reference: bool = False,
    keep_literals: tuple[str, ...] = (),
    sparse: bool = True,
) -> tuple[str | None, Iterator[Event]]:
    """(engine, events) of one file, streaming. ``engine="auto"`` detects it from the first lines.

    With ``keep_unparsed=False`` the file is read sparsely (see ``Sparse``); ``sparse=False`` reads
    every line all the same: the parse the sparse reader must equal (its tests compare the two)."""
    stats = stats if stats is not None else ReadStats()
    once = _read_once(path)
    results = None if once else result_file_events(path, stats)
    if results is not None:  # a benchmark client's --save-result JSON / JSONL file
        return None, iter(results)
    if keep_unparsed or not sparse:
        lines = read_lines(path, stats)
        if engine == "auto":
            head, lines = _with_lookahead(lines, HEAD_LINES)
            engine = detect(head)
        parser = Parser(
            dialect(engine), keep_unparsed=keep_unparsed, reference=reference, keep_literals=keep_literals
        )
        return engine, parser.events(lines)
    if once:
        # stdin or a pipe cannot be read twice: one pass, whose first HEAD_LINES lines (read whole) detect
        # the engine and the first stamp; the reader skips from there on, once it is told how
        plan = Sparse(None, _wants_nothing, head=HEAD_LINES)
        head, lines = _with_lookahead(read_lines(path, stats, plan), HEAD_LINES)
        engine = detect(head) if engine == "auto" else engine
        parser = Parser(
            dialect(engine), keep_unparsed=False, reference=reference, keep_literals=keep_literals
        )
        parser.sparse = True
        parser.clock.first = first_seconds(parser.dialect, head)
        plan.scanner = cached_scanner(_scan_literals(parser.dialect, keep_literals))
        plan.want_next, plan.timed = parser.wants_next, parser.dialect.starts_timed
        return engine, parser.events(lines)
    # nobody wants the lines no grammar understood: read sparsely, only the lines holding an anchor
    # (and the lines a record in progress asks for) are decoded and parsed; the others are counted
    engine, head = _head(path, engine)
    parser = Parser(dialect(engine), keep_unparsed=False, reference=reference, keep_literals=keep_literals)
    parser.sparse = True
    d = parser.dialect
    # the run's clock starts at the file's first timestamp, even when that line is skipped
    parser.clock.first = first_seconds(d, head)
    skipping = Sparse(
        cached_scanner(_scan_literals(d, keep_literals)),
        parser.wants_next,
        head=_sparse_head(d, head),
        timed=d.starts_timed,
    )
    return engine, parser.events(read_lines(path, stats, skipping))


def _wants_nothing() -> bool:
    return False


def _read_once(path: str) -> bool:
    """Can ``path`` be read only once? Standard input, and a named pipe, a ``<(...)`` process
    substitution or a device given by name: a second open would wait for a writer that has gone."""
    return path == "-" or (os.path.exists(path) and not os.path.isfile(path))


HEAD_LINES = 3000  # lines read at a file's start to detect its engine
SPARSE_HEAD = HEAD_LINES  # lines read whole before the sparse reader starts skipping (the first timestamp)


def _head(path: str, engine: str | None) -> tuple[str | None, list[Line]]:
    """(engine, the file's first ``HEAD_LINES`` lines): read apart before a sparse read, which skips them."""
    head = list(itertools.islice(read_lines(path, ReadStats()), HEAD_LINES))
    return (detect(head) if engine == "auto" else engine), head


def _scan_literals(d: Dialect, keep_literals: tuple[str, ...]) -> tuple[str, ...]:
    """What makes a line matter to a sparse read: the dialect's literals and the ones asked to be kept."""
    return tuple(sorted({*d.scan_literals(), *keep_literals}))


def _sparse_head(d: Dialect, head: list[Line]) -> int:
    """Lines to read whole before skipping: ``SPARSE_HEAD``, and at least up to the first line that
    starts a timestamped record. The parser keeps the file's first timestamped record even when no
    unparsed record is wanted (``Parser.events``), so the sparse reader must not skip it. With the
    default ``SPARSE_HEAD`` the head holds it already; a smaller one (the tests read sparsely from the
    first line on) is raised to it. A first stamp after the ``head`` lines is not looked for: the first
    timestamped record handed over is kept then."""
    first = next((ln.number for ln in head if d.starts_timed(ln.text)), 0)
    return max(SPARSE_HEAD, first)


def iter_events(
    paths: PathLike | Sequence[PathLike],
    engine: str | None = "auto",
    *,
    keep_unparsed: bool = True,
    stats: ReadStats | None = None,
    jobs: int = 1,
) -> Iterator[Event]:
    """Events of every file in order (files one after the other, no time merge), streaming.

    ``jobs > 1`` parses several files at once in worker processes, or one big file in ranges
    (``logscope.parsers.chunks``); the events and their order are those of the serial run."""
    files = expand_paths([paths] if isinstance(paths, str | os.PathLike) else paths)
    stats = stats if stats is not None else ReadStats()
    if len(files) == 1 and _splittable(files[0], jobs):
        yield from _split_file_events(files[0], engine, jobs, keep_unparsed, stats)[1]
        return
    if jobs > 1 and len(files) > 1 and "-" not in files:
        # one file per task, results in file order: the same events as the serial loop below
        from logscope.pools import process_pool

        with process_pool(jobs) as pool:  # fork only while single-threaded; a spawn safe from scripts
            for done, st in pool.map(_file_job, [(f, engine, keep_unparsed) for f in files]):
                stats.add(st)
                yield from done
        return
    for f in files:
        _eng, evs = iter_file_events(f, engine, stats=stats, keep_unparsed=keep_unparsed)
        yield from evs


def _splittable(path: str, jobs: int) -> bool:
    from logscope.parsers.chunks import can_split

    return can_split(path, jobs) and result_file_events(path) is None


def _split_file_events(
    path: str,
    engine: str | None,
    jobs: int,
    keep_unparsed: bool,
    stats: ReadStats,
    keep_literals: tuple[str, ...] = (),
) -> tuple[str | None, Iterator[Event]]:
    """(engine, events) of one big file, its ranges parsed by ``jobs`` processes: ``iter_file_events``'
    result, from several processes."""
    from logscope.parsers.chunks import iter_split_events

    split = _split_args(path, engine, keep_unparsed, keep_literals)
    return split["engine"], iter_split_events(
        path, **split, jobs=jobs, stats=stats, keep_unparsed=keep_unparsed
    )


def _split_args(
    path: str, engine: str | None, keep_unparsed: bool, keep_literals: tuple[str, ...] = ()
) -> dict[str, Any]:
    """What the ranges of one file need to know of its first lines (engine, first stamp, sparse head)."""
    engine, head = _head(path, engine)
    d = dialect(engine)
    return {
        "engine": engine,
        "first": first_seconds(d, head),
        "keep_literals": keep_literals,
        "scan": () if keep_unparsed else _scan_literals(d, keep_literals),
        "sparse_head": _sparse_head(d, head),
    }


def iter_event_lines(
    paths: Sequence[PathLike],
    engine: str | None,
    *,
    keep_unparsed: bool,
    stats: ReadStats,
    jobs: int,
    lines: LineRenderer,
) -> Iterator[tuple[str, bytes]] | None:
    """(kind, text line) of each event of one big file, its ranges parsed and written by ``jobs``
    processes (``parsers.chunks.iter_split_lines``): ``logscope events --jobs N``. The lines are those
    of rendering ``iter_events``' events with ``lines`` one by one. None when the input is not one
    file worth cutting (then the events go the usual way)."""
    from logscope.parsers.chunks import iter_split_lines

    files = expand_paths(list(paths))
    if len(files) != 1 or not _splittable(files[0], jobs):
        return None
    split = _split_args(files[0], engine, keep_unparsed)
    return iter_split_lines(
        files[0], **split, jobs=jobs, stats=stats, keep_unparsed=keep_unparsed, lines=lines
    )


def _file_job(args: tuple[str, str | None, bool]) -> tuple[list[Event], ReadStats]:
    """One file's events in a worker process."""
    path, engine, keep_unparsed = args
    stats = ReadStats()
    _eng, stream = iter_file_events(path, engine, stats=stats, keep_unparsed=keep_unparsed)
    return list(stream), stats


def _merge_by_time(per_file: list[list[Event]]) -> list[Event]:
    """Merge files' events by their time; events without a time stay behind their predecessor.

    The order is that of sorting every event by (time, file, place in file), where an untimed event
    takes the time of the last timed one before it in its file. Each file's events almost always come
    in time order already: then a k-way merge gives that order without a key tuple per event (which
    took ~150 bytes an event, for every event of the run at once)."""
    if len(per_file) == 1:
        return per_file[0]
    if all(_in_time_order(evs) for evs in per_file):
        # heapq.merge takes equal keys from the earlier file first: the sort's (time, file, place)
        return [e for _t, e in heapq.merge(*map(_timed, per_file), key=operator.itemgetter(0))]
    keyed: list[tuple[float, int, int, Event]] = []
    for fi, evs in enumerate(per_file):
        last = float("-inf")
        for i, e in enumerate(evs):
            if e.t_s is not None:
                last = e.t_s
            keyed.append((last, fi, i, e))
    keyed.sort(key=lambda k: (k[0], k[1], k[2]))
    return [k[3] for k in keyed]


def _timed(evs: list[Event]) -> Iterator[tuple[float, Event]]:
    """(merge time, event): the event's time, else the last one before it in its file."""
    last = float("-inf")
    for e in evs:
        if e.t_s is not None:
            last = e.t_s
        yield last, e


def _in_time_order(evs: list[Event]) -> bool:
    """Does no event's merge time (see ``_timed``) come before its predecessor's? (False on a nan.)"""
    last = float("-inf")
    for e in evs:
        t = e.t_s
        if t is not None:
            if not t >= last:
                return False
            last = t
    return True


def load(
    paths: PathLike | Sequence[PathLike],
    engine: str | None = "auto",
    *,
    keep_unparsed: bool = True,
    stats: ReadStats | None = None,
    keep_literals: tuple[str, ...] = (),
    jobs: int = 1,
) -> Run:
    """Parse one run (one or several files) into a ``Run``.

    ``keep_unparsed=False`` reads sparsely (only lines holding an anchor are parsed: much faster on
    big logs); unparsed lines that hold one of ``keep_literals`` are kept all the same.
    ``stats`` (optional) is updated while reading (``stats.bytes``: for a progress display).
    ``jobs > 1``: each big file is parsed in ranges by that many processes (``logscope.parsers.chunks``),
    with the events of the serial parse, so the same run.
    Raises ``UnreadableInput`` when nothing in the input was text.
    """
    with fewer_collections():
        return _load(paths, engine, keep_unparsed, stats, keep_literals, jobs)


def _load(
    paths: PathLike | Sequence[PathLike],
    engine: str | None,
    keep_unparsed: bool,
    stats: ReadStats | None,
    keep_literals: tuple[str, ...],
    jobs: int,
) -> Run:
    files = expand_paths([paths] if isinstance(paths, str | os.PathLike) else paths)
    stats = stats if stats is not None else ReadStats()
    per_file: list[list[Event]] = []
    engines: list[str | None] = []
    for f in files:
        if _splittable(f, jobs):
            eng, evs = _split_file_events(f, engine, jobs, keep_unparsed, stats, keep_literals)
        else:
            eng, evs = iter_file_events(
                f, engine, stats=stats, keep_unparsed=keep_unparsed, keep_literals=keep_literals
            )
        got = list(evs)
        engines.append(eng)
        per_file.append(got)
    if nothing_read(stats, sum(1 for evs in per_file for e in evs if e.kind != "unparsed")):
        raise UnreadableInput(_nothing_read(files, stats))
    known = [e for e in engines if e]
    # the most frequent engine; on a tie the first file's (a server log before its client's output)
    run_engine = max(dict.fromkeys(known), key=known.count) if known else None
    if len(per_file) > 1:
        per_file = _align_clocks(per_file)
    return Run(files=files, engine=run_engine, events=_merge_by_time(per_file), stats=stats)


def load_for_report(
    paths: PathLike | Sequence[PathLike],
    engine: str | None = "auto",
    *,
    stats: ReadStats | None = None,
    jobs: int = 1,
) -> Run:
    """``load`` keeping just what a report reads: events, lines near a known kind, and the text lines
    analyses and digest rules grep for (``logscope.digest.text_anchors``). Gives the same report as a
    full ``load``, in bounded memory and at the sparse reader's speed (``jobs``: see ``load``)."""
    from logscope.digest import text_anchors

    return load(paths, engine, keep_unparsed=False, stats=stats, keep_literals=text_anchors(), jobs=jobs)


def _align_clocks(per_file: list[list[Event]]) -> list[list[Event]]:
    """Files were timed each from its own first stamp; this re-bases all on the earliest one.

    Only possible when stamps carry a date; vLLM's ``MM-DD HH:MM:SS`` has one (no year), SGLang's too.
    The lists are updated in place (each re-timed event replaces its original at once: a file's
    events are never held twice) and returned.
    """
    abs_first: list[float | None] = []
    for evs in per_file:
        first = next((e for e in evs if e.t_s is not None and e.time), None)
        abs_first.append(_abs_time(first.time) if first is not None and first.time else None)
    base = min((a for a in abs_first if a is not None), default=None)
    for evs, a in zip(per_file, abs_first, strict=True):
        if base is None or a is None or a == base:
            continue
        shift = a - base
        for k, e in enumerate(evs):
            if e.t_s is not None:
                evs[k] = copy_event(e, {"t_s": round(e.t_s + shift, 3)})
    return per_file


def _abs_time(time: str) -> float | None:
    """Seconds in a year-less calendar for a printed time (``11-30 12:04:45``, ``2026-11-30 12:04:45``)."""
    m = re.search(r"(?:(\d{4})-)?(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d(?:\.\d+)?)", time)
    if m is None:
        return None
    year = int(m.group(1) or 0)
    mon, day = int(m.group(2)), int(m.group(3))
    doy = CUM_DAYS[mon - 1] + day - 1 if 1 <= mon <= 12 else 0
    return (year * 365 + doy) * 86400.0 + int(m.group(4)) * 3600 + int(m.group(5)) * 60 + float(m.group(6))


def nothing_read(stats: ReadStats, known_events: int) -> bool:
    """True when the input held no text: no text line at all, or (no event of a known kind and) under
    10 % of text lines among binary ones (random bytes hold short runs that look like text)."""
    if stats.text_lines == 0:
        return True
    return known_events == 0 and stats.text_lines * 10 < stats.text_lines + stats.junk_lines


def _nothing_read(files: list[str], stats: ReadStats) -> str:
    names = ", ".join(files)
    if stats.bytes == 0:
        return f"{names}: the input is empty"
    note = f" ({stats.notes[0]})" if stats.notes else ""
    return f"{names}: no text could be read; this does not look like a log file{note}"


__all__ = ["LogscopeError", "Run", "iter_events", "iter_file_events", "load"]
