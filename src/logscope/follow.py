"""Follow a growing log: read what was appended, parse it, and re-analyse, as often as asked.

    from logscope.follow import Follower
    with Follower("vllm.log") as f:
        snap = f.poll()                  # everything so far
        ...                              # the server writes more
        snap = f.poll()                  # what was appended: snap.new_events, snap.new_findings
        final = f.close()                # the last record flushed, the final report
    for snap in Follower("vllm.log").follow(interval=2.0, stop=stop_event): ...

The file is read like ``tail -F`` does: from its start, then what is appended. When the path names a
new file (log rotation: the old file renamed, a new one created; seen as a change of inode), the rest
of the old file is read, then the new one from its start. When the file gets shorter (truncated in
place, ``copytruncate``), it is read again from its start. Either way the run goes on (one clock,
one run); the events read before carry ``file = "<path> (before rotation N)"`` or ``"(before
truncation N)"``, since their line numbers no longer point into ``<path>``. A truncation followed
by more writing than was there before the next poll cannot be told from appending (as with tail).

Lines are framed as ``read_lines`` frames them (a line is taken once its line break is written) and
parsed by one ``Parser`` that lives in a thread of its own and waits there for the next line: a record
spanning several lines (a traceback) is joined whatever the timing of the writes, and the events are
those ``logscope.load`` gives for the same file. The newest record is given once the next line
starts (it could continue onto it) or at ``close()``. The engine is detected from the first lines
(``DETECT_EARLY`` of them, or fewer once the writing pauses; see ``_decide``).

The ``logscope analyze --follow`` view (a rich Live panel over these snapshots) lives with the
renderers, in ``logscope.render.follow_view``: this module only reads and analyses.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from logscope.api import Run
from logscope.errors import LogscopeError, UnreadableInput
from logscope.events import Event, copy_event
from logscope.parsers import detect, dialect
from logscope.parsers.framing import BLOCK, MAX_LINE, Line, ReadStats, _decode, _lines_of
from logscope.parsers.pipeline import Parser

if TYPE_CHECKING:
    from logscope.analyses.report import Report
    from logscope.digest.finding import Finding

DETECT_LINES = 3000  # as ``iter_file_events``: the engine is decided on at most this many first lines
DETECT_EARLY = 100  # ... or earlier, once this many lines agree (a server's start-up prints hundreds)


@dataclass(frozen=True)
class Snapshot:
    """The state of a followed log after one read. ``new_*`` hold what this read added."""

    number: int
    path: str
    exists: bool
    engine: str | None
    lines: int
    bytes: int
    events: int
    counts: dict[str, int]
    new_events: tuple[Event, ...]
    last: dict[str, Event]  # the latest event of each kind
    report: Report | None
    findings: tuple[Finding, ...]
    new_findings: tuple[Finding, ...]
    rotations: int
    truncations: int
    final: bool = False
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Did this read add anything (events, findings)?"""
        return bool(self.new_events or self.new_findings)


def finding_key(f: Finding) -> tuple[str, str]:
    """What makes a finding "the same" while its numbers move as the log grows."""
    return (f.code, f.title)


class _Feed:
    """A ``Parser`` running in its own thread over lines handed to it.

    The parser pulls lines from a queue and blocks there for the next: its record state (a traceback
    being joined, an open result block) waits with it. ``sync`` returns once every line handed over so
    far was parsed and its events appended to ``sink`` (the parser asked for the next line after them,
    so all they produced has been yielded); ``finish`` ends the input, which flushes the last record.
    """

    def __init__(self, parser: Parser, sink: list[Event]) -> None:
        self._q: queue.SimpleQueue[list[Line] | threading.Event | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._work, args=(parser, sink), name="logscope-follow-parser", daemon=True
        )
        self._thread.start()

    def _lines(self) -> Iterator[Line]:
        while True:
            item = self._q.get()
            if item is None:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            yield from item

    def _work(self, parser: Parser, sink: list[Event]) -> None:
        try:
            for ev in parser.events(self._lines()):
                sink.append(ev)
        except BaseException as exc:  # handed to the reading thread by sync/finish
            self._error = exc

    def put(self, lines: list[Line]) -> None:
        if lines:
            self._q.put(lines)

    def sync(self) -> None:
        done = threading.Event()
        self._q.put(done)
        while not done.wait(0.2):
            if not self._thread.is_alive():
                break
        self._raise()

    def finish(self) -> None:
        self._q.put(None)
        self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error


@dataclass
class _Generation:
    """Lines of one file generation read before the engine was known."""

    lines: list[Line] = field(default_factory=list)
    ended: bool = False


