"""Stable decode segment: ramp, drain, idle gaps, DP engines, outliers, noise, trend, SGLang lines."""

from __future__ import annotations

import random

import pytest

from logscope.analyses.base import NotApplicable
from logscope.analyses.decode import StableDecode, stable_decode

from .build import run, sglang, stats


def _ok(res: StableDecode | NotApplicable) -> StableDecode:
    assert isinstance(res, StableDecode), getattr(res, "reason", res)
    return res


RAMP = [(20000.0, 50.0, 2), (21000.0, 120.0, 5), (19000.0, 200.0, 8), (8000.0, 380.0, 10)]
DRAIN = [(0.0, 300.0, 7), (0.0, 180.0, 4), (0.0, 60.0, 1), (0.0, 0.0, 0)]


def test_ramp_plateau_drain() -> None:
    plateau = [(0.0, v, 10) for v in (510, 505, 500, 498, 495, 490, 488, 485, 480, 478, 475, 470)]
    res = _ok(stable_decode(run(stats(RAMP + plateau + DRAIN))))
    assert res.concurrency == 10
    assert res.samples == 12
    assert (res.start_line, res.end_line) == (104, 115)
    assert res.mean_tok_s == pytest.approx(sum(v for _p, v, _r in plateau) / 12, abs=0.01)
    assert (res.min_tok_s, res.max_tok_s) == (470, 510)
    assert res.duration_s == pytest.approx(120.0)
    assert res.per_request_tok_s == pytest.approx(res.mean_tok_s / 10, abs=1e-3)
    assert res.ms_per_token == pytest.approx(1000 / res.per_request_tok_s, abs=0.01)
    assert res.excluded == []
    assert res.trend is not None and res.trend.direction == "falling"
    assert "running = 10" in res.method and "lines 104-115" in res.method


def test_idle_gap_splits_and_longest_wins() -> None:
    first = [(0.0, 400.0, 10)] * 4
    second = [(0.0, 300.0, 10)] * 6
    rows = RAMP + first + [(0.0, 300.0, 10, 0, 90.0)] + second[1:]  # 90 s with no line: the engine was idle
    res = _ok(stable_decode(run(stats(rows))))
    assert res.samples == 6
    assert res.mean_tok_s == 300.0
    assert [s.samples for s in res.other_segments] == [4]


def test_prefill_window_breaks_segment() -> None:
    rows = [(0.0, 500.0, 10)] * 3 + [(1024.0, 800.0, 10)] + [(0.0, 450.0, 10)] * 5
    res = _ok(stable_decode(run(stats(rows))))
    assert res.samples == 5 and res.mean_tok_s == 450.0
    assert res.start_line == 104


def test_single_outlier_window_is_left_out_not_split() -> None:
    vals = [500.0, 498, 503, 497, 501, 60, 499, 502, 496, 500, 498, 501]
    res = _ok(stable_decode(run(stats([(0.0, v, 10) for v in vals]))))
    assert res.samples == 11
    assert [x.gen_tok_s for x in res.excluded] == [60]
    assert res.excluded[0].reason.startswith("outlier")
    assert res.mean_tok_s == pytest.approx(sum(v for v in vals if v != 60) / 11, abs=0.01)
    assert (res.start_line, res.end_line) == (100, 111)
    assert "outlier" in res.method


def test_single_odd_running_count_is_bridged() -> None:
    rows = [(0.0, 500.0, 10)] * 5 + [(0.0, 470.0, 9)] + [(0.0, 500.0, 10)] * 5
    res = _ok(stable_decode(run(stats(rows))))
    assert res.samples == 10
    assert [x.running for x in res.excluded] == [9]
    assert (res.start_line, res.end_line) == (100, 110)


def test_two_odd_windows_do_split() -> None:
    rows = [(0.0, 500.0, 10)] * 5 + [(0.0, 470.0, 9)] * 2 + [(0.0, 400.0, 10)] * 4
    res = _ok(stable_decode(run(stats(rows))))
    assert res.samples == 5 and res.mean_tok_s == 500.0


def test_noise_is_not_outliers() -> None:
    rng = random.Random(4)
    vals = [500 * (1 + rng.uniform(-0.12, 0.12)) for _ in range(30)]
    res = _ok(stable_decode(run(stats([(0.0, v, 10) for v in vals]))))
    assert res.samples == 30 and res.excluded == []
    assert res.mean_tok_s == pytest.approx(sum(vals) / 30, abs=0.01)


def test_a_drifting_segment_gives_way_to_its_longest_stationary_part() -> None:
    vals = [600 - 10 * k for k in range(20)]  # decode slows as the context grows: -31.7 % over 20 windows
    res = _ok(stable_decode(run(stats([(0.0, float(v), 10) for v in vals]))))
    assert res.stretch is not None and res.stretch.samples == 20
    assert res.stretch.trend_pct == pytest.approx((410 - 600) / 600 * 100, abs=0.1)
    # the longest run within 15 %: the first 10 windows (600 -> 510, -15.0 %)
    assert res.samples == 10 and res.values_tok_s == [float(600 - 10 * k) for k in range(10)]
    assert res.stationary is True and res.trend_pct == pytest.approx(-15.0)
    assert res.trend is not None and res.trend.slope_tok_s_per_min == pytest.approx(-60.0)
    assert "longest part within ±15 %" in res.method


