"""The record stage's shortcuts give exactly what the plain computation gives.

Per physical line the record stage skips work where it can: ``peel`` tests a line's first
character before its regexes and does not match the previous line's ``(Name pid=N) `` prefix again;
the SGLang dialect does not match the previous line's header again and parses each distinct stamp
and tag list once; the vLLM dialect matches a line's header once for ``split_glued`` and ``header``
and rules glue out with one scan. Each test sets a shortcut against the computation it replaces, on
every fixture line and on text built to sit at the shortcut's edge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logscope.parsers import envelopes, sglang, vllm
from logscope.parsers.envelopes import _OUTER, _PROC, _REPEATED, Envelope, peel
from logscope.parsers.framing import read_lines
from logscope.parsers.pipeline import CUM_DAYS, Clock, cut_at
from logscope.parsers.sglang import SglangDialect
from logscope.parsers.vllm import VllmDialect
from tests.conftest import FIXTURES

LOGS = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".log", ".txt", ".out"))


def _texts() -> Iterator[str]:
    for path in LOGS:
        for ln in read_lines(str(path)):
            yield ln.text


def _plain_peel(text: str) -> Envelope:
    """``peel`` as it reads without its shortcuts (the definition)."""
    outer_time: str | None = None
    process: str | None = None
    for _ in range(4):
        m = _OUTER.match(text)
        if m is None:
            break
        if m.group("compose") is not None and text.startswith(("INFO", "WARNING", "ERROR", "DEBUG")):
            break
        outer_time = outer_time or m.group("iso") or m.group("ci") or m.group("journal")
        text = text[m.end() :]
    if text[:1] == "(" or " pid=" in text[:80]:
        m2 = _PROC.match(text)
        if m2 is not None:
            process = m2.group("proc")
            text = text[m2.end() :]
    repeated = 1
    if "[repeated " in text:
        m3 = _REPEATED.search(text)
        if m3 is not None:
            repeated = int(m3.group("n")) + 1
            text = text[: m3.start()]
    return Envelope(text, process, outer_time, repeated)


def _fresh_peel(text: str) -> Envelope:
    envelopes._last_proc = None
    return peel(text)


def _plain_header(d: Any, text: str) -> Any:
    """The dialect's header with nothing remembered from earlier lines and empty caches."""
    d._last = None
    d._last_match = ("", None)
    for cache in (sglang._STAMPS, sglang._RANKS, vllm._STAMPS, vllm._HEADERS):
        cache.clear()
    parsed = d.header(text)
    return None if parsed is None else (dataclasses.asdict(parsed[0]), parsed[1])


def _header(d: Any, text: str) -> Any:
    parsed = d.header(text)
    return None if parsed is None else (dataclasses.asdict(parsed[0]), parsed[1])


# a few real prefixes, and what may follow them where a regex that looked past its match would differ
PROCS = [
    "(APIServer pid=26354) ",
    "(EngineCore_DP0 pid=456) ",
    "(RayWorkerWrapper pid=9, ip=10.0.0.1) ",
    "(VllmWorker TP3 pid=12) ",
    "(pid=7) ",
    "(raylet) ",
    "Worker_TP1 pid=3) ",
]
SG_HEADERS = [
    "[2025-06-01 12:00:00] ",
    "[2025-06-01 12:00:00 TP0] ",
    "[2025-06-01 12:00:00.123 DP1 TP3 EP3] ",
    "[12:00:00 TP0] ",
    "[ 2025-06-01 12:00:00 TP1] ",
    "  [2025-06-01 12:00:00 TP0] ",
    "2025-06-01 12:00:00 TP0] ",
    "[2025-06-01 12:00:00 encode_dp_worker[3]] ",
    "[2025-06-01 12:00:00]",
]
TAILS = [
    "",
    " ",
    "x",
    "]",
    "] ",
    " TP1] x",
    "TP1] ",
    "0] ",
    ".5] ",
    ") ",
    "pid=1) x",
    ", ip=1.2.3.4) ",
    "INFO:     127.0.0.1 - GET",
    "INFO 06-01 12:00:00 [a.py:1] glued",
    "Decode batch, #running-req: 1",
    "[2025-06-01 12:00:01 TP0] glued",
    " [repeated 3x across cluster]",
]


def test_peel_equals_its_definition_on_fixtures() -> None:
    for text in _texts():
        assert peel(text) == _plain_peel(text), text
        assert _fresh_peel(text) == _plain_peel(text), text


@pytest.mark.parametrize("prefix", PROCS)
def test_peel_after_the_same_process_prefix(prefix: str) -> None:
    for first in ["", "INFO x", "(Other pid=1) y"]:
        for tail in TAILS:
            for second in (prefix + tail, prefix[:-1] + tail, prefix[:-2] + tail, "(" + prefix + tail):
                peel(prefix + first)  # remembered
                assert peel(second) == _plain_peel(second), (prefix, first, second)


