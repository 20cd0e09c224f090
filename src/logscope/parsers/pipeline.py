"""From physical lines to typed events: envelopes, header, record joining, grammar dispatch.

One pass, streaming. Per line the work is small (peel envelopes, one header regex); a record reaches
a message grammar only when it contains one of that grammar's anchors. Every record becomes exactly
one event: a known kind, a ``warning``/``error`` by its level, or ``unparsed`` (with the kind it
resembles when an anchor was present, so ``coverage`` can point at new formats).

Records: a log call can span several physical lines. vLLM's formatter repeats the full prefix on
each line of a multi-line message and ends all but the last with ``\\r\\n``; the interpreter prints
tracebacks as bare lines (maybe behind a process prefix). Both are joined here into one record whose
``line`` is its first physical line. Block rules (``BlockRule``) join a third kind: prefix-less
``print()`` blocks such as a benchmark client's result table, one block = one record, also inside a
server log where engine lines may be written between the block's lines.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from logscope.events import Error, Event, Warning_, make_event
from logscope.parsers import bench
from logscope.parsers.envelopes import Envelope, inner_process, peel, ranks_of
from logscope.parsers.framing import Line
from logscope.parsers.grammar import Grammar

LEVELS = {"DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL"}


@dataclass(slots=True)
class Header:
    """What an engine's log prefix says about a line.

    Never changed once built: a dialect hands the same Header to every line that starts with the
    same prefix text (lines in a row mostly do), and records share it. (Not ``frozen``: that would
    make each of the headers that are built dearer.)"""

    level: str | None
    time: str | None
    source: str | None
    stamp: tuple[int | None, int | None, int | None, float] | None  # (year, month, day, seconds of day)
    process: str | None = None  # engine-side rank tag, e.g. "DP0 TP3"
    tp_rank: int | None = None
    dp_rank: int | None = None


@dataclass(frozen=True)
class BlockRule:
    """Prefix-less lines that form one record (a client's result table printed with ``print()``).

    ``opens(text)``: this line starts a block. ``accepts(block, text)``: for a following line without
    an engine header, given the block's text so far: ``"more"`` (take it), ``"last"`` (take it, the
    block is complete) or None (the block ended before it). Lines with an engine header written
    into the block become records of their own, emitted after the block; the block's raw text keeps
    an empty line in their place, so that its lines still map one to one onto the file's.
    ``grammars`` parse the block when the dialect's own grammars do not.
    """

    name: str
    opens: Callable[[str], bool]
    accepts: Callable[[str, str], str | None]
    grammars: tuple[Grammar, ...] = ()
    anchors: tuple[str, ...] = ()  # literals every opening line holds (for the sparse reader)


BLOCK_RULES: tuple[BlockRule, ...] = (
    BlockRule(
        "bench_result",
        bench.opens,
        bench.accepts,
        tuple(bench.BENCH_GRAMMARS),
        ("Benchmark Result", "Successful requests", "Backend:"),
    ),
)
_MAX_INTERLEAVED = 8  # engine records held inside an open block before the block is given up
_MAX_PENDING = 256  # records held behind one set aside (another process's traceback) before it is given up


def _in(rec: Record, records: list[Record]) -> bool:
    return any(r is rec for r in records)


def _ready(
    pending: list[Record], parked: dict[str | None, Record], open_rec: Record | None
) -> Iterator[Record]:
    """Take from the front of ``pending`` the records that are whole (neither set aside nor in progress)."""
    while pending:
        first = pending[0]
        if first is open_rec or any(first is r for r in parked.values()):
            return
        yield pending.pop(0)


def cut_at(text: str, starts: Iterable[int], accept: Callable[[str], bool] = bool) -> list[str]:
    """``text`` cut before each of ``starts`` (in order) where ``accept(piece before it)`` holds.

    The pieces are exact slices: joined, they give ``text`` back (raw text stays whole)."""
    pieces: list[str] = []
    start = 0
    for pos in starts:
        if pos <= start or not accept(text[start:pos]):
            continue
        pieces.append(text[start:pos])
        start = pos
    pieces.append(text[start:])
    return pieces


class _AnchorMatcher:
    """Which of a list of literals occur in a text, in one Hyperscan pass (None without Hyperscan)."""

    def __init__(self, literals: list[str]) -> None:
        self._db: Any = None
        self._found: list[int] = []
        try:
            import hyperscan
        except ImportError:
            return
        exprs = [b"".join(b"\\x%02x" % c for c in lit.encode("utf-8")) for lit in literals]
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(
            expressions=exprs,
            ids=list(range(len(exprs))),
            elements=len(exprs),
            flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(exprs),
        )
        self._db = db
        # a scratch space of our own, passed to every scan: without it each call costs ~0.8 µs more
        self._scan = functools.partial(db.scan, match_event_handler=self._on, scratch=hyperscan.Scratch(db))

    def _on(self, idx: int, _from: int, _to: int, _flags: int, _ctx: object) -> None:
        self._found.append(idx)

    def find(self, text: str) -> list[int] | None:
        if self._db is None:
            return None
        found: list[int] = []
        self._found = found
        self._scan(text.encode("utf-8", "surrogatepass"))
        if len(found) > 1:
            found.sort()
        return found


class Dialect:
    """How one engine prints: its header, its grammars, its quirks. Subclasses override."""

    name: str | None = None
    blocks: tuple[BlockRule, ...] = BLOCK_RULES
    markers: tuple[str, ...] = ()  # line starts only this engine's output has (weighed by ``detect``)
    crlf_continues = True  # a line ending in \r\n may continue into the next one with the same prefix (vLLM)

    def __init__(self, grammars: Iterable[Grammar]) -> None:
        self.grammars = list(grammars)
        table: dict[str, list[Grammar]] = {}
        for g in self.grammars:
            for a in g.anchors:
                table.setdefault(a, []).append(g)
        order = {id(g): i for i, g in enumerate(self.grammars)}
        self._anchors = [(a, sorted(gs, key=lambda g: order[id(g)])) for a, gs in table.items()]
        self._order = order
        self._matcher: _AnchorMatcher | None = None

    # -- overridable hooks -------------------------------------------------------------------
    def header(self, text: str) -> tuple[Header, str] | None:
        """(header, message) when ``text`` starts with this engine's prefix."""
        return None

    def seek_header(self, text: str) -> int:
        """Where this engine's own header starts inside ``text``, a line whose start is no header
        (-1: nowhere). Asked only of such lines (a wrapper, a stack of process prefixes, a markdown
        bullet before the record): it must be cheap and anchored on what every header holds."""
        return -1

    def find_header(self, text: str) -> tuple[Header, str, int] | None:
        """(header, message, start) of the record in ``text``: its header at the start (start 0), or
        found further in (``seek_header``); the text before ``start`` is the record's prefix."""
        parsed = self.header(text)
        if parsed is not None:
            return parsed[0], parsed[1], 0
        pos = self.seek_header(text)
        if pos > 0:
            parsed = self.header(text[pos:])
            if parsed is not None:
                return parsed[0], parsed[1], pos
        return None

    def split_glued(self, text: str) -> list[str]:
        """Pieces of a physical line that holds several records written into each other.

        Exact slices of ``text`` in order (their concatenation is ``text``), so raw text is kept whole.
        """
        return [text]

    def envelope(self, text: str) -> Envelope:
        """Peel outer layers; a dialect whose own prefix looks like an outer stamp keeps it."""
        return peel(text)

    def continues(self, message: str, text: str) -> bool:
        """Does a line without a header continue the record ``message`` (beyond tracebacks)?"""
        return False

    def starts_timed(self, text: str) -> bool:
        """Does the physical line ``text`` start a record with a timestamp (a stamped engine header)?

        The sparse reader's ``Sparse.timed``: a line it hands over after skipped ones and that is no
        such line may hold an event without a time, shown after the last timestamped record before it
        (``Parser.events``); the reader then hands that record over too. The line is split as
        ``Parser.records`` splits it; its first record decides. Also where ``parsers.chunks`` cuts."""
        parsed = self.find_header(self.split_glued(self.envelope(text).text)[0])
        return parsed is not None and parsed[0].stamp is not None

    def may_continue(self, message: str) -> bool:
        """Could some next line continue ``message`` via ``continues``? (a cheap superset; lets the
        sparse reader skip lines only when no record in progress can take them)."""
        return False

    # words that make a record an event even without a grammar (fallbacks by level, tracebacks)
    fallback_anchors: tuple[str, ...] = (
        "WARN",
        "ERROR",
        "CRITICAL",
        "FATAL",
        "Traceback",
        "Warning:",
        "]:[E",
        "]:[W",
        "Exception in ",
    )  # the last two: PyTorch c10d "[rank3]:[E1227 ..."

    def scan_literals(self) -> list[str]:
        """Every literal whose presence can make a line matter: grammar and block anchors, fallbacks."""
        lits = {a for g in self.grammars for a in g.anchors}
        for rule in self.blocks:
            lits.update(rule.anchors)
            lits.update(a for g in rule.grammars for a in g.anchors)
        lits.update(self.fallback_anchors)
        return sorted(lits)

    # -- dispatch ----------------------------------------------------------------------------
    def candidates(self, text: str) -> list[Grammar]:
        """Grammars whose anchors occur in ``text``, in priority order, each once.

        With Hyperscan installed, all anchors are looked for in one pass (~3 µs a record instead of
        ~12 µs for one ``in`` test per anchor); both give the same list.
        """
        if self._matcher is None:
            self._matcher = _AnchorMatcher([a for a, _ in self._anchors])
        hit = self._matcher.find(text)
        if hit is None:  # no Hyperscan: one substring test per anchor
            hit = [i for i, (anchor, _gs) in enumerate(self._anchors) if anchor in text]
        if not hit:
            return []
        if len(hit) == 1:
            return list(self._anchors[hit[0]][1])
        found: dict[int, Grammar] = {}
        for i in hit:
            for g in self._anchors[i][1]:
                found.setdefault(id(g), g)
        return sorted(found.values(), key=lambda g: self._order[id(g)])


