"""One big file parsed by several processes, with exactly the events of the serial run.

Why: on a log where nearly every line is an event (SGLang batch lines, vLLM request logging) the
parse costs tens of microseconds a line, and one core reads a few MB/s. Files are already spread
over processes one per task; this module does the same for the ranges of one file.

How: the file is cut at line ends into ranges of about ``CHUNK`` bytes, each cut placed before a
line that starts with the engine's header and a timestamp. Each range is parsed in a worker as if it
were a file, with the run's clock started at the file's first stamp; its line numbers are then
shifted by the lines before it. That gives the serial run's events when the serial parser, arriving at the cut,
would start a new record there and needs nothing it remembers from before. Each worker reports what
decides that (``Part``), and ``_joins`` checks every cut: no open block (a client's result table)
and no ``\\r\\n``-continued record at the end of the range before it; the clock never rolled over a
year nor read a time-only stamp (those depend on earlier stamps); the sparse reader's kept records
(the file's first timestamped record, a record held for an untimed event) are not needed across
it. A range whose cut fails a check is parsed again together with the range before it, so the result
is always the serial one; only the speed depends on the checks.

Read sparsely, a range after the first skips from its first line on (the serial run reads only the
file's first lines whole). The sparse reader hands an untimed event over together with the lines back
to the timestamped record it takes its time from (``framing.Sparse.timed``); it looks back no further
than the range's start, but it need not: the range starts with a timestamped line, where its look back
ends anyway (only past its bound is the record not found; ``_joins`` then sends the range back).
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from logscope.collector import fewer_collections
from logscope.events import EVENT_TYPES, Event, copy_event, restore_event
from logscope.parsers import dialect, structured
from logscope.parsers.framing import ReadStats, Sparse, _decode, is_gzip, read_lines
from logscope.parsers.pipeline import Clock, Parser
from logscope.parsers.scan import cached_scanner
from logscope.pools import process_pool

CHUNK = 8 << 20  # bytes per range: thousands of lines (a range costs little to start), few in memory
_SEEK = 1 << 20  # how far past the target offset a cut may move to find a line with a header


class LineRenderer(Protocol):
    """Writes events as text lines in the workers (``render.jsonl.NumberedLines``): ``render`` an
    event numbered within its range, ``renumber`` such a line by the lines before the range."""

    def render(self, ev: Event) -> bytes: ...

    def renumber(self, line: bytes, shift: int) -> bytes: ...


@dataclass(frozen=True)
class Job:
    """One range of one file to parse: ``[start, end)`` in bytes, both at line starts."""

    path: str
    start: int
    end: int
    engine: str | None
    keep_unparsed: bool
    keep_literals: tuple[str, ...]
    first: float | None  # the file's first stamp in clock seconds (where the run's clock starts)
    scan: tuple[str, ...] = ()  # sparse reading: the literals that make a line matter
    sparse_head: int = 3000  # sparse reading: the file's lines read whole first (as the serial run does)
    lines: LineRenderer | None = None  # a worker sends its events as text lines (kind, line), not values


@dataclass
class Part:
    """A range's events and what the cut checks need to know of its start and its end."""

    job: Job
    events: list[Event]
    stats: ReadStats
    first: float | None = None  # the clock's first stamp as this range saw it
    low: float | None = None  # the earliest stamp in the range (clock seconds)
    last: float | None = None  # the clock's latest stamp at the range's end
    odd_clock: bool = False  # a time-only stamp, or a year roll-over: depends on earlier ranges
    open_at_end: bool = False  # a block or a \r\n-continued record was open when the range ended
    start_kept: bool = True  # (sparse) the run's first timestamped record was kept by the range's end
    wants_held: bool = False  # (sparse) the first event has no time and would take a held record
    shift: int | None = None  # lines to add to the events' numbers (None: the lines before the range)
    rows: list[tuple[str, tuple[object, ...]]] | None = None  # the events as plain values (see _work)
    lines: tuple[list[str], bytes, list[int]] | None = None  # or as text: kinds, lines, where each ends