_LINE_CHARS = st.sampled_from(list("([]) :=.,-_|0123456789TZ pidAPIServerINFOWARNINGrepeated\t"))


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(PROCS + SG_HEADERS + ["2025-03-10T15:07:20Z ", "[2025-03-10T15:07:20Z] ", "vllm-1  | "]),
    st.lists(_LINE_CHARS, max_size=40).map("".join),
    st.lists(_LINE_CHARS, max_size=40).map("".join),
)
def test_peel_on_generated_text(prefix: str, a: str, b: str) -> None:
    for text in (a, prefix + a, prefix + b, b + prefix):
        assert peel(text) == _plain_peel(text), text


@pytest.mark.parametrize("make", [SglangDialect, VllmDialect], ids=["sglang", "vllm"])
def test_header_equals_a_fresh_parse_on_fixtures(make: Any) -> None:
    d, ref = make(), make()
    for text in _texts():
        for piece in d.split_glued(d.envelope(text).text):
            assert _header(d, piece) == _plain_header(ref, piece), piece


@pytest.mark.parametrize("make", [SglangDialect, VllmDialect], ids=["sglang", "vllm"])
def test_header_with_warm_caches_equals_a_fresh_parse_on_fixtures(make: Any) -> None:
    """The caches kept across every fixture line (stamps, rank tags, vLLM's Header per header text)
    give what a parse with empty caches gives."""
    ref = make()
    pieces = [piece for text in _texts() for piece in ref.split_glued(ref.envelope(text).text)]
    want = [_plain_header(ref, piece) for piece in pieces]
    for cache in (sglang._STAMPS, sglang._RANKS, vllm._STAMPS, vllm._HEADERS):
        cache.clear()
    d = make()
    assert [_header(d, piece) for piece in pieces] == want


def test_sglang_header_after_the_same_header() -> None:
    d, ref = SglangDialect(), SglangDialect()
    for head in SG_HEADERS:
        for tail in TAILS:
            for first in ("Decode batch", "x"):
                d.header(head + first)  # remembered
                for text in (head + tail, head[:-1] + tail, head.rstrip() + tail, " " + head + tail):
                    assert _header(d, text) == _plain_header(ref, text), (head, text)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(SG_HEADERS),
    st.lists(_LINE_CHARS, max_size=30).map("".join),
    st.lists(_LINE_CHARS, max_size=30).map("".join),
)
def test_sglang_header_on_generated_text(head: str, a: str, b: str) -> None:
    d, ref = SglangDialect(), SglangDialect()
    for text in (head + a, head + b, head[:-1] + b, a):
        assert _header(d, text) == _plain_header(ref, text), text


def test_sglang_stamp_groups_are_numbered_alike() -> None:
    """``_fields`` reads the stamp by group number from either header pattern."""
    names = ["y", "mo", "d", "h", "mi", "s", "ms"]
    for pattern in (sglang._BRACKET, sglang._CUSTOM):
        assert [pattern.groupindex[n] for n in names] == list(range(1, 8))


_LEVEL_WORDS = ("INFO ", "WARNING ", "ERROR ", "DEBUG ", "CRITICAL ")


def _plain_split_vllm(text: str) -> list[str]:
    """vLLM's ``split_glued`` as it reads without its one-scan test for glue."""
    if len(text) < 40 or not any(text.find(w, 1) > 0 for w in _LEVEL_WORDS):
        return [text]
    own = vllm._HEADER.match(text)
    return cut_at(text, (m.start() for m in vllm._GLUED.finditer(text, own.end() if own else 1)))


def test_vllm_split_glued_equals_its_definition() -> None:
    d = VllmDialect()
    glued = "(APIServer pid=1) INFO 11-30 12:04:55 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0"
    extra = [
        glued + glued,
        glued + " " + glued[18:],
        "x" * 50 + glued,
        glued[18:] + "ERROR 11-30 12:04:55 [a.py:1] x",
        "[Stage-0] INFO 11-30 12:04:55 [a.py:1] " + "y" * 40 + "WARNING 11-30 12:04:56 a.py:2] z",
        "INFO 11-30 12:04:55.123 [a.py:1] " + "y" * 40 + " 12:04:56 ",
        # a clock of another form (SGLang's), alone and with a vLLM record glued behind it
        sg := "[2026-10-18 18:01:45 TP0] Decode batch, #running-req: 0, #token: 810875, token usage: 0.06",
        sg + glued,
        sg + "INFO 10-18 18:01:45 [a.py:1] x",
    ]
    for text in [*_texts(), *extra]:
        env = d.envelope(text).text
        assert d.split_glued(env) == _plain_split_vllm(env), env