def test_a_segment_that_drifts_throughout_says_so() -> None:
    vals = [600.0, 450.0, 330.0, 240.0]  # each window 25 % below the last
    res = _ok(stable_decode(run(stats([(0.0, v, 10) for v in vals]))))
    assert res.samples == 4 and res.stationary is False and res.stretch is None
    assert res.trend_pct is not None and res.trend_pct < -50 and "not stationary" in res.method


def test_dp_engines_per_engine_and_summed() -> None:
    e0 = stats(RAMP[:2] + [(0.0, 250.0, 5)] * 8, engine_index=0)
    e1 = stats(RAMP[:2] + [(0.0, 240.0, 5)] * 8, engine_index=1, start_line=200, t0=60.4)
    res = _ok(stable_decode(run(e0 + e1)))
    assert res.concurrency == 10
    assert res.mean_tok_s == pytest.approx(490.0)
    assert res.samples == 8
    assert [e.engine for e in res.engines] == ["engine 0", "engine 1"]
    assert [e.mean_tok_s for e in res.engines] == [250.0, 240.0]
    assert [e.concurrency for e in res.engines] == [5, 5]
    assert res.engine.startswith("sum of 2 engines")
    assert (res.start_line, res.end_line) == (102, 209)


def test_no_pure_decode_window_says_why() -> None:
    res = stable_decode(run(stats([(1000.0, 500.0, 10, 5)] * 10)))
    assert isinstance(res, NotApplicable)
    assert "no pure-decode window" in res.reason


def test_no_plateau_says_why() -> None:
    res = stable_decode(run(stats([(0.0, 500.0, r) for r in (4, 2, 5, 3, 4, 2)])))
    assert isinstance(res, NotApplicable)
    assert "no 3 consecutive" in res.reason


def test_no_lines() -> None:
    res = stable_decode(run([]))
    assert isinstance(res, NotApplicable)
    assert "no decode-rate lines" in res.reason


def test_sglang_decode_lines_with_prefill_between() -> None:
    rows: list[tuple[str, float, dict[str, object]]] = []
    t = 100.0
    for k in range(1, 11):  # ten requests arrive: prefill, then a decode line with k running
        rows.append(("p", t, {"new_seq": 1, "new_token": 8192, "running": k - 1, "input_tok_s": 20000.0}))
        rows.append(("d", t + 1, {"running": k, "gen_tok_s": 30.0 * k}))
        t += 2
    for k in range(15):
        rows.append(("d", t, {"running": 10, "gen_tok_s": 270.0 - k}))
        t += 1.5
    rows.append(("d", t, {"running": 6, "gen_tok_s": 150.0}))
    res = _ok(stable_decode(run(sglang(rows), engine="sglang")))
    assert res.concurrency == 10
    assert res.samples == 15
    assert res.mean_tok_s == pytest.approx(263.0)
    assert res.source == "SGLang Decode batch lines"
    assert res.ms_per_token == pytest.approx(1000 / 26.3, abs=0.01)


def test_sglang_prefill_inside_plateau_breaks_it() -> None:
    rows: list[tuple[str, float, dict[str, object]]] = []
    t = 0.0
    for k in range(12):
        if k == 4:
            rows.append(("p", t - 0.5, {"new_seq": 1, "new_token": 100, "running": 10}))
        rows.append(("d", t, {"running": 10, "gen_tok_s": 300.0 if k > 4 else 400.0}))
        t += 1.0
    res = _ok(stable_decode(run(sglang(rows), engine="sglang")))
    assert res.samples == 7 and res.mean_tok_s == 300.0


def test_a_stall_is_not_a_stable_decode_rate() -> None:
    # fixtures/digest/ST01 (real SGLang lines, see the README there): the reporter's rate collapses to ~15 tok/s
    # for the stall span (lines 4-10). The stalled windows are left out: the rate is that of the windows before it.
    import logscope
    from tests.conftest import FIXTURES

    rep = logscope.load(FIXTURES / "digest" / "ST01" / "fail-sglang-reporter-collapse.log").analyze()
    assert rep.stalls is not None and [(s.kind, s.start_line, s.end_line) for s in rep.stalls.spans] == [
        ("stalled", 4, 10)
    ]
    sd = rep.stable_decode
    assert sd is not None and sd.end_line < 4 and sd.mean_tok_s == 199.6
    assert "inside a stalled or deadlock span" in sd.method
    # vLLM V0 'Running: 1, Pending: 14'-shaped queue held for 6 windows: every window is in the stall, no rate
    held = logscope.load(FIXTURES / "digest" / "ST01" / "fail-vllm-v0-queue-held-changed.log").analyze()
    assert held.stable_decode is None and held.decode_under_load is None
    assert "stalled engine's trickle is no decode rate" in held.not_applicable["stable_decode"]