@dataclass(slots=True)
class Record:
    """One log record: one or more physical lines that belong together.

    ``raw`` is its physical lines joined with ``\\n``, kept as one string: almost every record is one
    line, so a list per record would cost more than appending the rare following lines.
    """

    file: str
    line: int
    end_line: int
    message: str
    header: Header | None
    process: str | None
    outer_time: str | None
    repeated: int
    raw: str = ""
    cont: bool = False  # the last line ended with \r\n: the next line may continue it
    tb_state: str | None = None  # traceback collection: "frames", "after_exc", "chain"
    block: BlockRule | None = None  # opened by a block rule
    prefix: str | None = (
        None  # what stood before the engine's header beyond known envelopes (``seek_header``)
    )
    request_id: str | None = None  # a JSON record's request id key (``structured``): the events' request_id


_TB_START = "Traceback (most recent call last):"
_EXC_LINE = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault|Dead\w*|Timeout\w*)(?::|$)"
)
# a one-line record that announces the bare traceback printed right after it ("Exception in ModelTpServer:")
_EXC_HEAD = re.compile(r"Exception in \w+:\Z")
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
# lines PyTorch appends to a CUDA error's message (after the exception line)
_CUDA_ERROR_TAIL = (
    "CUDA kernel errors might be asynchronously reported",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING",
    "Compile with `TORCH_USE_CUDA_DSA`",
    "Search for `cudaError",
)


