"""``ts``: the wall-clock time of every event in every kind frame and in the store, with where its date
came from (``ts_source``): the log's own full dates, a full date elsewhere in the file, or the
file's mtime; null, never guessed, when there is none."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

import logscope
from logscope.events import KINDS
from logscope.timebase import timebase
from tests.conftest import FIXTURES, ROOT

VLLM = ROOT / "engine_logs/vllm-0.32-decode-steady-c10.log"
SGLANG = FIXTURES / "case/sglang-64k.log"


@pytest.mark.parametrize("path", [VLLM, SGLANG], ids=["vllm", "sglang"])
def test_every_kind_frame_has_a_datetime_ts(path: Path) -> None:
    run = logscope.load(str(path))
    for kind in KINDS:
        df = run.frame(kind)
        assert df.schema["ts"] == pl.Datetime("us") and df.schema["ts_source"] == pl.String(), kind
    counted = [k for k, n in run.counts().items() if n and k != "unparsed"]
    assert counted
    for kind in counted:
        df = run.frame(kind).filter(pl.col("t_s").is_not_null())
        # ts - start is t_s: the same clock, on the wall
        start = run.timebase().start
        assert start is not None
        assert (
            (df["ts"] - start).dt.total_microseconds() == (df["t_s"] * 1e6).round().cast(pl.Int64)
        ).all(), kind


def test_sglang_dates_come_from_the_log() -> None:
    run = logscope.load(str(SGLANG))
    df = run.frame("decode_batch")
    assert set(df["ts_source"]) == {"log"}
    # the printed stamp and ts agree, to the second: "2026-10-18 18:15:09" in the log
    row = df.row(0, named=True)
    assert row["ts"] == datetime.strptime(row["time"], "%Y-%m-%d %H:%M:%S")


def test_vllm_year_from_mtime_and_said_so(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    shutil.copy(VLLM, log)
    # the log's first stamp is "11-30 12:09:25"; a file last written in March 2027 began in 2026
    os.utime(log, (datetime(2027, 3, 1).timestamp(),) * 2)
    run = logscope.load(str(log))
    tb = run.timebase()
    assert (tb.source, tb.start) == (
        "mtime",
        datetime(2026, 11, 30, 12, 9, 25),
    ) and "modification time" in tb.note
    os.utime(log, (datetime(2026, 12, 2).timestamp(),) * 2)
    assert timebase(logscope.load(str(log)).events).start == datetime(2026, 11, 30, 12, 9, 25)
    df = run.frame("throughput")
    first = df.row(0, named=True)
    assert first["time"] == "11-30 12:10:20" and first["ts"] == datetime(2026, 11, 30, 12, 10, 20)
    assert set(df["ts_source"]) == {"mtime"}


def test_vllm_year_from_a_collector_stamp_in_the_file() -> None:
    # line 10: "2026-05-12T08:01:39.331095044Z (APIServer pid=1) INFO 05-12 08:01:39 [loggers.py:271] ..."
    run = logscope.load(str(FIXTURES / "vllm/formats/1_5-lines-that-are-not-in-vllm-s-format-they.log"))
    tb = run.timebase()
    assert tb.source == "file_date" and tb.start == datetime(2026, 5, 12, 8, 1, 39)


def test_no_date_no_ts(tmp_path: Path) -> None:
    log = tmp_path / "stdin-like.log"
    log.write_text(VLLM.read_text())
    run = logscope.load(str(log))
    # as read from standard input: no file to take a year from
    events = [e.model_copy(update={"file": "-"}) for e in run.events]
    tb = timebase(events)
    assert tb.start is None and tb.source == "none" and tb.at(1.0) is None
    assert timebase([]).source == "none"


def test_store_has_ts_typed_times_and_unique_names(tmp_path: Path) -> None:
    from logscope.store import ingest

    logs = tmp_path / "logs"
    (logs / "a").mkdir(parents=True)
    (logs / "b").mkdir()
    shutil.copy(FIXTURES / "case/vllm-64k.log", logs / "a/run.log")  # one file name, two runs
    shutil.copy(FIXTURES / "case/sglang-64k.log", logs / "b/run.log")
    ingest([logs], tmp_path / "store")
    store = logscope.open_store(tmp_path / "store")
    runs = store.runs.collect()
    assert runs.schema["start_time"] == pl.Datetime("us") and runs.schema["end_time"] == pl.Datetime("us")
    assert runs["name"].n_unique() == runs.height == 2
    by_path = {Path(r["path"]).parent.name: r for r in runs.to_dicts()}
    assert (
        by_path["a"]["name"] == f"vllm 0.32.0 {logs / 'a/run.log'}" and by_path["a"]["ts_source"] == "mtime"
    )
    assert by_path["b"]["name"].startswith("sglang ") and by_path["b"]["ts_source"] == "log"
    assert by_path["b"]["start_time"] == datetime(2026, 10, 18, 18, 1, 45)  # SGLang's first printed stamp
    ev = store["decode_batch"].collect()
    assert (
        ev.schema["ts"] == pl.Datetime("us")
        and ev["ts"].null_count() == 0
        and set(ev["ts_source"]) == {"log"}
    )


def test_runs_sharing_a_name_are_told_apart() -> None:
    from logscope.store.layout import runs_frame

    rows = [
        {"run": "run-aaaaaaaaaaaa", "name": "vllm 0.32.0 /x/run.log"},
        {"run": "run-bbbbbbbbbbbb", "name": "vllm 0.32.0 /x/run.log"},
        {"run": "other-cccccccccccc", "name": "sglang unknown-version /y/run.log"},
    ]
    names = runs_frame(rows)["name"].to_list()
    assert names == [
        "sglang unknown-version /y/run.log",
        "vllm 0.32.0 /x/run.log #aaaaaaaaaaaa",
        "vllm 0.32.0 /x/run.log #bbbbbbbbbbbb",
    ]