class _Watch(Clock):
    """The run's clock, noting what makes a range's times depend on the ranges before it."""

    def __init__(self, first: float | None) -> None:
        super().__init__()
        self.first = first
        self.low: float | None = None
        self.odd = False

    def seconds(self, stamp: tuple[int | None, int | None, int | None, float]) -> float:
        if stamp[1] is None or stamp[2] is None:
            self.odd = True  # time only: the day is carried over from the stamps before
        t = super().seconds(stamp)
        if self._year_offset:
            self.odd = True
        self.low = t if self.low is None else min(self.low, t)
        return t


def parse_range(job: Job) -> Part:
    """Parse one range in this process (a worker's task)."""
    stats = ReadStats()
    parser = Parser(dialect(job.engine), keep_unparsed=job.keep_unparsed, keep_literals=job.keep_literals)
    # the run's clock starts at the file's first stamp: a later range is told it; the first range
    # finds it as the serial run does (read sparsely, the serial run is told it too: ``first_seconds``)
    clock = _Watch(job.first if job.start > 0 or job.scan else None)
    parser.clock = clock
    if job.start > 0:
        parser.start_kept = True  # the serial run kept the file's first record in an earlier range
    sparse = None
    if job.scan:
        parser.sparse = True
        # only the file's first lines are read whole (the serial run's head): a later range needs
        # nothing of them (engine, first stamp and first record are known) and skips from its start
        sparse = Sparse(
            cached_scanner(job.scan),
            parser.wants_next,
            head=job.sparse_head if job.start == 0 else 0,
            timed=parser.dialect.starts_timed,
        )
    with fewer_collections():  # a range's events all stay alive until sent
        events = list(parser.events(read_lines(job.path, stats, sparse, byte_range=(job.start, job.end))))
    return Part(
        job=job,
        events=events,
        stats=stats,
        first=clock.first,
        low=clock.low,
        last=clock.last,
        odd_clock=clock.odd,
        open_at_end=parser.open_at_end,
        start_kept=parser.start_kept,
        wants_held=parser.wants_held,
    )


def _work(job: Job) -> Part:
    """``parse_range`` in a worker process: the events travel back as plain tuples (kind, field values
    in the model's order), which pickle several times faster than models; ``_emit`` rebuilds them.
    When the job has a ``LineRenderer``, they travel as the text lines the parent will write."""
    part = parse_range(job)
    if job.lines is not None:
        # one buffer, not a bytes object per line: orjson's results keep their oversized buffers
        # (~7 KB a line), a range's worth of which took hundreds of MB
        render = job.lines.render
        kinds: list[str] = []
        ends: list[int] = []
        buf = bytearray()
        for e in part.events:
            buf += render(e)
            kinds.append(e.kind)
            ends.append(len(buf))
        part.lines = (kinds, bytes(buf), ends)
    else:
        part.rows = [(e.kind, tuple(e.__dict__.values())) for e in part.events]
    part.events = []
    return part


def _windowed(pool: ProcessPoolExecutor, jobs: list[Job], ahead: int) -> Iterator[Part]:
    """``pool.map(_work, jobs)`` with at most ``ahead`` ranges in flight or waiting to be read, so that
    memory holds a few ranges' events, not the file's."""
    queue: deque[Future[Part]] = deque()
    todo = iter(jobs)
    for j in itertools.islice(todo, ahead):
        queue.append(pool.submit(_work, j))
    while queue:
        done = queue.popleft().result()
        nxt = next(todo, None)
        if nxt is not None:
            queue.append(pool.submit(_work, nxt))
        yield done


def _joins(before: Part, after: Part) -> bool:
    """Would the serial parser, at the start of ``after``, be where ``after``'s worker started?"""
    if before.open_at_end or after.odd_clock or before.odd_clock:
        return False
    if before.first != after.job.first:
        return False
    if before.last is not None and after.low is not None and before.last - after.low > 150 * 86400:
        return False  # a jump back of months: the serial clock may count a new year here
    if not after.job.keep_unparsed:
        # The range's first event has no time and no timestamped record went before it in the range:
        # the serial run shows it after one from further back. The range starts with a timestamped line,
        # so this happens only past the sparse reader's look-back bound (``framing.WALK_LINES``), where
        # what the serial run kept before the cut (maybe a line it was asked for there, which the range
        # skipped) is not known here: parse it again with the range before.
        if not before.start_kept or after.wants_held:
            return False
    return True