class Follower:
    """Follows one growing log file (see the module's doc). Not thread-safe: one reader drives it."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        engine: str | None = "auto",
        *,
        analyze: bool = True,
        keep_unparsed: bool = True,
    ) -> None:
        self.path = os.fspath(path)
        if self.path == "-":
            raise LogscopeError("--follow reads a file, not standard input")
        self.analyze = analyze
        self.keep_unparsed = keep_unparsed
        self._auto = engine == "auto"
        self.engine: str | None = None if self._auto else engine
        self.events: list[Event] = []
        self.stats = ReadStats(files=[self.path])
        self.rotations = 0
        self.truncations = 0
        self._fh: IO[bytes] | None = None
        self._ident: tuple[int, int] | None = None
        self._pos = 0
        self._partial = b""
        self._skipping = False
        self._number = 0  # line number in the current file generation
        self._generation_start = 0  # index in ``events`` of the first event of the current generation
        self._parser: Parser | None = None
        self._feed: _Feed | None = None
        self._pending: list[_Generation] = [_Generation()]  # lines waiting for the engine
        self._grew = False
        self._snapshots = 0
        self._delivered = 0
        self._counts: dict[str, int] = {}
        self._last: dict[str, Event] = {}
        self._report: Report | None = None
        self._analyzed = -1
        self._seen: set[tuple[str, str]] = set()
        self._final: Snapshot | None = None
        if not self._auto:
            self._start()

    # -- reading ---------------------------------------------------------------------------------
    def _open(self) -> bool:
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - kept open while following, closed by close()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise UnreadableInput(f"{self.path}: cannot be opened ({exc.strerror or exc})") from exc
        st = os.fstat(fh.fileno())
        self._fh, self._ident, self._pos = fh, (st.st_dev, st.st_ino), 0
        return True

    def _read(self) -> None:
        """Read what was appended; follow a rotation or a truncation."""
        if self._fh is None and not self._open():
            return
        self._drain()
        try:
            st = os.stat(self.path)
        except FileNotFoundError:  # renamed away and no new file yet: the old handle is all there is
            return
        if (st.st_dev, st.st_ino) != self._ident:
            self._drain()  # what was written to the old file before the switch
            self._end_generation(f"before rotation {self.rotations + 1}")
            self.rotations += 1
            assert self._fh is not None
            self._fh.close()
            self._fh = None
            if self._open():
                self._drain()
            return
        assert self._fh is not None
        if os.fstat(self._fh.fileno()).st_size < self._pos:
            self._end_generation(f"before truncation {self.truncations + 1}")
            self.truncations += 1
            self._fh.seek(0)
            self._pos = 0
            self._drain()

    def _drain(self) -> None:
        assert self._fh is not None
        while chunk := self._fh.read(BLOCK):
            if self._pos == 0 and chunk[:2] == b"\x1f\x8b":
                raise LogscopeError(
                    f"{self.path}: is gzip-compressed; --follow reads a plain-text log as it is written"
                )
            self._pos += len(chunk)
            self.stats.bytes += len(chunk)
            self._grew = True
            self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        buf = self._partial + chunk
        if self._skipping:  # the rest of an overlong line
            i = buf.find(b"\n")
            if i < 0:
                self._partial = b""
                return
            buf, self._skipping = buf[i + 1 :], False
        # whole lines only: up to the last \n, or the last lone \r (a progress bar's redraw); a \r at
        # the very end may be the first half of \r\n
        cut = max(buf.rfind(b"\n"), buf.rfind(b"\r", 0, len(buf) - 1)) + 1
        self._partial = buf[cut:]
        if cut:
            self._emit(buf[:cut])
        if len(self._partial) > MAX_LINE:
            self.stats.notes.append(
                f"{self.path}: a line longer than {MAX_LINE // 1024} KiB was cut after its "
                f"first {MAX_LINE // 1024} KiB"
            )
            self._emit(self._partial[:MAX_LINE] + b"\n")
            self._partial, self._skipping = b"", True

    def _emit(self, block: bytes) -> None:
        text, junk = _decode(block)
        lines = list(_lines_of(text, self.path, self._number, self.stats, junk))
        if not lines:
            return
        self._number = lines[-1].number
        self.stats.lines += len(lines)
        if self._feed is not None:
            self._feed.put(lines)
        else:
            self._pending[-1].lines.extend(lines)

    def _end_generation(self, label: str | None) -> None:
        """The current file is done (rotated away, truncated, or the end): its last line and records
        are flushed, and its events renamed after ``label`` (its line numbers no longer point into
        ``path``)."""
        if self._partial and not self._skipping:
            self._emit(self._partial)
        self._partial, self._skipping, self._number = b"", False, 0
        if self._feed is not None and self._parser is not None:
            self._feed.finish()
            self._feed = _Feed(self._parser, self.events) if label is not None else None
        elif label is not None:
            self._pending[-1].ended = True
            self._pending.append(_Generation())
        if label is not None:
            self._relabel(label)

    def _relabel(self, label: str) -> None:
        name = f"{self.path} ({label})"
        for i in range(self._generation_start, len(self.events)):
            e = self.events[i]
            if e.file == self.path:
                self.events[i] = copy_event(e, {"file": name})
        for g in self._pending:
            if not g.ended:
                continue
            for ln in g.lines:
                if ln.file == self.path:
                    ln.file = name
        self._generation_start = len(self.events)

    # -- parsing ---------------------------------------------------------------------------------
    def _decide(self, final: bool) -> None:
        """Pick the engine from the first lines once they say it clearly: at ``DETECT_EARLY`` lines
        or when the log paused (a start-up burst ended), else at ``DETECT_LINES`` lines or the end."""
        if self._parser is not None:
            return
        head: list[Line] = []
        for g in self._pending:
            head.extend(g.lines[: DETECT_LINES - len(head)])
        if not head and not final:
            return
        found = detect(head, DETECT_LINES)
        paused = not self._grew
        if (
            final
            or len(head) >= DETECT_LINES
            or (found is not None and (len(head) >= DETECT_EARLY or paused))
        ):
            self.engine = found
            self._start()

    def _start(self) -> None:
        self._parser = Parser(dialect(self.engine), keep_unparsed=self.keep_unparsed)
        pending, self._pending = self._pending, []
        for g in pending:
            feed = _Feed(self._parser, self.events)
            feed.put(g.lines)
            if g.ended:
                feed.finish()
                self._generation_start = len(self.events)
            else:
                self._feed = feed
        if self._feed is None:
            self._feed = _Feed(self._parser, self.events)

    # -- snapshots -------------------------------------------------------------------------------
    def poll(self) -> Snapshot:
        """Read and parse what was appended since the last call; analyse when there is something new."""
        if self._final is not None:
            return self._final
        self._grew = False
        self._read()
        self._decide(final=False)
        if self._feed is not None:
            self._feed.sync()
        return self._snapshot(final=False)

    def close(self) -> Snapshot:
        """Read the rest, flush the last line and record, and give the final snapshot."""
        if self._final is not None:
            return self._final
        self._grew = False
        try:
            self._read()
            self._decide(final=True)
            self._end_generation(None)
        finally:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
        self._final = self._snapshot(final=True)
        return self._final

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self) -> Run:
        """The run read so far (all of it after ``close``)."""
        stats = ReadStats(
            files=list(self.stats.files),
            lines=self.stats.lines,
            bytes=self.stats.bytes,
            text_lines=self.stats.text_lines,
            junk_lines=self.stats.junk_lines,
            notes=list(self.stats.notes),
        )
        return Run(files=[self.path], engine=self.engine, events=list(self.events), stats=stats)

    def _snapshot(self, final: bool) -> Snapshot:
        new = tuple(self.events[self._delivered :])
        self._delivered = len(self.events)
        for e in new:
            self._counts[e.kind] = self._counts.get(e.kind, 0) + 1
            self._last[e.kind] = e
        new_findings: list[Finding] = []
        if self.analyze and self.events and (len(self.events) != self._analyzed or final):
            self._report = self.run().analyze()
            self._analyzed = len(self.events)
            for f in self._report.findings if self._report is not None else []:
                key = finding_key(f)
                if key not in self._seen:
                    self._seen.add(key)
                    new_findings.append(f)
        self._snapshots += 1
        rep = self._report
        return Snapshot(
            number=self._snapshots,
            path=self.path,
            exists=os.path.exists(self.path),
            engine=self.engine,
            lines=self.stats.lines,
            bytes=self.stats.bytes,
            events=len(self.events),
            counts=dict(self._counts),
            new_events=new,
            last=dict(self._last),
            report=rep,
            findings=tuple(rep.findings) if rep is not None else (),
            new_findings=tuple(new_findings),
            rotations=self.rotations,
            truncations=self.truncations,
            final=final,
            notes=tuple(self.stats.notes),
        )

    def follow(self, interval: float = 2.0, stop: threading.Event | None = None) -> Iterator[Snapshot]:
        """Snapshots while the log grows: the first at once, then one after each ``interval`` in which
        something was added, until ``stop`` is set; the last one is ``close()``'s (``final``)."""
        stop = stop if stop is not None else threading.Event()
        try:
            yield self.poll()
            while not stop.wait(interval):
                snap = self.poll()
                if snap.changed:
                    yield snap
        except GeneratorExit:
            self.close()
            raise
        yield self.close()


__all__ = ["DETECT_EARLY", "DETECT_LINES", "Follower", "Snapshot", "finding_key"]