def _tb_accepts(rec: Record, text: str) -> bool:
    """Does a header-less line continue the traceback being collected in ``rec``?"""
    state = rec.tb_state
    if state is None:
        return False
    if state in ("frames", "chain"):
        if text.startswith((" ", "\t")) or text.startswith(_TB_START) or text == "":
            if state == "chain" and text.startswith(_TB_START):
                rec.tb_state = "frames"
            return True
        if _EXC_LINE.match(text) or text.startswith(("^", "~")):
            rec.tb_state = "after_exc"
            return True
        if state == "frames" and ": " in text and " " not in text.split(": ", 1)[0]:
            rec.tb_state = "after_exc"  # exception class without a usual suffix (e.g. "KeyError: 'x'")
            return True
        return False
    # after_exc: a blank line, PyTorch's CUDA error advice or a chaining sentence may follow
    if text == "" or text.startswith(_CUDA_ERROR_TAIL):
        return True
    if text.startswith(_CHAIN):
        rec.tb_state = "chain"
        return True
    if text.startswith(_TB_START):
        rec.tb_state = "frames"
        return True
    return False


class Clock:
    """Turns printed stamps into seconds since the run's first stamp (year/day roll-over handled)."""

    __slots__ = ("first", "last", "_year_offset")  # asked once per timestamped record

    def __init__(self) -> None:
        self.first: float | None = None
        self.last: float | None = None
        self._year_offset = 0.0

    def seconds(self, stamp: tuple[int | None, int | None, int | None, float]) -> float:
        year, month, day, sod = stamp
        last = self.last
        if month is None or day is None:
            # time only: keep the day of the previous stamp; a jump back of over 12 h is midnight
            base = 0.0 if last is None else (last // 86400) * 86400
            t = base + sod
            if last is not None and t < last - 43200:
                t += 86400
        else:
            # days since a fixed epoch, months approximated by a calendar without leap days
            # (the engine printed no year for vLLM: never invent one)
            doy = CUM_DAYS[month - 1] + day - 1 if 1 <= month <= 12 else 0
            t = ((year or 0) * 365 + doy) * 86400.0 + sod + self._year_offset
            if year is None and last is not None and t < last - 180 * 86400:
                self._year_offset += 365 * 86400.0
                t += 365 * 86400.0
        if self.first is None:
            self.first = t
        if last is None or t > last:
            self.last = t
        return t

    @property
    def year_offset(self) -> float:
        """Years added to stamps without a year, in seconds (moves when such a stamp goes back)."""
        return self._year_offset

    def repeats(self, stamp: tuple[int | None, int | None, int | None, float], year_offset: float) -> bool:
        """Would ``seconds(stamp)``, asked again right after the call that found ``year_offset``
        before it, give the same time and change nothing? Then a caller may keep the first answer
        (``Parser.base``).

        True for a stamp with a month and a day when that call left the year offset alone: the same
        sum of the same numbers gives the same ``t``, the call left ``last >= t``, and either took
        ``last`` from ``t`` or found ``t >= last - 180 days`` (else it would have moved the offset):
        so the offset stays. Not after the offset moved (``t`` was summed in another order), nor for
        a time alone: its day is taken from ``last``, which the first call may have moved (an hour
        printed past 23 moves it again)."""
        return stamp[1] is not None and stamp[2] is not None and self._year_offset == year_offset


CUM_DAYS = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]