def cuts(path: str, engine: str | None, chunk: int | None = None) -> list[int]:
    """Byte offsets that cut ``path`` into ranges, each before a line with the engine's header and a
    timestamp (a range then starts a timestamped record, which ends every look back of the sparse
    reader in the range, as it would in the serial run)."""
    chunk = chunk or CHUNK
    size = os.path.getsize(path)
    starts_timed = dialect(engine).starts_timed
    out = [0]
    with open(path, "rb") as fh:
        target = chunk
        while target < size - chunk // 2:
            fh.seek(target)
            window = fh.read(_SEEK)
            pos = window.find(b"\n") + 1
            found = None
            while 0 < pos < len(window):
                nl = window.find(b"\n", pos)
                if nl < 0:
                    break
                text = _decode(window[pos:nl])[0].rstrip("\r")  # as framing reads the line
                if starts_timed(text):
                    found = target + pos
                    break
                pos = nl + 1
            if found is None:
                target += _SEEK
                continue
            out.append(found)
            target = found + chunk
    return out


def can_split(path: str, jobs: int) -> bool:
    """Worth cutting: a plain (not gzip) regular file of at least two ranges, and more than one job."""
    if jobs < 2 or path == "-" or not os.path.isfile(path) or is_gzip(path):
        return False
    if os.path.getsize(path) < 2 * CHUNK:
        return False
    with open(path, "rb") as fh:  # a JSON document or a newest-first export is read whole (framing)
        return not structured.needs_whole(fh.read(1 << 16))


def iter_split_events(
    path: str,
    engine: str | None,
    *,
    jobs: int,
    stats: ReadStats,
    keep_unparsed: bool,
    first: float | None,
    keep_literals: tuple[str, ...] = (),
    scan: tuple[str, ...] = (),
    chunk: int | None = None,
    sparse_head: int = 3000,
) -> Iterator[Event]:
    """The events of one file parsed in ranges by ``jobs`` processes, in the serial run's order.

    ``first``: the file's first stamp in clock seconds (``pipeline.first_seconds`` of its first
    lines, which the caller has read already to detect the engine)."""
    return _split(
        path, engine, jobs, stats, keep_unparsed, first, keep_literals, scan, chunk, sparse_head, None, _emit
    )


def iter_split_lines(
    path: str,
    engine: str | None,
    *,
    jobs: int,
    stats: ReadStats,
    keep_unparsed: bool,
    first: float | None,
    lines: LineRenderer,
    keep_literals: tuple[str, ...] = (),
    scan: tuple[str, ...] = (),
    chunk: int | None = None,
    sparse_head: int = 3000,
) -> Iterator[tuple[str, bytes]]:
    """``iter_split_events`` as (kind, text line) pairs, the lines written by the workers (``lines``):
    on an event-dense log, rebuilding and encoding every event in the parent was its bottleneck."""

    def emit(part: Part, sent: ReadStats, run: ReadStats) -> Iterator[tuple[str, bytes]]:
        return _emit_lines(part, sent, run, lines)

    return _split(
        path, engine, jobs, stats, keep_unparsed, first, keep_literals, scan, chunk, sparse_head, lines, emit
    )


T = TypeVar("T")


