"""Stalls (stalled, deadlock, frozen) and per-rank load, on real logs and real lines with a hole cut."""

from __future__ import annotations

from pathlib import Path

import pytest

import logscope
from logscope.analyses.base import NotApplicable, RunData
from logscope.analyses.ranks import Ranks, ranks
from logscope.analyses.stalls import Stalls, stalled_seqs, stalls
from tests.conftest import FIXTURES, ROOT

DIGEST = FIXTURES / "digest"


def _data(path: Path) -> RunData:
    return RunData.of(logscope.load(path))


def _stalls(path: Path) -> Stalls:
    res = stalls(_data(path))
    assert isinstance(res, Stalls), getattr(res, "reason", res)
    return res


def _ranks(path: Path) -> Ranks:
    res = ranks(_data(path))
    assert isinstance(res, Ranks), getattr(res, "reason", res)
    return res


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def test_frozen_vllm_hole_spans_the_missing_stats_lines() -> None:
    path = DIGEST / "ST03" / "fail-vllm-kv-tight-hole.log"
    res = _stalls(path)
    assert res.interval_s == 10.0
    [span] = res.spans
    assert span.kind == "frozen"
    assert (span.start_line, span.end_line) == (101, 102)  # 12:18:25 and 12:19:15
    assert (span.start_time, span.end_time) == ("11-30 12:18:25", "11-30 12:19:15")
    assert span.duration_s == 50.0
    assert (span.running, span.waiting) == (4, 20)
    assert span.missing_lines == 4
    assert span.resumed
    lines = _lines(path)
    for ev in span.evidence:  # the evidence lies in the stall and is the line shown
        assert span.start_line <= ev.line <= span.end_line
        assert lines[ev.line - 1].startswith(ev.text[:80])


def test_frozen_sglang_needs_a_queue_before_the_silence() -> None:
    [span] = _stalls(DIGEST / "ST03" / "fail-sglang-queue-hole.log").spans
    assert span.kind == "frozen"
    assert (span.start_time, span.end_time) == ("2026-11-30 12:45:22", "2026-11-30 12:46:05")
    assert (span.running, span.waiting) == (2, 20)
    # the end of a run: 10 running, queue 0, then quiet and SIGINT: idle, not frozen
    assert _stalls(DIGEST / "ST03" / "pass-sglang-end.log").spans == []


def test_silence_across_a_process_change_is_a_restart() -> None:
    # 802 s between APIServer pid=5781 (11 running, 13 waiting) and pid=7155
    assert _stalls(DIGEST / "ST03" / "pass-vllm-restart.log").spans == []


def test_deadlock_two_windows_running_zero_with_a_queue() -> None:
    [span] = _stalls(DIGEST / "ST02" / "fail-vllm-v0-pending-changed.log").spans
    assert span.kind == "deadlock"
    assert (span.start_line, span.end_line, span.windows, span.waiting) == (3, 5, 2, 6)
    assert _stalls(DIGEST / "ST02" / "pass-vllm-v0-idle.log").spans == []


def test_stalled_generation_against_the_runs_own_peak() -> None:
    path = DIGEST / "ST01" / "fail-sglang-reporter-collapse.log"
    res = _stalls(path)
    assert res.peak_tok_s == 199.6  # median of the first three lines (199.51, 199.60, 199.70)
    [span] = res.spans
    assert span.kind == "stalled"
    assert (span.start_line, span.end_line, span.windows, span.running) == (4, 10, 7, 5)
    data = _data(path)
    assert sorted(data.events[i].line for i in stalled_seqs(data)) == [4, 5, 6, 7, 8, 9, 10]
    # 0.2 tok/s all run long: slow, not stalled
    assert _stalls(DIGEST / "ST01" / "pass-vllm-v0-slow-throughout.log").spans == []


@pytest.mark.parametrize(
    "path",
    sorted((FIXTURES / "vllm" / "corpus").glob("gen-*.log"))
    + sorted((FIXTURES / "sglang" / "corpus").glob("gen-*.log"))
    + sorted((ROOT / "engine_logs").glob("*.log"))
    + sorted((FIXTURES / "case").glob("*.log")),
    ids=lambda p: p.name,
)
def test_no_stall_in_the_real_runs(path: Path) -> None:
    res = stalls(_data(path))
    assert isinstance(res, NotApplicable) or res.spans == [], [s.detail for s in res.spans]


def test_ranks_of_two_vllm_engines() -> None:
    res = _ranks(DIGEST / "RK01" / "pass-vllm-dp-engines.log")
    assert [x.rank for x in res.ranks] == ["engine 0", "engine 1"]
    assert [(x.max_running, x.max_waiting, x.mean_gen_tok_s) for x in res.ranks] == [
        (93, 214, 1304.1),
        (57, 198, 912.0),
    ]
    assert [x.running_share_pct for x in res.ranks] == [62.0, 38.0]
    assert [x.waiting_share_pct for x in res.ranks] == [51.9, 48.1]
    assert res.moments == 1 and res.imbalances == []


def test_ranks_of_sglang_dp_groups_and_a_queue_imbalance() -> None:
    res = _ranks(DIGEST / "RK01" / "pass-sglang-dp-16ranks.log")
    assert [x.rank for x in res.ranks] == ["DP9", "DP13", "DP14", "DP15"]
    assert res.imbalances == []
    bad = _ranks(DIGEST / "RK01" / "fail-sglang-dp-queue-changed.log")
    [im] = bad.imbalances
    assert (im.kind, im.rank, im.moments, im.of_moments) == ("queue", "DP13", 1, 1)
    assert "96 of the 152 waiting" in im.detail


def test_ranks_not_applicable_with_one_engine() -> None:
    res = ranks(_data(ROOT / "engine_logs" / "vllm-0.32-decode-steady-c10.log"))
    assert isinstance(res, NotApplicable) and "one series" in res.reason


def test_a_queue_nobody_is_admitted_from_is_a_stall_at_any_rate() -> None:
    [span] = _stalls(DIGEST / "ST01" / "fail-vllm-v0-queue-held-changed.log").spans
    assert span.kind == "stalled"
    assert (span.start_line, span.end_line, span.windows, span.running, span.waiting) == (1, 6, 6, 2, 14)
    assert "at most 5.4 % full" in span.detail
    assert _stalls(DIGEST / "ST01" / "pass-vllm-v0-decode-no-queue.log").spans == []


def test_without_stalls_leaves_the_stalled_windows_out_of_a_series() -> None:
    from logscope.analyses.series import decode_series
    from logscope.analyses.stalls import without_stalls

    data = _data(DIGEST / "ST01" / "fail-sglang-reporter-collapse.log")
    [series] = decode_series(data)
    kept = without_stalls(data, series)
    assert [x.line for x in kept.samples] == [1, 2, 3]  # the three lines at ~200 tok/s before the stall
    clean = _data(DIGEST / "ST01" / "pass-vllm-v0-decode-no-queue.log")
    [same] = decode_series(clean)
    assert without_stalls(clean, same) is same


def test_a_silence_of_more_than_a_day_is_pasted_lines_not_a_freeze() -> None:
    # format-reference lines of several issues: 1 running at 01-22 18:27:20, the next line 10-16
    assert _stalls(DIGEST / "ST03" / "pass-vllm-pasted-days.log").spans == []