class _PlainClock:
    """``Clock`` as it read before its fields were kept in locals (the definition)."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last: float | None = None
        self._year_offset = 0.0

    def seconds(self, stamp: tuple[int | None, int | None, int | None, float]) -> float:
        year, month, day, sod = stamp
        if month is None or day is None:
            base = 0.0 if self.last is None else (self.last // 86400) * 86400
            t = base + sod
            if self.last is not None and t < self.last - 43200:
                t += 86400
        else:
            doy = CUM_DAYS[month - 1] + day - 1 if 1 <= month <= 12 else 0
            t = ((year or 0) * 365 + doy) * 86400.0 + sod + self._year_offset
            if year is None and self.last is not None and t < self.last - 180 * 86400:
                self._year_offset += 365 * 86400.0
                t += 365 * 86400.0
        if self.first is None:
            self.first = t
        self.last = t if self.last is None else max(self.last, t)
        return t


_STAMP = st.one_of(
    st.tuples(st.none(), st.integers(1, 12), st.integers(1, 31), st.floats(0, 86399)),
    st.tuples(st.integers(2020, 2030), st.integers(1, 12), st.integers(1, 31), st.floats(0, 86399)),
    st.tuples(st.none(), st.none(), st.none(), st.floats(0, 86399)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_STAMP, max_size=30))
def test_clock_equals_its_definition(stamps: list[tuple[int | None, int | None, int | None, float]]) -> None:
    c, ref = Clock(), _PlainClock()
    for stamp in stamps:
        assert c.seconds(stamp) == ref.seconds(stamp)
        assert (c.first, c.last) == (ref.first, ref.last)


# every stamp the dialects can give: two-digit months, days and hours as printed (not only valid ones)
_ANY_STAMP = st.one_of(
    st.tuples(st.none(), st.integers(0, 99), st.integers(0, 99), st.floats(0, 99 * 3600 + 99 * 60 + 100)),
    st.tuples(
        st.integers(0, 9999), st.integers(0, 99), st.integers(0, 99), st.floats(0, 99 * 3600 + 99 * 60 + 100)
    ),
    st.tuples(st.none(), st.none(), st.none(), st.floats(0, 99 * 3600 + 99 * 60 + 100)),
)


@settings(max_examples=1000, deadline=None)
@given(st.lists(_ANY_STAMP, max_size=30), _ANY_STAMP)
def test_clock_repeats_means_a_second_question_changes_nothing(
    stamps: list[tuple[int | None, int | None, int | None, float]],
    stamp: tuple[int | None, int | None, int | None, float],
) -> None:
    """``Parser.base`` keeps a header's clock seconds where ``Clock.repeats`` says so."""
    c = Clock()
    for s in stamps:
        c.seconds(s)
    offset = c.year_offset
    t = c.seconds(stamp)
    state = (c.first, c.last, c.year_offset)
    if c.repeats(stamp, offset):
        assert c.seconds(stamp) == t
        assert (c.first, c.last, c.year_offset) == state


def test_clock_repeats_is_false_where_a_second_question_moves() -> None:
    """Why ``repeats`` excludes a time alone (an hour past 23 moves the day) and a moved offset
    (a year stamp then one without, in one file, moves it on each question)."""
    c = Clock()
    stamp: tuple[int | None, int | None, int | None, float] = (None, None, None, 30 * 3600.0)
    assert not c.repeats(stamp, c.year_offset)
    assert c.seconds(stamp) != c.seconds(stamp)
    c = Clock()
    c.seconds((2, 1, 1, 0.0))
    stamp = (None, 1, 1, 0.0)
    offset = c.year_offset
    t = c.seconds(stamp)
    assert not c.repeats(stamp, offset)
    assert c.seconds(stamp) != t


def _records(path: Any) -> tuple[Any, list[Any]]:
    from logscope.parsers import detect, dialect
    from logscope.parsers.pipeline import Parser

    lines = list(read_lines(str(path)))
    d = dialect(detect(lines[:3000]) or "vllm")
    return d, list(Parser(d).records(lines))


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_base_keeps_only_what_a_fresh_computation_gives(path: Any) -> None:
    """``Parser.base`` takes the last record's header values again for the same Header: the same
    dicts, record by record, as asking for each record afresh, and the clock ends alike."""
    from logscope.parsers.pipeline import Parser

    d, recs = _records(path)
    kept, fresh = Parser(d), Parser(d)
    for rec in recs:
        fresh._memo = (None,) * 9
        assert kept.base(rec) == fresh.base(rec), (path.name, rec.line)
        fresh._memo = (None,) * 9
        assert kept.events_of(rec) == fresh.events_of(rec), (path.name, rec.line)
    assert (kept.clock.first, kept.clock.last) == (fresh.clock.first, fresh.clock.last)