def _split(
    path: str,
    engine: str | None,
    jobs: int,
    stats: ReadStats,
    keep_unparsed: bool,
    first: float | None,
    keep_literals: tuple[str, ...],
    scan: tuple[str, ...],
    chunk: int | None,
    sparse_head: int,
    lines: LineRenderer | None,
    emit: Callable[[Part, ReadStats, ReadStats], Iterator[T]],
) -> Iterator[T]:
    """The ranges' output in order: ``emit`` of each range once its cut is known to be clean."""
    offsets = cuts(path, engine, chunk)
    size = os.path.getsize(path)
    bounds = list(zip(offsets, [*offsets[1:], size], strict=True))

    def job(start: int, end: int) -> Job:
        return Job(path, start, end, engine, keep_unparsed, keep_literals, first, scan, sparse_head, lines)

    stats.files.append(path)
    if first is None:  # no stamp to start the clock of later ranges: one range, here
        yield from emit(parse_range(job(0, size)), ReadStats(), stats)
        return
    sent = ReadStats()  # the counts of the ranges whose events went out
    emitted: Part | None = None  # the last range whose events went out
    todo = [job(s, e) for s, e in bounds]
    with process_pool(jobs) if jobs > 1 else _InProcess() as pool:  # logscope.pools: safe after threads
        pending: Part | None = None
        parts = (
            _windowed(pool, todo, jobs + 1)
            if isinstance(pool, ProcessPoolExecutor)
            else map(parse_range, todo)
        )
        for part in parts:
            if pending is not None and not _joins(pending, part):
                # the cut is not clean: parse both ranges as one (here; rare)
                part = parse_range(job(pending.job.start, part.job.end))
                if emitted is not None and not _joins(emitted, part):
                    # nor is the cut before them: from the file's start, keeping what was not sent yet
                    whole = parse_range(job(0, part.job.end))
                    whole.events = [e for e in whole.events if e.line > sent.lines]
                    whole.shift = 0  # numbered from the file's start already
                    for name in ("lines", "bytes", "text_lines", "junk_lines"):
                        setattr(whole.stats, name, getattr(whole.stats, name) - getattr(sent, name))
                    whole.stats.notes = whole.stats.notes[len(sent.notes) :]
                    part = whole
            elif pending is not None:
                yield from emit(pending, sent, stats)
                emitted = pending
            pending = part
        if pending is not None:
            yield from emit(pending, sent, stats)


class _InProcess:
    """``jobs=1``: the ranges one after the other in this process (the tests' way to check the cuts)."""

    def __enter__(self) -> _InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _shift(part: Part, sent: ReadStats, stats: ReadStats) -> int:
    """Lines to add to a range's numbers (the lines sent before it); its counts go to ``sent`` and
    the run's."""
    shift = part.shift if part.shift is not None else sent.lines
    sent.add(part.stats, files=False)
    stats.add(part.stats, files=False)
    return shift


def _emit_lines(
    part: Part, sent: ReadStats, stats: ReadStats, lines: LineRenderer
) -> Iterator[tuple[str, bytes]]:
    """A range's (kind, text line) pairs with file line numbers."""
    shift = _shift(part, sent, stats)
    if part.lines is not None:  # from a worker
        kinds, text, ends = part.lines
        renumber = lines.renumber
        start = 0
        for kind, end in zip(kinds, ends, strict=True):
            line = text[start:end]
            yield kind, (renumber(line, shift) if shift else line)
            start = end
        return
    for e in part.events:  # parsed here (a cut that was not clean)
        text = lines.render(e)
        yield e.kind, (lines.renumber(text, shift) if shift else text)


def _emit(part: Part, sent: ReadStats, stats: ReadStats) -> Iterator[Event]:
    """A range's events with file line numbers."""
    shift = _shift(part, sent, stats)
    if part.rows is not None:  # from a worker: rebuild, numbering from the file's start
        names = {k: tuple(EVENT_TYPES[k].model_fields) for k in {kind for kind, _v in part.rows}}
        for kind, values in part.rows:
            d: dict[str, Any] = dict(zip(names[kind], values, strict=True))
            if shift:
                d["line"] += shift
                if d["end_line"] is not None:
                    d["end_line"] += shift
            yield restore_event(kind, d)
        return
    if not shift:
        yield from part.events
        return
    for e in part.events:
        update = {"line": e.line + shift}
        if e.end_line is not None:
            update["end_line"] = e.end_line + shift
        yield copy_event(e, update)