def first_seconds(dialect: Dialect, lines: Iterable[Line]) -> float | None:
    """Clock seconds of the first stamped header among ``lines``: where a run's clock starts.

    Told to a parser that may skip that line (the sparse reader) or that starts mid-file (a range)."""
    for ln in lines:
        parsed = dialect.find_header(dialect.envelope(ln.text).text)
        if parsed is not None and parsed[0].stamp is not None:
            return Clock().seconds(parsed[0].stamp)
    return None


class Parser:
    """Streams records and events out of lines, for one dialect."""

    def __init__(
        self,
        dialect: Dialect,
        *,
        keep_unparsed: bool = True,
        reference: bool = False,
        keep_literals: tuple[str, ...] = (),
    ) -> None:
        self.dialect = dialect
        self.keep_unparsed = keep_unparsed
        # unparsed records holding one of these are kept even when unparsed records are not wanted
        # (the text that digest rules and analyses grep for)
        self.keep_literals = keep_literals
        self.reference = reference  # run the pyparsing form instead of the compiled one
        self.clock = Clock()
        self.engine = dialect.name
        self.counts: dict[str, int] = {}
        self._last_base: dict[str, Any] | None = None
        # base()'s last header-derived values: (header, process, clock, time, t_s, process, tp, dp, level)
        self._memo: tuple[Any, ...] = (None,) * 9
        self._rel: tuple[float | None, float | None, float] = (None, None, 0.0)  # events_of: (t, first, t_s)
        self.sparse = False  # set by the reader when it skips lines that hold no anchor
        self._pending: tuple[Record | None, Record | None] = (None, None)  # (sparse) open block, open record
        self._parked = False  # (sparse) records are set aside (see records): every line may continue one
        # how the input began and ended, for parsing one file in ranges (logscope.parsers.chunks):
        self.start_kept = False  # (sparse) the run's first timestamped record is already kept
        self.open_at_end = False  # a block or a \r\n-continued record was open at the input's end
        self.wants_held = False  # (sparse) the first event has no time: a record held before would precede it

    # -- records -----------------------------------------------------------------------------
    def records(self, lines: Iterable[Line]) -> Iterator[Record]:
        """Join physical lines into records.

        Every physical line passes here before any grammar runs, so the loop is kept lean: the
        dialect's hooks are looked up once, a line that is one piece (nearly all) skips the
        bookkeeping of glued pieces, a record's raw text stays one string, and ``_continues`` is
        asked only when its answer can be yes (a line with a header continues nothing unless the
        record ended in \\r\\n).
        """
        open_rec: Record | None = None
        block: Record | None = None  # an open block record (see BlockRule)
        held: list[Record] = []  # records that began inside the open block: emitted after it
        # multi-line records of one process set aside while other processes' lines come between (by
        # process), and the records from the first of them on, in order: emitted once all before are whole
        parked: dict[str | None, Record] = {}
        pending: list[Record] = []
        d = self.dialect
        envelope, split_glued, header_fn, seek = d.envelope, d.split_glued, d.header, d.seek_header
        rules = d.blocks
        continues = self._continues
        for ln in lines:
            text, number = ln.text, ln.number
            env = envelope(text)
            pieces = split_glued(env.text)
            # (raw text, envelope, text to parse, ends with \r\n) of each record on the line
            parts: list[tuple[str, Envelope, str, bool]] | tuple[tuple[str, Envelope, str, bool]]
            if len(pieces) == 1:
                parts = ((text, env, env.text, ln.cont),)
            else:  # records written into each other: the outer envelope belongs to the first piece
                first = pieces[0]
                parts = [
                    (
                        text[: len(text) - len(env.text)] + first if text.endswith(env.text) else first,
                        env,
                        first,
                        False,
                    )
                ]
                for piece in pieces[1:]:
                    penv = envelope(piece)
                    parts.append((piece, penv, penv.text, False))
                parts[-1] = (*parts[-1][:3], ln.cont)
            for raw, env, piece, cont in parts:
                parsed = header_fn(piece)
                prefix = None
                if parsed is not None:
                    hdr, msg = parsed
                    process = env.process
                else:
                    hdr, msg, process = None, piece, env.process
                    pos = seek(piece)  # the header further in: after a wrapper, a stack of process tags
                    if pos > 0:
                        parsed = header_fn(piece[pos:])
                        if parsed is not None:
                            hdr, msg = parsed
                            skipped = piece[:pos]
                            prefix = (f"({process}) {skipped}" if process else skipped).strip() or None
                            process = inner_process(skipped) or process
                if parked and hdr is not None and process in parked:
                    # a line of a process whose multi-line record was set aside: resume it, or it has ended
                    p = parked.pop(process)
                    if (p.cont or p.tb_state is not None or msg.startswith(_TB_START)) and continues(
                        p, hdr, msg, process
                    ):
                        if open_rec is not None and not _in(open_rec, pending):
                            if self._parks(open_rec, hdr, process):
                                parked[open_rec.process] = open_rec
                            pending.append(open_rec)
                        elif open_rec is not None and self._parks(open_rec, hdr, process):
                            parked[open_rec.process] = open_rec
                        open_rec = p
                        p.message += "\n" + msg  # (continues() is asked once: it moves a traceback's state)
                        p.raw += "\n" * max(1, number - p.end_line) + raw  # an empty line per other line
                        p.end_line = number
                        p.cont = cont
                        if p.tb_state is None and _TB_START in msg and msg.rstrip().endswith(_TB_START):
                            p.tb_state = "frames"
                        continue
                    yield from _ready(pending, parked, open_rec)
                if (
                    open_rec is not None
                    and (
                        hdr is None
                        or open_rec.cont
                        or open_rec.tb_state is not None
                        or msg.startswith(_TB_START)
                    )
                    and continues(open_rec, hdr, msg, process)
                ):
                    open_rec.message += "\n" + msg
                    # (after a record set aside was resumed: an empty line stands for each line in between)
                    open_rec.raw += "\n" * max(1, number - open_rec.end_line) + raw
                    open_rec.end_line = number
                    open_rec.cont = cont
                    if open_rec.tb_state is None and _TB_START in msg and msg.rstrip().endswith(_TB_START):
                        open_rec.tb_state = "frames"
                    continue
                if block is not None and block.block is not None:
                    verdict = None
                    if hdr is None and process in (None, block.process):
                        verdict = block.block.accepts(block.message, msg)
                    if verdict is not None:
                        block.message += "\n" + msg
                        # an empty line stands for each foreign line in between: raw stays line for line
                        block.raw += "\n" * max(1, number - block.end_line) + raw
                        block.end_line = number
                    if verdict == "last" or (
                        verdict is None and (hdr is None or len(held) >= _MAX_INTERLEAVED)
                    ):
                        yield block
                        yield from held
                        block, held = None, []
                    if verdict is not None:
                        continue
                if block is None and hdr is None and rules:
                    rule = next((r for r in rules if r.opens(msg)), None)
                    if rule is not None:
                        if pending:  # records set aside end here (a block is no engine record)
                            parked.clear()
                            yield from _ready(pending, parked, None)
                        if open_rec is not None:
                            yield open_rec
                            open_rec = None
                        block = Record(
                            ln.file,
                            number,
                            number,
                            msg,
                            None,
                            process,
                            env.outer_time or ln.stamp,
                            env.repeated,
                            raw,
                            block=rule,
                        )
                        if ln.request_id is not None:
                            block.request_id = ln.request_id
                        continue
                if open_rec is not None:
                    if block is not None:
                        held.append(open_rec)
                    elif _in(open_rec, pending):
                        if self._parks(open_rec, hdr, process):
                            parked[open_rec.process] = open_rec
                    elif self._parks(open_rec, hdr, process) or pending:
                        # another process's line inside a multi-line record: set the record aside, whole, until
                        # its process goes on (ranks print their tracebacks at once, line by line)
                        if self._parks(open_rec, hdr, process):
                            parked[open_rec.process] = open_rec
                        pending.append(open_rec)
                        if len(pending) > _MAX_PENDING:  # a record never resumed: give up waiting for it
                            parked.clear()
                    else:
                        yield open_rec
                    if pending:
                        yield from _ready(pending, parked, None)
                open_rec = Record(
                    ln.file,
                    number,
                    number,
                    msg,
                    hdr,
                    process,
                    env.outer_time or ln.stamp,
                    env.repeated,
                    raw,
                    cont,
                    # "in" first: a fast scan that rules out nearly every line without copying it
                    "frames" if _TB_START in msg and msg.rstrip().endswith(_TB_START) else None,
                )
                if prefix is not None:
                    open_rec.prefix = prefix
                if ln.request_id is not None:
                    open_rec.request_id = ln.request_id
            if (
                self.sparse
            ):  # what the record in progress is, for wants_next() (asked only by the sparse reader)
                self._pending = (block, open_rec)
                self._parked = bool(parked)
        # could the input's next line (were there one) have joined a record? (cutting a file into ranges)
        self.open_at_end = block is not None or (open_rec is not None and open_rec.cont) or bool(parked)
        parked.clear()
        if pending:
            if open_rec is not None and not _in(open_rec, pending):
                pending.append(open_rec)
            open_rec = None
            yield from _ready(pending, parked, None)
        if block is not None:
            yield block
            yield from held
        if open_rec is not None:
            yield open_rec

    def wants_next(self) -> bool:
        """(sparse) May the next line continue the record in progress? Then the reader must hand it over."""
        block, rec = self._pending
        return block is not None or self._parked or (rec is not None and self._may_continue(rec))

    def _parks(self, rec: Record, hdr: Header | None, process: str | None) -> bool:
        """Is ``rec`` a multi-line record in progress that a line of another process (``hdr``, ``process``)
        interrupts, rather than ends? Only prefixed records (vLLM repeats the prefix on each line)."""
        return (
            hdr is not None
            and rec.header is not None
            and self.dialect.crlf_continues
            and rec.process is not None
            and process is not None
            and process != rec.process
            and (
                rec.cont
                or rec.tb_state is not None
                # an error line whose traceback may follow on the process's next line ("EngineCore failed to start.")
                or (rec.header.level in ("ERROR", "CRITICAL") and rec.end_line == rec.line)
            )
        )

    def _may_continue(self, rec: Record) -> bool:
        """Could the next line belong to ``rec``? (The sparse reader then hands it over.)"""
        return (
            # a \r\n continues only a record with a header (``_continues``); not an empty \r\n line's
            (rec.cont and self.dialect.crlf_continues and rec.header is not None)
            or rec.tb_state is not None
            or self.dialect.may_continue(rec.message)
        )

    def _continues(self, rec: Record, hdr: Header | None, msg: str, process: str | None) -> bool:
        if hdr is not None and rec.header is not None and self.dialect.crlf_continues:
            h = rec.header
            same = (
                hdr.level == h.level
                and hdr.time == h.time
                and hdr.source == h.source
                and process == rec.process
                and hdr.process == h.process
            )
            if rec.cont or not same:
                return same
            # the same prefix without the \r\n (a paste, a collector that strips \r): a traceback's
            # lines, or a traceback that starts on the line after its record's first line
            if rec.tb_state is not None:
                return _tb_accepts(rec, msg)
            return msg.startswith(_TB_START) and h.level in ("ERROR", "CRITICAL", "WARNING")
        if hdr is None and (process is None or process == rec.process):
            if rec.tb_state is not None and _tb_accepts(rec, msg):
                return True
            if msg.startswith(_TB_START) and rec.tb_state is None and _EXC_HEAD.match(rec.message):
                return (
                    True  # "Exception in ModelTpServer:" (SGLang 0.2-0.3) heads the traceback it prints next
                )
            return self.dialect.continues(rec.message, msg)
        return False

    # -- events ------------------------------------------------------------------------------
    def events(self, lines: Iterable[Line]) -> Iterator[Event]:
        """Events of every record, in order.

        When unparsed records are not kept, two of them are kept all the same, so that times read
        off neighbouring lines do not depend on what was skipped: the file's first timestamped record
        (where the run's clock starts) and the last timestamped record before an event that has no
        timestamp of its own (a uvicorn line takes its time from the line before it).
        """
        first_done = self.keep_unparsed or self.start_kept
        held: tuple[Record, dict[str, Any]] | None = None
        emitted = False
        for rec in self.records(lines):
            evs = self.events_of(rec)
            if not first_done or not evs:
                base = self._last_base
                if base is not None and base["t_s"] is not None:
                    if not first_done and not evs:
                        evs = [make_event("unparsed", base, {"text": rec.message})]
                    elif not evs:
                        held = (rec, base)
                    first_done = True
            if not evs:
                continue
            if not emitted:
                # a record held before this input began would go first (see logscope.parsers.chunks)
                self.wants_held = held is None and evs[0].t_s is None
                emitted = True
            if held is not None and evs[0].t_s is None:
                rec0, base0 = held
                evs = [make_event("unparsed", base0, {"text": rec0.message}), *evs]
            if held is not None:
                held = None
            for ev in evs:
                self.counts[ev.kind] = self.counts.get(ev.kind, 0) + 1
                yield ev
        self.start_kept = first_done

    def base(self, rec: Record) -> dict[str, Any]:
        """The fields every event of ``rec`` shares: where, when, which process and ranks, raw text.

        The time, clock seconds, process, ranks and level of a record are a function of its header
        and its process tag, and records in a row mostly share both (the same Header object: see
        ``Header``). So they are kept for the last pair, and taken again when the next record has
        that same Header and process tag and the clock is the same, and asking the clock again
        would change nothing (``Clock.repeats``: the clock's last question was this stamp)."""
        h = rec.header
        process = rec.process
        clock = self.clock
        memo = self._memo
        if h is not None and h is memo[0] and process == memo[1] and clock is memo[2]:
            time, t_s, process, tp, dp, level = memo[3:]
        else:
            tp, dp = ranks_of(process) if process else (None, None)
            repeats = False
            if h is None:
                time, t_s, level = rec.outer_time, None, None
            else:
                time, level = h.time, h.level
                stamp = h.stamp
                if stamp is None:
                    t_s, repeats = None, True
                else:
                    offset = clock.year_offset
                    t_s = clock.seconds(stamp)
                    repeats = clock.repeats(stamp, offset)
                if h.tp_rank is not None:
                    tp = h.tp_rank
                if h.dp_rank is not None:
                    dp = h.dp_rank
                if h.process:
                    process = f"{process} {h.process}" if process else h.process
            # kept only while the clock was asked nothing else since
            self._memo = (
                (h, rec.process, clock, time, t_s, process, tp, dp, level) if repeats else (None,) * 9
            )
        out: dict[str, Any] = {
            "engine": self.engine,
            "file": rec.file,
            "line": rec.line,
            "end_line": rec.end_line if rec.end_line != rec.line else None,
            "time": time,
            "t_s": t_s,
            "process": process,
            "tp_rank": tp,
            "dp_rank": dp,
            "level": level,
            "repeated": rec.repeated,
            "raw": rec.raw,
        }
        if rec.prefix is not None:
            out["prefix"] = rec.prefix
        if rec.request_id is not None:
            out["request_id"] = rec.request_id
        if rec.outer_time is not None:  # a collector stamped the line (parsers.structured, envelopes)
            if time is rec.outer_time:
                out["time_source"] = "collector"
            elif time is not None:
                out["outer_time"] = rec.outer_time
                out["time_source"] = "engine; year and zone in outer_time"
        return out

    def events_of(self, rec: Record) -> list[Event]:
        """The events of one record.

        The first grammar (in priority order) that matches gives the record's event; grammars marked
        ``also`` add theirs beside it (vLLM 0.32 prints the KV size and the concurrency on one line;
        an OOM or a KV-capacity error sits inside a traceback that is also an ``error``).
        """
        base = self.base(rec)
        t, first = base["t_s"], self.clock.first
        if t is not None and first is not None:
            rel = self._rel  # the last answer, for the same objects (base() hands the same t again)
            if t is not rel[0] or first is not rel[1]:
                rel = self._rel = (t, first, round(t - first, 3))
            base["t_s"] = rel[2]
        self._last_base = base
        text = rec.message
        if text[:1] == " " and rec.header is None and rec.tb_state is None:
            text = text.lstrip(" ")  # a bare message pasted with its indentation
        candidate: str | None = None
        out: list[Event] = []
        primary = False
        grammars = self.dialect.candidates(text)
        if rec.block is not None:
            grammars = grammars + [g for g in rec.block.grammars if g not in grammars]
        for g in grammars:
            if primary and not g.also:
                continue
            fields = g.fields(text, reference=self.reference)
            if fields is None:
                candidate = candidate or g.kind
                continue
            if g.kind == "oom" and "retry" not in fields:
                fields["retry"] = base["level"] in ("WARNING", "WARN") or "retr" in text.lower()
            b = base
            if "request_id" in fields and "request_id" in base:
                # the id the line prints wins; the JSON record's key fills in where the line lost it
                b = {k: v for k, v in base.items() if k != "request_id"}
                if fields["request_id"] is None:
                    fields["request_id"] = base["request_id"]
            try:
                out.append(make_event(g.kind, b, fields))
            except (ValidationError, TypeError, ValueError):
                candidate = candidate or g.kind
                continue
            primary = primary or not g.also
        if not primary and (not out or _TB_START in text):
            fb = fallback(rec, base)
            if fb is not None:
                out.append(fb)
        if not out and (
            self.keep_unparsed or candidate is not None or any(a in text for a in self.keep_literals)
        ):
            # a record that holds a known kind's anchor but did not parse is always reported:
            # it is rare, and it is how a new log format shows up
            out.append(make_event("unparsed", base, {"text": text, "candidate": candidate}))
        return out


