"""Framing: bytes from files, ``.gz``, stdin or directories become numbered physical lines.

Why this layer exists: real logs are not clean text. They hold ANSI colour (vLLM colours its process
prefix even into files), invalid UTF-8, tqdm progress bars redrawn with ``\\r``, lines of tens of
megabytes (request logging of a 200K-token prompt), truncated gzip files. Framing deals with all of
that once, streaming, in bounded memory, and numbers lines the way ``str.splitlines`` does (a lone
``\\r`` starts a new line), which is also how editors and our corpus scorer count them.

A line that ended with ``\\r\\n`` is marked ``cont``: vLLM's formatter ends every line of a
multi-line message that way, which is how continuation lines are told from new records.
"""

from __future__ import annotations

import itertools
import os
import queue
import re
import sys
import threading
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from logscope.errors import UnreadableInput
from logscope.parsers import structured

BLOCK = 1 << 20
T = TypeVar("T")
MAX_LINE = 1 << 20  # bytes kept of one physical line; the rest is dropped (and reported)

# CSI sequences (colour, cursor moves) and OSC sequences (titles, hyperlinks), as terminals print them.
ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


@dataclass(slots=True)
class Line:
    """One physical line (``str.splitlines`` semantics), decoded and without its line break."""

    file: str
    number: int
    text: str
    cont: bool = False  # ended with "\r\n": the next line may continue the same log record
    stamp: str | None = None  # a collector's stamp from a JSON record (``structured``): the line's outer time
    request_id: str | None = None  # a JSON record's request id key (``structured``)


