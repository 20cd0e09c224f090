"""The memory-lean forms of per-event structures give what the plain forms gave.

Coverage counts covered lines without a set of (file, line) pairs; the multi-file merge avoids a key
tuple per event; frames are built a column at a time from a kind index; the digest's ``of_kind`` and
``index_of`` work from that index; ``copy_event`` is ``model_copy`` without the per-copy fields-set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logscope.analyses.base import RunData
from logscope.analyses.frames import _dict_fields, frame, schema
from logscope.analyses.report import _union_length
from logscope.api import _merge_by_time, iter_events, load
from logscope.digest.context import Context
from logscope.events import DecodeBatch, Error, Event, Throughput, Unparsed, copy_event
from tests.conftest import FIXTURES

# -- coverage ---------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(-2, 8)), max_size=40))
def test_union_length_counts_the_covered_lines(spans: list[tuple[int, int]]) -> None:
    import polars as pl

    frame = pl.DataFrame(
        {
            "file": ["a.log" if k % 3 else "b.log" for k in range(len(spans))],
            "line": [s for s, _n in spans],
            "end": [s + n for s, n in spans],  # n < 0: an empty range
        },
        schema={"file": pl.Utf8, "line": pl.Int64, "end": pl.Int64},
    )
    expected = {
        ("a.log" if k % 3 else "b.log", line)
        for k, (s, n) in enumerate(spans)
        for line in range(s, s + n + 1)
    }
    assert _union_length(frame) == len(expected)


# -- merge of several files' events ------------------------------------------------------------------


def _merge_by_sort(per_file: list[list[Event]]) -> list[Event]:
    """The plain form: a key tuple per event, one sort."""
    keyed = []
    for fi, evs in enumerate(per_file):
        last = float("-inf")
        for i, e in enumerate(evs):
            if e.t_s is not None:
                last = e.t_s
            keyed.append((last, fi, i, e))
    keyed.sort(key=lambda k: (k[0], k[1], k[2]))
    return [k[3] for k in keyed]


times = st.one_of(st.none(), st.integers(0, 6).map(float))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(times, max_size=12), min_size=2, max_size=4), st.booleans())
def test_merge_by_time_is_the_sorted_order(files: list[list[float | None]], in_order: bool) -> None:
    per_file: list[list[Event]] = []
    for fi, ts in enumerate(files):
        if in_order:  # the usual case (the k-way merge); else the sort
            seen = [t for t in ts if t is not None]
            it = iter(sorted(seen))
            ts = [None if t is None else next(it) for t in ts]
        per_file.append([Unparsed(file=f"f{fi}", line=i + 1, t_s=t, text="") for i, t in enumerate(ts)])
    got = _merge_by_time(per_file)
    want = _merge_by_sort(per_file)
    assert [id(e) for e in got] == [id(e) for e in want]


def test_multi_file_load_aligns_clocks_like_model_copy(tmp_path: Path) -> None:
    a = tmp_path / "a.log"
    b = tmp_path / "b.log"
    line = (
        "[2026-10-18 18:0{m}:0{s} TP0] Decode batch, #running-req: 1, #token: 10, token usage: 0.01, "
        "gen throughput (token/s): 12.5, #queue-req: 0\n"
    )
    a.write_text("".join(line.format(m=1, s=s) for s in range(5)))
    b.write_text("".join(line.format(m=2, s=s) for s in range(5)))
    run = load([str(a), str(b)])
    later = [e for e in run.events if e.file == str(b)]
    assert [e.t_s for e in later] == [60.0, 61.0, 62.0, 63.0, 64.0]
    raw = list(iter_events(str(b)))
    for got, orig in zip(later, raw, strict=True):
        want = orig.model_copy(update={"t_s": got.t_s})
        assert got == want and got.model_fields_set == want.model_fields_set
        assert got.__pydantic_fields_set__ is orig.__pydantic_fields_set__  # shared, not a 2 KB copy each


def test_copy_event_is_model_copy() -> None:
    e = DecodeBatch(file="x", line=3, running=1, gen_tok_s=2.0)
    for update in ({"t_s": 1.5}, {"line": 4, "tp_rank": 0}, {}):
        got, want = copy_event(e, update), e.model_copy(update=update)
        assert got == want and type(got) is type(want)
        assert got.model_fields_set == want.model_fields_set
        assert list(got.__dict__) == list(want.__dict__)
        assert got.model_dump_json() == want.model_dump_json()
    assert e.model_fields_set == {"file", "line", "running", "gen_tok_s"}


# -- frames and the digest's views --------------------------------------------------------------------


def _frame_plain(events: list[Event], kind: str) -> pl.DataFrame:
    """The plain form: every column's list at once, ``seq`` added after."""
    sch = schema(kind)
    order = [i for i, e in enumerate(events) if e.kind == kind]
    rows = [events[i] for i in order]
    cols: dict[str, list[Any]] = {}
    for name in sch:
        values = [getattr(e, name) for e in rows]
        if name in _dict_fields(kind):
            values = [
                json.dumps(v, default=str, sort_keys=True) if isinstance(v, dict) else v for v in values
            ]
        cols[name] = values
    df = pl.DataFrame(cols, schema=sch)
    return df.with_columns(pl.Series("seq", order, dtype=pl.Int64)).select(["seq", *sch])


SAMPLES = [
    FIXTURES / "case" / "sglang-64k.log",
    FIXTURES / "case" / "vllm-64k.log",
    *sorted((FIXTURES / "bench").glob("*.txt"))[:3],
]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_frames_and_views_match_the_plain_forms(path: Path) -> None:
    events = list(iter_events(str(path)))
    data = RunData(events=events)
    for kind in {e.kind for e in events} | {"oom"}:
        assert data.frame(kind).equals(_frame_plain(events, kind).drop("raw"), null_equal=True), kind
        assert frame(events, kind).equals(_frame_plain(events, kind).drop("seq"), null_equal=True), kind
    ctx = Context(data)
    by_kind: dict[str, list[tuple[int, Event]]] = {}
    for i, e in enumerate(events):
        by_kind.setdefault(e.kind, []).append((i, e))
    for kinds in (
        ("decode_batch",),
        ("throughput", "decode_batch", "prefill_batch"),
        ("warning", "error", "unparsed", "oom"),
        ("nothing",),
    ):
        want = sorted((x for k in kinds for x in by_kind.get(k, [])), key=lambda x: x[0])
        got = ctx.of_kind(*kinds)
        assert [(i, id(e)) for i, e in got] == [(i, id(e)) for i, e in want]
    for i, e in enumerate(events[:200]):
        assert ctx.index_of(e) == i
    assert ctx.index_of(Error(message="not in the run")) is None
    assert ctx.ready_seq == next((i for i, e in enumerate(events) if e.kind == "server_ready"), None)
    assert data.ready() is next((e for e in events if e.kind == "server_ready"), None)


def test_context_without_events() -> None:
    ctx = Context(RunData(events=[Throughput(gen_tok_s=1.0, running=1, waiting=0)]))
    assert ctx.has("throughput") and not ctx.has("decode_batch")
    assert ctx.of_kind("decode_batch") == [] and ctx.of_kind("decode_batch", "prefill_batch") == []
    assert ctx.ready_seq is None