# -- fallbacks: warnings and errors that no grammar claimed ----------------------------------
_NUM = re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:[.,:]\d+)*")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_PYWARN = re.compile(r"^(?P<src>\S+\.py:\d+): (?P<cat>[A-Z]\w*Warning): (?P<msg>.*)", re.S)
_C10WARN = re.compile(r"^\[(?:rank\d+\]:\[)?W(?:\d{4} [\d:.]+ )?[^\]]*\] Warning: (?P<msg>.*)", re.S)


def template(message: str) -> str:
    """The message with numbers and hex masked: one template per kind of warning."""
    first = message.split("\n", 1)[0]
    return _NUM.sub("<n>", _HEX.sub("<hex>", first))[:300]


def exception_of(lines: list[str]) -> tuple[str | None, str]:
    """(exception type, message) from the last exception line of a traceback."""
    for text in reversed(lines):
        t = text.strip()
        if not t or t.startswith(("File ", "^", "~")):
            continue
        m = _EXC_LINE.match(t) or (re.match(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*: ", t) if ": " in t else None)
        if m:
            exc, _, msg = t.partition(": ")
            return exc, msg
    return None, lines[-1].strip() if lines else ""


def fallback(rec: Record, base: dict[str, Any]) -> Event | None:
    """Warnings and errors by level, Python and PyTorch warnings, and bare tracebacks."""
    text = rec.message
    level = base["level"]
    source = rec.header.source if rec.header is not None else None
    if _TB_START in text:
        lines = text.split("\n")
        start = next(i for i, t in enumerate(lines) if _TB_START in t)
        tb = lines[start:]
        exc, msg = exception_of(tb)
        head = lines[0].split(_TB_START)[0].strip() if start == 0 else "\n".join(lines[:start]).strip()
        return Error(**base, exception=exc, message=head or msg, traceback=tb, source=source)
    if level in ("WARNING", "WARN"):
        return make_event("warning", base, {"message": text, "source": source, "template": template(text)})
    if level in ("ERROR", "CRITICAL", "FATAL"):
        exc, msg = (None, text)
        m = re.match(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): (.*)", text, re.S)
        if m:
            exc, msg = m.group(1), m.group(2)
        return make_event("error", base, {"exception": exc, "message": msg, "source": source})
    if level is None:
        m = _PYWARN.match(text)
        if m:
            msg = m.group("msg")
            return Warning_(
                **base, message=msg, source=m.group("src"), template=template(msg), category=m.group("cat")
            )
        m = _C10WARN.match(text)
        if m:
            msg = m.group("msg")
            return Warning_(**base, message=msg, template=template(msg))
    return None


BuildFn = Callable[[dict[str, Any]], dict[str, Any] | None]