@dataclass
class ReadStats:
    """What the reader saw, for coverage and for a clear message when nothing was text."""

    files: list[str] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    text_lines: int = 0
    junk_lines: int = 0
    notes: list[str] = field(default_factory=list)
    # the JSON front end's state for the file being read (``structured.Front``), not added up
    front: structured.Front | None = field(default=None, repr=False, compare=False)

    def add(self, part: ReadStats, *, files: bool = True) -> None:
        """Count in what another reader saw (a worker's file or range); ``files=False``: not its files."""
        if files:
            self.files += part.files
        self.lines += part.lines
        self.bytes += part.bytes
        self.text_lines += part.text_lines
        self.junk_lines += part.junk_lines
        self.notes += part.notes


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Paths as the user gave them: files, ``-`` for stdin, directories (their ``*.log*`` files)."""
    out: list[str] = []
    for p in paths:
        s = os.fspath(p)
        if s == "-":
            out.append(s)
            continue
        path = Path(s)
        if path.is_dir():
            found = sorted(str(f) for f in path.iterdir() if f.is_file() and ".log" in f.name)
            if not found:
                raise UnreadableInput(f"{s}: directory holds no *.log* files")
            out.extend(found)
        elif path.exists():
            out.append(s)
        else:
            raise UnreadableInput(f"{s}: no such file")
    return out


def _open(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise UnreadableInput(f"{path}: cannot be opened ({exc.strerror or exc})") from exc


Fill = Callable[[memoryview], int]  # writes the next bytes into the view, returns how many (0: the end)


def _fill(stream: BinaryIO, name: str, stats: ReadStats) -> Fill:
    """The stream's bytes, gunzipped on the fly when the stream is gzip (in a reader thread).

    A note the gunzip makes (corrupt, truncated) is added when the reader gets to it, after the chunks
    before it, as when the gunzip ran inline."""
    first = stream.read(BLOCK)
    if first[:2] != b"\x1f\x8b":
        pending = [first] if first else []

        def plain(view: memoryview) -> int:
            if pending:
                data = pending.pop()
                view[: len(data)] = data
                return len(data)
            n: int = stream.readinto(view)  # type: ignore[attr-defined]  # (a binary file object has it)
            return n

        return plain

    def chunks() -> Iterator[bytes]:
        for item in _in_thread(_gunzip(stream, name, first)):
            if isinstance(item, str):
                stats.notes.append(item)
            else:
                yield item

    return _chunk_fill(chunks())


def _chunk_fill(chunks: Iterator[bytes]) -> Fill:
    """A ``Fill`` that copies ``chunks`` one by one (a chunk longer than the view goes in parts)."""
    left = b""

    def fill(view: memoryview) -> int:
        nonlocal left
        data = left or next((c for c in chunks if c), b"")
        n = min(len(data), len(view))
        view[:n] = data[:n]
        left = data[n:]
        return n

    return fill


def _range_fill(stream: BinaryIO, size: int) -> Fill:
    """``size`` bytes of a plain stream from where it stands."""
    left = [size]

    def fill(view: memoryview) -> int:
        if left[0] <= 0:
            return 0
        n: int = stream.readinto(view[: min(len(view), left[0])])  # type: ignore[attr-defined]
        left[0] -= n
        return n

    return fill


def _zlib() -> Any:
    """``isal.isal_zlib`` when installed (the same API as ``zlib``, its gunzip in about half the CPU time
    here: 0.07 s against 0.16 s for 75 MB of log), else ``zlib``."""
    try:
        from isal import isal_zlib

        return isal_zlib
    except ImportError:
        return zlib


def _gunzip(stream: BinaryIO, name: str, data: bytes) -> Iterator[bytes | str]:
    """The gunzipped chunks of a gzip stream whose first bytes are ``data``; a note (``str``) where it is
    corrupt or cut. Concatenated members are read on; NUL padding after the last is not data."""
    zlib_ = _zlib()
    error = zlib_.error
    dec = zlib_.decompressobj(wbits=31)
    while True:
        try:
            # until the input is used up or the member ends (a call may give no output and still leave
            # input: stopping at an empty output lost that input, and read a second member as corrupt)
            while True:
                out = dec.decompress(data, BLOCK)
                if out:
                    yield out
                data = dec.unconsumed_tail
                if not data or dec.eof:
                    break
        except error as exc:
            yield f"{name}: gzip data is corrupt ({exc}); read what came before it"
            return
        if dec.eof:
            rest = dec.unused_data
            if rest.strip(b"\x00"):  # another gzip member follows (concatenated .gz)
                dec = zlib_.decompressobj(wbits=31)
                data = rest
                continue
            data = stream.read(BLOCK)
            if not data:
                return
            dec = zlib_.decompressobj(wbits=31)
            continue
        data = stream.read(BLOCK)
        if not data:
            tail = dec.flush()
            if tail:
                yield tail
            yield f"{name}: gzip stream is truncated; read what came before the cut"
            return


_END = object()


def _in_thread(items: Iterator[T], ahead: int = 4) -> Iterator[T]:
    """``items`` produced in a thread of their own, at most ``ahead`` of the reader: a gunzip (which
    releases the GIL) runs beside the parse. Stops the thread when the reader stops early (a head read).
    An exception in the thread is raised here, at the point it occurred in the sequence."""
    out: queue.Queue[Any] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                out.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            put(_Raised(exc))
            return
        put(_END)

    worker = threading.Thread(target=run, name="logscope-gunzip", daemon=True)
    worker.start()
    try:
        while True:
            item = out.get()
            if item is _END:
                return
            if isinstance(item, _Raised):
                raise item.exc
            yield item
    finally:
        stop.set()
        worker.join(timeout=1)  # (a worker blocked reading a pipe ends at its next chunk: it is a daemon)


@dataclass
class _Raised:
    exc: BaseException


def _line_blocks(fill: Fill, name: str, stats: ReadStats) -> Iterator[bytes]:
    """Blocks of whole lines (each ends with ``\\n`` except maybe the last), lines cut at MAX_LINE.

    Read into one buffer, reused: a block is its one copy out of it (reading a new bytes object per
    read, then joining and slicing, made three, and fresh memory to fault in for each: ~0.6 s of system
    time per GB). Blocks are cut where they were when each read was a new object (what a line longer
    than MAX_LINE keeps depends on it)."""
    size = BLOCK
    buf = bytearray(size + MAX_LINE + 1)
    view = memoryview(buf)
    rem = 0  # bytes of an unfinished line at the buffer's start
    skipping = False
    while (n := fill(view[rem : rem + size])) > 0:
        stats.bytes += n
        end = rem + n
        if skipping:  # (``rem`` is 0)
            i = buf.find(b"\n", 0, end)
            if i < 0:
                continue
            end -= i + 1
            buf[:end] = bytes(view[i + 1 : i + 1 + end])
            skipping = False
        last = buf.rfind(b"\n", 0, end)
        if last >= 0:
            yield bytes(view[: last + 1])
            rem = end - last - 1
            if rem:
                buf[:rem] = bytes(view[last + 1 : end])
        else:
            rem = end
        if rem > MAX_LINE:
            stats.notes.append(
                f"{name}: a line longer than {MAX_LINE // 1024} KiB was cut after its first {MAX_LINE // 1024} KiB"
            )
            yield bytes(view[:MAX_LINE]) + b"\n"
            rem = 0
            skipping = True
    if rem and not skipping:
        yield bytes(view[:rem])


_SPECIAL = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


@dataclass
class Sparse:
    """Ask ``read_lines`` for only the lines that can matter.

    ``scanner.scan(block)`` gives offsets of anchors and special bytes; ``want_next()`` says that
    the consumer holds a record that the next line may continue (so it must see it). The first
    ``head`` lines are always read whole (engine detection, the run's first timestamp). A skipped line
    is counted: as a text line unless it is empty (``_Empty``).

    ``timed(text)``: does this line start a record with a timestamp? Asked only of a line handed
    over right after skipped ones. When it says no, the line's record may be an event without a time
    of its own, which the parser shows after the last timestamped record before it (``Parser.events``):
    the skipped lines back to the nearest one that starts a timestamped record are handed over first,
    so that the parser sees the records the careful read would show it there (see ``WALK_LINES``).
    """

    scanner: Any
    want_next: Callable[[], bool]
    head: int = 3000
    timed: Callable[[str], bool] | None = None


# How far back the sparse reader looks for the timestamped line before an untimed one it hands over:
# far enough for a warning's or an access line's neighbours, short enough that a run of untimed lines
# (a dump printed without prefixes) costs little. Past the bound, the untimed line is handed over
# alone: the parser then times it by the last timestamped record it was given, which can be an older
# one than the careful read's (or none). The bound counts lines and bytes from the untimed line, not
# from a block's start, so a file gives the same result in whatever blocks or ranges it is read.
WALK_LINES = 256
WALK_BYTES = BLOCK


def read_lines(
    path: str,
    stats: ReadStats | None = None,
    sparse: Sparse | None = None,
    byte_range: tuple[int, int] | None = None,
) -> Iterator[Line]:
    """Physical lines of one input (file, ``.gz``, or ``-``), numbered from 1.

    With ``sparse``, lines that hold no anchor are counted but not produced (see ``Sparse``).
    ``byte_range=(start, end)``: only those bytes of a plain file, read as if they were the file
    (both offsets at line starts; see ``logscope.parsers.chunks``).
    """
    stats = stats if stats is not None else ReadStats()
    if byte_range is None:
        stats.files.append(path)
    stream = _open(path)
    stats.front = structured.Front(path)
    number = 0
    carry = b""  # (sparse) the last skipped lines of the blocks before: a walk back may reach into them
    try:
        if byte_range is None:
            fill = _fill(stream, path, stats)
        else:
            stream.seek(byte_range[0])
            fill = _range_fill(stream, byte_range[1] - byte_range[0])
        blocks = _line_blocks(fill, path, stats)
        if byte_range is None:  # a JSON document, or JSON records newest first: read whole (structured)
            whole, count, blocks = _whole_json(blocks, path, stats)
            if whole is not None:
                yield from whole
                number = count
        for block in blocks:
            if sparse is not None and number < sparse.head:
                cut = _head_cut(block, sparse.head - number)
                if cut < len(block):  # the head ends inside the block: read its lines whole, skip in the rest
                    text, suspect = _decode(block[:cut])
                    for line in _lines_of(text, path, number, stats, suspect):
                        number = line.number
                        yield line
                    block = block[cut:]
            if sparse is not None and number >= sparse.head:
                number, carry = yield from _sparse_block(block, path, number, stats, sparse, carry)
                continue
            text, suspect = _decode(block)
            for line in _lines_of(text, path, number, stats, suspect):
                number = line.number
                yield line
    except OSError as exc:
        stats.notes.append(f"{path}: read failed ({exc}); read what came before it")
    finally:
        stats.lines += number
        if stats.front is not None:
            stats.notes += stats.front.finish()
            stats.front = None
        if stream is not sys.stdin.buffer:
            stream.close()


def _whole_json(
    blocks: Iterator[bytes],
    path: str,
    stats: ReadStats,
) -> tuple[list[Line] | None, int, Iterator[bytes]]:
    """(lines, lines counted, the blocks left): the lines of a file that must be read whole before it can be read in order,
    else None and the blocks untouched. Two such files: a pretty-printed JSON document (``gcloud
    logging read --format=json``, ``aws logs filter-log-events``), whose records span many lines; and
    JSON records that go back in time (Loki's and gcloud's default: newest first), put in time order
    (reversed) and said so in the notes. Both are exports of bounded size (``structured.MAX_*``)."""
    first = next(blocks, None)
    if first is None:
        return None, 0, iter(())
    front = stats.front if stats.front is not None else structured.Front(path)
    if structured.document_start(first):
        data = first + b"".join(itertools.islice(blocks, structured.MAX_DOCUMENT // BLOCK))
        text, suspect = _decode(data)
        recs, tail = structured.document_records(text, front)
        lines = [Line(path, n, t.text, t.cont, t.stamp, t.request_id) for n, t in recs]
        total = text.count("\n") + (0 if text.endswith("\n") else 1)
        stats.text_lines += len(lines)
        if tail is not None:
            lines += _text_lines(text[tail:], path, text.count("\n", 0, tail), stats, suspect)
        _in_time_order(lines, front)
        return lines, total, blocks
    rest: Iterator[bytes] = itertools.chain([first], blocks)
    if structured.looks_json(first[:200].decode("utf-8", "replace").lstrip()) < 0:
        return None, 0, rest
    text, suspect = _decode(first)
    stamps = [ln.stamp for ln in _lines_of(text, path, 0, ReadStats(), suspect) if ln.stamp is not None]
    if not structured.newest_first(stamps[:1000]):
        return None, 0, rest
    lines = []
    number = 0
    for block in rest:
        text, suspect = _decode(block)
        for line in _lines_of(text, path, number, stats, suspect):
            number = line.number
            lines.append(line)
        if len(lines) > structured.MAX_REVERSE:
            front.notes.append(
                f"{path}: JSON records go back in time (newest first) but the file is too long to "
                f"put in order here: read as written"
            )
            return lines, number, blocks  # (its later blocks: read_lines reads them on)
    _in_time_order(lines, front)
    return lines, number, iter(())


def _in_time_order(lines: list[Line], front: structured.Front) -> None:
    """Reverse ``lines`` when their collector stamps go back in time (newest first), with a note."""
    stamps = [ln.stamp for ln in lines if ln.stamp is not None]
    if structured.newest_first(stamps):
        # by record: the lines of one record (a batch, a redrawn bar) share its number and keep their order
        groups = [list(g) for _n, g in itertools.groupby(lines, key=lambda ln: ln.number)]
        lines[:] = [ln for g in reversed(groups) for ln in g]
        front.notes.append(
            f"{front.path}: JSON records go back in time (newest first, as Loki and gcloud export by "
            f"default): {len(lines)} lines read in time order (reversed)"
        )


# a line of nothing but whitespace (as str.isspace says; the line-breaking ones are scanner hits)
_BLANK_LINE = re.compile(
    rb"(?m)^(?:[ \t\x1f]|\xc2\xa0|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xaf]|\xe2\x81\x9f|\xe3\x80\x80)+$"
)


def _head_cut(block: bytes, k: int) -> int:
    """Where the lines that a sparse read takes whole (the file's head) end in ``block``: after its
    ``k``-th ``\\n``, or the block's end.

    Why: a block of short lines holds a million of them (empty lines: 1 MiB of them in a 2 KB stretch
    of ``.gz``); read whole, each costs the parser a microsecond, where skipping counts them in bulk.
    The block is cut only where the rest, skipped, gives the counts that reading it whole would:
    no line of blanks (whole: not text; skipped: text), no invalid bytes or NUL (whole: lines judged
    as junk), no colour code (whole: a sequence may span lines). Otherwise the block is read whole,
    as before."""
    cut = -1
    for _ in range(k):
        cut = block.find(b"\n", cut + 1)
        if cut < 0:
            return len(block)
    cut += 1
    if cut == len(block) or b"\x1b" in block or b"\x00" in block or _BLANK_LINE.search(block, cut):
        return len(block)
    if not block.isascii() and "\ufffd" in block.decode("utf-8", errors="replace"):
        return len(block)
    return cut


_BAD = re.compile("[\ufffd\x00-\x08\x0e-\x1f\x7f]")


def _is_junk(body: str) -> bool:
    """A line of binary data: a quarter of it or more is invalid UTF-8 or control characters."""
    return len(_BAD.findall(body)) * 4 >= len(body)


def _lines_of(text: str, path: str, number: int, stats: ReadStats, suspect: bool) -> Iterator[Line]:
    """Lines of decoded ``text``; a JSON record becomes the engine's text line(s) it stands for
    (``structured``: asked only of text holding ``{"``, which a text log's blocks seldom do)."""
    lines = _text_lines(text, path, number, stats, suspect)
    if '{"' in text:
        front = stats.front if stats.front is not None else structured.Front(path)
        return structured.decode_lines(lines, front, _json_line)
    return lines


def _json_line(ln: Line, text: str, cont: bool, stamp: str | None, request_id: str | None) -> Line:
    return Line(ln.file, ln.number, text, cont, stamp, request_id)


def _text_lines(text: str, path: str, number: int, stats: ReadStats, suspect: bool) -> Iterator[Line]:
    """Lines of decoded ``text``; ``suspect``: the block holds invalid bytes, judge each line."""
    for piece in text.splitlines(keepends=True):
        number += 1
        if piece.endswith("\r\n"):
            body, cont = piece[:-2], True
        elif piece.endswith(("\n", "\r")) or _SPECIAL.match(piece[-1:]):
            body, cont = piece[:-1], False
        else:
            body, cont = piece, False
        if suspect and body and _is_junk(body):
            stats.junk_lines += 1
        elif body and not body.isspace():  # (as body.strip() would say, without copying the line)
            stats.text_lines += 1
        yield Line(path, number, body, cont)


def _decode(chunk: bytes) -> tuple[str, bool]:
    """(text, suspect): decoded text without colour codes; suspect when it holds invalid bytes."""
    text = chunk.decode("utf-8", errors="replace")
    suspect = "\ufffd" in text or "\x00" in text
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    return text, suspect


def _sparse_block(
    block: bytes,
    path: str,
    number: int,
    stats: ReadStats,
    sparse: Sparse,
    carry: bytes,
) -> Generator[Line, None, tuple[int, bytes]]:
    """Yield the lines of ``block`` that hold a hit or that the consumer asks for; count the rest.

    ``carry``: the last lines skipped before ``block`` (counted already), where a walk back for a
    timestamped line may go on. Returns the line count and the carry for the next block.
    """
    timed = sparse.timed
    hits = sparse.scanner.scan(_without_empty_crlf(block))
    if len(hits) * 4 > block.count(b"\n"):
        # most lines matter (an SGLang log of batch lines): one decode of the block beats line by line
        text, suspect = _decode(block)
        lines = _lines_of(text, path, number, stats, suspect)
        if carry and timed is not None:  # the block's first line comes after skipped ones
            first = next(lines, None)
            if first is not None:
                if not timed(first.text):
                    yield from _walk_back(carry, 0, len(carry), path, number, timed)
                number = first.number
                yield first
        for line in lines:
            number = line.number
            yield line
        return number, b""
    data = block
    if carry and timed is not None:
        data = carry + block
        hits = [h + len(carry) for h in hits]
    else:
        carry = b""
    empty = _Empty.of(data, len(carry), getattr(sparse.scanner, "empty", None))
    pos = len(carry)  # start of the first line not yet seen
    lo = 0  # start of the lines seen but not handed over (skipped: counted already)
    n = len(data)
    hi = 0
    nhits = len(hits)
    while pos < n:
        gap = False
        if sparse.want_next():
            start = pos
        else:
            while hi < nhits and hits[hi] < pos:
                hi += 1
            if hi == nhits:
                break
            start = data.rfind(b"\n", pos, hits[hi]) + 1 or pos
            if start < pos:
                start = pos
            skipped = data.count(b"\n", pos, start)
            number += skipped
            stats.text_lines += skipped
            if empty is not None:
                stats.text_lines -= empty.count(pos, start)
            gap = start > lo
        end = data.find(b"\n", start)
        end = n if end < 0 else end + 1
        text, suspect = _decode(data[start:end])
        lines = _lines_of(text, path, number, stats, suspect)
        if gap and timed is not None:
            first = next(lines, None)  # (None: the line was nothing but colour codes)
            if first is not None:
                if not timed(first.text):
                    yield from _walk_back(data, lo, start, path, number, timed)
                number = first.number
                yield first
        for line in lines:
            number = line.number
            yield line
        pos = lo = end
    if pos < n:
        rest = data.count(b"\n", pos, n) + (0 if data.endswith(b"\n") else 1)
        number += rest
        stats.text_lines += rest
        if empty is not None:
            stats.text_lines -= empty.count(pos, n)
    if timed is None or lo == n or not data.endswith(b"\n"):
        return number, b""
    return number, data[_walk_start(data, lo, n) :]


# every byte but "\n" and "\r" as "x": a skipped line is empty when its "\n" follows no "x" (a
# skipped line holds a "\r" only as an empty "\r\n" line: see ``_without_empty_crlf``)
_NL_ONLY = bytes(c if c in (0x0A, 0x0D) else 0x78 for c in range(256))


def _without_empty_crlf(block: bytes) -> bytes:
    """``block`` (which starts at a line start) as the scanner sees it: each empty ``\\r\\n`` line
    as two ``\\n`` (same length, so offsets stay), so that it is no hit.

    Why: ``\\r`` is a special byte (a lone one starts a line), which makes its line a hit; but an
    empty ``\\r\\n`` line is one line whichever way it is read, and the parser makes of it what it
    makes of an empty ``\\n`` line: a record with no text and no header, which no line can continue
    unless an empty ``\\n`` line's record could be continued too (its ``\\r\\n`` continues only a
    record with a header). Skipped, a file of a Windows editor's blank lines goes at the speed of
    ``bytes.count``, not a microsecond a line. Two passes: ``replace`` does not find overlapping
    occurrences (``\\n\\r\\n\\r\\n``), the second takes the ones the first stepped over."""
    if b"\r" not in block:  # (one memchr; a search for the three bytes costs ~0.7 ms a MiB of log)
        return block
    if block[:2] == b"\r\n":
        block = b"\n\n" + block[2:]
    if b"\n\r\n" in block:
        block = block.replace(b"\n\r\n", b"\n\n\n").replace(b"\n\r\n", b"\n\n\n")
    return block


class _Empty:
    """Counts the empty lines in stretches of a block (which starts at a line start).

    The sparse reader counts a skipped line as a text line unless it is empty, so that the count does
    not depend on which lines were read whole (the file's head, a block where most lines are hits, a
    range of ``logscope.parsers.chunks``) and which skipped. Empty lines are the only non-text lines
    logs commonly hold; a skipped line of blanks or of binary junk still counts as text (only decoding
    it would tell).

    Counted in bulk, never one line at a time: a file of nothing but empty lines (512 MiB of them in a
    2 MB ``.gz``) then goes at the speed of ``bytes.count``. In a copy of the block where every byte
    but ``\\n`` is ``x``, the lines of ``[lo, hi)`` that end with ``\\n`` are ``count(b"\\n")``, the
    non-empty ones among them ``count(b"x\\n")`` (which cannot overlap itself); an unterminated last
    line is not empty. (A skipped empty ``\\r\\n`` line ends in ``\\r\\n``: empty too.)"""

    __slots__ = ("_marks",)

    def __init__(self, data: bytes) -> None:
        self._marks = data.translate(_NL_ONLY)

    @classmethod
    def of(cls, data: bytes, start: int = 0, flagged: bool | None = None) -> _Empty | None:
        """The counter for ``data``, or None when it holds no empty line. ``flagged``: the scanner's word
        on ``data[start:]`` (as it scanned it: ``_without_empty_crlf``), whether it holds ``\\n\\n``;
        only ``data[:start]`` (the carry of skipped lines) and the joint are then searched here."""
        if flagged is None:
            flagged = b"\n\n" in data or (b"\r" in data and b"\n\r\n" in data)
        elif start:
            # an empty first line of the block (after the carry's last "\n"), or one in the carry
            flagged = (
                flagged
                or data[start : start + 1] in (b"\n", b"\r")
                or data.find(b"\n\n", 0, start) >= 0
                or (data.find(b"\r", 0, start) >= 0 and data.find(b"\n\r\n", 0, start + 1) >= 0)
            )
        if data[:1] in (b"\n", b"\r") or flagged:
            return cls(data)
        return None

    def count(self, lo: int, hi: int) -> int:
        """Empty lines among the lines of ``[lo, hi)`` (both at line starts, or ``hi`` the end)."""
        marks = self._marks
        return marks.count(b"\n", lo, hi) - marks.count(b"x\n", lo, hi)


def _walk_back(
    data: bytes, lo: int, start: int, path: str, number: int, timed: Callable[[str], bool]
) -> list[Line]:
    """The skipped lines of ``data[lo:start]`` from the nearest one that ``timed`` accepts, or none.

    ``start`` is the start of the line about to be handed over, ``number`` the number of the line
    before it. The lines were counted when they were skipped: here they are only decoded (into a
    scratch ``ReadStats``), so the counts stay those of skipping. They hold no special byte (it
    would have been a hit), so each ``\\n`` ends one line, as on the careful path.

    Only a line that starts a timestamped record may be the first handed over: the careful parser
    starts a new record there too (a line with an engine header continues a record only after a
    ``\\r\\n``, a special byte, and no block is open over skipped lines: while one is, every line is
    asked for), so the records from it on are the careful read's. Handing over from a continuation
    line instead (a traceback's frame) would make a record of a record's middle.
    """
    i = start
    floor = max(lo, start - WALK_BYTES)
    for walked in range(1, WALK_LINES + 1):
        if i <= lo:
            return []
        j = max(data.rfind(b"\n", lo, i - 1) + 1, lo)
        if j < floor:
            return []
        if timed(data[j : i - 1].decode("utf-8", errors="replace")):
            text, suspect = _decode(data[j:start])
            return list(_lines_of(text, path, number - walked, ReadStats(), suspect))
        i = j
    return []


def _walk_start(data: bytes, lo: int, n: int) -> int:
    """Start of the skipped lines at the end of ``data[lo:n]`` that a walk back from ``n`` can reach: the
    ``WALK_LINES``-th line start from the end, or the first one at or after ``n - WALK_BYTES``
    (``data[n - 1]`` is ``\n``). Counted with ``bytes.count`` over a window and one ``rsplit`` of it, not
    a Python step per line (a walk of 256 ``rfind`` calls per block was a sixth of the sparse reader)."""
    floor = max(lo, n - WALK_BYTES)
    # line starts at or after ``floor``: ``lo`` (when it is), and one after each "\n" in [first, n - 1)
    first = max(lo, floor - 1)
    span = 1 << 16
    while True:
        a = max(first, n - 1 - span)
        k = data.count(b"\n", a, n - 1)
        if k >= WALK_LINES or a == first:
            break
        span *= 4
    if k >= WALK_LINES:  # the WALK_LINES-th "\n" from the end, in [a, n - 1)
        return a + len(data[a : n - 1].rsplit(b"\n", WALK_LINES)[0]) + 1
    if lo >= floor:
        return lo
    return data.find(b"\n", first, n - 1) + 1 if k else n


def is_gzip(path: str) -> bool:
    """True when the file starts with the gzip magic bytes."""
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False


__all__ = ["Line", "ReadStats", "Sparse", "expand_paths", "is_gzip", "read_lines"]
