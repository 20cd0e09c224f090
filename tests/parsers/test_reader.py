"""The byte layer's own pieces: the walk-back window, gunzip in a reader thread (and with isal)."""

from __future__ import annotations

import gzip
import itertools
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logscope.parsers import framing
from logscope.parsers.framing import ReadStats, read_lines
from tests.conftest import FIXTURES

REAL = (FIXTURES / "vllm/corpus/gen-a1_plain_c10.log").read_bytes()


def _walk_start_steps(data: bytes, lo: int, n: int) -> int:
    """The walk back's start a line at a time (as the reader found it before it counted in bulk)."""
    c = n
    floor = max(lo, n - framing.WALK_BYTES)
    for _ in range(framing.WALK_LINES):
        if c <= lo:
            break
        j = max(data.rfind(b"\n", lo, c - 1) + 1, lo)
        if j < floor:
            break
        c = j
    return c


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.integers(0, 40), min_size=1, max_size=700),
    lo_line=st.integers(0, 700),
    walk_lines=st.sampled_from([1, 3, 256]),
    walk_bytes=st.sampled_from([5, 200, 1 << 20]),
)
def test_walk_start_counts_as_the_line_walk(
    lines: list[int], lo_line: int, walk_lines: int, walk_bytes: int
) -> None:
    data = b"".join(b"x" * k + b"\n" for k in lines)
    starts = [0, *itertools.accumulate(k + 1 for k in lines)][:-1]
    lo = starts[min(lo_line, len(starts) - 1)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(framing, "WALK_LINES", walk_lines)
        mp.setattr(framing, "WALK_BYTES", walk_bytes)
        assert framing._walk_start(data, lo, len(data)) == _walk_start_steps(data, lo, len(data))


def test_walk_start_on_a_real_log() -> None:
    data = REAL[: REAL.rfind(b"\n") + 1]
    for lo in (0, 1000, len(data) // 2, len(data) - 300):
        lo = data.rfind(b"\n", 0, lo) + 1
        assert framing._walk_start(data, lo, len(data)) == _walk_start_steps(data, lo, len(data))


def _gz_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "logscope-gunzip")


@pytest.mark.parametrize("lib", ["zlib", "isal"])
def test_gunzip_in_a_thread_reads_what_zlib_inline_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lib: str
) -> None:
    if lib == "isal":
        pytest.importorskip("isal")
    else:
        monkeypatch.setattr(framing, "_zlib", lambda: framing.zlib)
    monkeypatch.setattr(framing, "BLOCK", 4096)  # many chunks through the queue
    src = REAL * 3
    whole = tmp_path / "a.log.gz"
    whole.write_bytes(gzip.compress(src) + gzip.compress(REAL) + b"\x00" * 64)  # two members, NUL padding
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gzip.compress(src)[: len(src) // 20])
    bad = tmp_path / "bad.log.gz"
    data = bytearray(gzip.compress(src))
    data[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64
    bad.write_bytes(bytes(data))
    plain = [
        ln.text
        for ln in read_lines(
            str(tmp_path / "plain.log") if (tmp_path / "plain.log").write_bytes(src + REAL) else ""
        )
    ]
    st1 = ReadStats()
    assert [ln.text for ln in read_lines(str(whole), st1)] == plain and st1.notes == []
    for path, note in ((cut, "gzip stream is truncated"), (bad, "gzip data is corrupt")):
        st2 = ReadStats()
        got = [ln.text for ln in read_lines(str(path), st2)]
        assert len(st2.notes) == 1 and note in st2.notes[0]
        assert got and plain[: len(got) - 1] == got[:-1]  # what came before the cut (the last line maybe cut)


def test_gunzip_thread_ends_when_the_reader_stops_early(tmp_path: Path) -> None:
    path = tmp_path / "big.log.gz"
    path.write_bytes(gzip.compress(REAL * 40))
    before = _gz_threads()
    lines = read_lines(str(path))
    head = list(itertools.islice(lines, 10))
    lines.close()
    assert len(head) == 10 and _gz_threads() == before


LOGS = [
    FIXTURES / "vllm/corpus/gen-a1_plain_c10.log",
    FIXTURES / "vllm/corpus/gen-a2_decode_steady_c10.log",
    FIXTURES / "sglang/corpus/gen-a1_plain_c10.log",
]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.parent.name + "/" + p.name)
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
def test_stdin_is_read_sparsely_with_the_file_events(
    path: Path,
    gz: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """``zcat x.gz | logscope events -`` reads sparsely too (in one pass: the head that detects the engine,
    then skipping), with the events of reading the file by name."""
    import io

    from logscope.api import _scan_literals, iter_file_events
    from logscope.parsers import dialect
    from logscope.parsers.scan import scanner

    one = path.read_bytes()
    sc = scanner(_scan_literals(dialect("sglang" if "sglang" in path.parts else "vllm"), ()))
    # the log, then its lines that hold no anchor many times over (skipped), then the log again
    filler = b"".join(ln for ln in one.splitlines(keepends=True) if not sc.scan(ln))
    data = one + filler * (20000 // filler.count(b"\n")) + one
    src = tmp_path / ("x.log.gz" if gz else "x.log")
    src.write_bytes(gzip.compress(data) if gz else data)

    handed = [0]
    real = framing.read_lines

    def counting(*a, **k):  # type: ignore[no-untyped-def]
        for line in real(*a, **k):
            handed[0] += 1
            yield line

    monkeypatch.setattr("logscope.api.read_lines", counting)

    def events(name: str) -> tuple[list[dict], ReadStats]:  # type: ignore[type-arg]
        stats = ReadStats()
        _eng, evs = iter_file_events(name, "auto", stats=stats, keep_unparsed=False)
        return [{**e.model_dump(), "file": None} for e in evs], stats

    by_name, s1 = events(str(src))
    handed_by_name = handed[0]

    class FakeStdin:
        buffer = io.BytesIO(src.read_bytes())

    monkeypatch.setattr("sys.stdin", FakeStdin())
    handed[0] = 0
    by_stdin, s2 = events("-")
    assert by_stdin == by_name and len(by_name) > 10
    assert (s2.lines, s2.bytes, s2.text_lines) == (s1.lines, s1.bytes, s1.text_lines)
    # the same lines handed over, but for the head that reading by name reads twice (engine detection)
    assert handed[0] == handed_by_name - 3000
    assert handed[0] < s2.lines / 2


@pytest.mark.parametrize("prefer", ["hyperscan", "polars", "python"])
def test_scanner_says_whether_the_block_holds_an_empty_line(prefer: str) -> None:
    from logscope.parsers.scan import scanner

    if prefer == "hyperscan":
        pytest.importorskip("hyperscan")
    sc = scanner(["Added request "], prefer=prefer)
    for block, empty in (
        (b"a\nb\n", False),
        (b"a\n\nb\n", True),
        (b"Added request x\n\n\n\n", True),
        (b"a\n \nb\n", False),
        (b"", False),
    ):
        hits = sc.scan(block)
        assert sc.empty is empty, (prefer, block)
        assert all(block[h : h + 1] != b"\n" for h in hits)  # the empty line is no hit


@pytest.mark.parametrize("carry", [b"", b"x\n", b"x\n\n", b"x\n\r\n", b"\n", b"y\r\n"])
@pytest.mark.parametrize("block", [b"a\nb\n", b"\na\n", b"\r\na\n", b"a\n\nb\n", b"a\n\r\nb\n", b"a\nb"])
def test_empty_counter_with_the_scanner_word_finds_what_the_search_found(carry: bytes, block: bytes) -> None:
    data = carry + block
    flagged = b"\n\n" in framing._without_empty_crlf(block)  # what a scanner says of the block it scanned
    plain = framing._Empty.of(data)
    told = framing._Empty.of(data, len(carry), flagged)
    if plain is not None:  # (a counter where none is needed only costs time)
        assert told is not None and told.count(0, len(data)) == plain.count(0, len(data))
