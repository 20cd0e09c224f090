"""The Kimi-K3 case (fixtures/case, README there): every figure of CASE-kimi-k3.md from the logs alone."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

import logscope
from logscope.analyses.compare import Comparison
from logscope.analyses.report import Report

from ..conftest import FIXTURES

CASE = FIXTURES / "case"
pytestmark = pytest.mark.skipif(not (CASE / "vllm-64k.log").exists(), reason="case fixtures not written yet")


@cache
def report(name: str) -> Report:
    rep = logscope.load(str(CASE / f"{name}.log")).analyze()
    assert isinstance(rep, Report)
    return rep


@cache
def comparison(base: str, other: str) -> Comparison:
    return logscope.compare(
        logscope.load(str(CASE / f"{base}.log")), logscope.load(str(CASE / f"{other}.log"))
    )


# -- decode --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "samples", "mean", "lo", "hi", "median", "lines"),
    [
        ("vllm-64k", 5, 501.0, 439.2, 537.0, 511.2, (384, 392)),
        ("vllm-200k", 17, 163.0, 157.8, 166.6, 163.2, (354, 386)),
        ("sglang-64k", 52, 335.0, 313.27, 417.86, 333.275, (399, 450)),
        ("sglang-200k", 65, 268.0, 252.36, 287.91, 268.14, (439, 503)),
    ],
)
def test_stable_decode(
    name: str, samples: int, mean: float, lo: float, hi: float, median: float, lines: tuple[int, int]
) -> None:
    sd = report(name).stable_decode
    assert sd is not None
    assert sd.concurrency == 10
    assert sd.samples == samples
    assert sd.mean_tok_s == pytest.approx(mean, abs=0.005)
    assert (sd.min_tok_s, sd.max_tok_s) == (lo, hi)
    assert sd.median_tok_s == pytest.approx(median, abs=0.006)
    assert (sd.start_line, sd.end_line) == lines
    assert sd.excluded == []  # the first SGLang decode line is a prefill window, not an outlier


def test_stable_decode_values_and_trend() -> None:
    sd = report("vllm-64k").stable_decode
    assert sd is not None and sd.values_tok_s == [537.0, 531.4, 439.2, 511.2, 486.2]
    sd200 = report("vllm-200k").stable_decode
    assert sd200 is not None and sd200.trend is not None
    assert sd200.trend.slope_tok_s_per_min / 6 == pytest.approx(-0.418, abs=0.001)  # per 10 s window


def test_per_request() -> None:
    v, s = report("vllm-200k").stable_decode, report("sglang-200k").stable_decode
    assert v is not None and s is not None
    assert v.per_request_tok_s == pytest.approx(16.3) and v.ms_per_token == pytest.approx(61.3, abs=0.06)
    assert s.per_request_tok_s == pytest.approx(26.8) and s.ms_per_token == pytest.approx(37.3, abs=0.02)
    v64 = report("vllm-64k").stable_decode
    assert v64 is not None
    assert v64.per_request_peak_tok_s == pytest.approx(53.7) and v64.ms_per_token_at_peak == pytest.approx(
        18.6, abs=0.03
    )


def test_degradation_vllm() -> None:
    deg = comparison("vllm-64k", "vllm-200k").degradation
    assert deg.ratio_mean == 3.07
    assert deg.labels["ratio_mean"] == "501 / 163 = 3.07x by mean"
    assert deg.ratio_median == 3.13
    assert deg.ratio_base_peak_over_other_mean == 3.29  # the article's figure, labelled as mixed
    assert "537 / 163 = 3.29x" in deg.labels["ratio_base_peak_over_other_mean"]
    assert "mixed" in deg.labels["ratio_base_peak_over_other_mean"]
    assert deg.ratio_peak == pytest.approx(537.0 / 166.6, abs=0.005)
    assert deg.context_ratio == pytest.approx(3.0, abs=0.05)


def test_degradation_sglang() -> None:
    deg = comparison("sglang-64k", "sglang-200k").degradation
    assert deg.ratio_mean == 1.25
    assert deg.labels["ratio_mean"] == "335 / 268 = 1.25x by mean"
    assert deg.context_ratio == 3.0  # 196,608 / 65,536 prompt tokens from the chunk series


def test_not_an_ab_test() -> None:
    cmp = comparison("vllm-200k", "sglang-200k")
    diffs = {d.setting: (d.base, d.other) for d in cmp.config_differences if d.both_printed}
    assert diffs["engine"] == ("vllm", "sglang")
    assert diffs["decode_context_parallel"] == (1, 8)
    assert diffs["memory_fraction"] == (0.95, 0.876)
    assert "kv_cache_dtype" not in diffs  # fp8 and fp8_e4m3 are one dtype
    assert cmp.warning is not None and cmp.warning.startswith("Not an A/B test")
    assert comparison("vllm-64k", "vllm-200k").warning is None


# -- prefill -------------------------------------------------------------------------------------
def test_sglang_six_chunk_decay() -> None:
    pf = report("sglang-200k").prefill
    assert pf is not None and pf.chunk_size == 32768
    series = {c.start_line: c for c in pf.chunk_series}
    c = series[384]
    assert (c.end_line, c.chunks, c.new_tokens) == (389, 6, 196608)
    assert c.tok_s == [22265.43, 21064.17, 19628.52, 18475.06, 17243.71, 16408.29]
    assert c.decay_pct == -26.3
    assert series[390].tok_s[0] == 22512.08  # the next request starts again near 22K
    assert series[378].excluded_chunks == [1]  # its first chunk's rate counts the idle time before it
    assert len(pf.chunk_series) == 10


def test_first_chunk_kept_when_the_log_begins_mid_run(tmp_path: Path) -> None:
    # the same six chunks in a log that begins at line 384 (no start-up, no earlier prefill line): the first
    # chunk's predecessor is outside the file, its rate is the batch's own, and the decay stays -26.3 %
    # (dropping it gave 21,064.17 -> 16,408.29 = -22.1 %)
    lines = (CASE / "sglang-200k.log").read_text(encoding="utf-8").splitlines(keepends=True)
    part = tmp_path / "sglang-200k-from-384.log"
    part.write_text("".join(lines[383:400]), encoding="utf-8")
    pf = logscope.load(part).analyze().prefill
    assert pf is not None
    first = pf.chunk_series[0]
    assert (first.start_line, first.chunks, first.excluded_chunks) == (1, 6, [])
    assert first.tok_s[0] == 22265.43 and first.decay_pct == -26.3


def test_prefill_rates() -> None:
    v = report("vllm-200k").prefill
    assert v is not None and v.sustained is not None
    assert (v.sustained.min_tok_s, v.sustained.max_tok_s) == (19660.8, 22937.6)  # the article's 19K-23K
    s = report("sglang-200k").prefill
    assert s is not None
    assert (s.min_tok_s, s.max_tok_s) == (16376.32, 22518.97)


def test_decode_starvation() -> None:
    st64 = report("vllm-64k").prefill
    st200 = report("vllm-200k").prefill
    assert st64 is not None and st64.decode_starvation is not None
    assert [w.line for w in st64.decode_starvation.windows] == [380, 381]
    assert st64.decode_starvation.boundary_lines == [382]
    assert st64.decode_starvation.long_prefill_token_threshold == 0
    assert st200 is not None and st200.decode_starvation is not None
    assert [w.line for w in st200.decode_starvation.windows] == list(range(344, 352))


# -- speculative decoding ------------------------------------------------------------------------
def test_spec_200k_is_net_cost() -> None:
    sd = report("vllm-200k").spec_decode
    assert sd is not None and sd.stable_segment is not None
    seg = sd.stable_segment
    assert seg.accepted_tok_s == pytest.approx(21.34) and seg.drafted_tok_s == pytest.approx(991.61)
    assert seg.wasted_draft_pct == pytest.approx(97.85, abs=0.01)
    assert sd.verdict == "net cost" and "net cost" in sd.verdict_reason
    assert (sd.accepted_tokens, sd.drafted_tokens) == (3875, 182805)  # the client's block
    assert sd.run.acceptance_length_range == (1.05, 1.17)
    assert sd.draft_tokens == 7


def test_spec_64k() -> None:
    sd = report("vllm-64k").spec_decode
    assert sd is not None and sd.stable_segment is not None
    assert sd.run.acceptance_length_range == (2.27, 2.51)
    assert sd.run.acceptance_rate_range_pct is not None
    lo, hi = sd.run.acceptance_rate_range_pct
    assert 18.0 <= lo and hi <= 21.6
    # token-weighted: 1 + 14586 accepted / (73248 drafted / 7) over the stable windows
    assert sd.stable_segment.mean_acceptance_length == pytest.approx(1 + 14586 / (73248 / 7), abs=0.001)
    assert (sd.accepted_tokens, sd.drafted_tokens) == (17414, 88032)
    assert sd.per_position_acceptance is not None and len(sd.per_position_acceptance) == 7


@pytest.mark.parametrize(
    ("name", "length", "rate"),
    [("sglang-64k", (1.21, 1.55), (3.0, 8.0)), ("sglang-200k", (1.05, 1.17), (1.0, 2.0))],
)
def test_spec_sglang(name: str, length: tuple[float, float], rate: tuple[float, float]) -> None:
    sd = report(name).spec_decode
    assert sd is not None
    assert sd.run.acceptance_length_range == length
    assert sd.run.acceptance_rate_range_pct == rate
    assert sd.verdict == "net cost"
    assert sd.draft_tokens == 7  # speculative_num_steps; num_draft_tokens 8 counts the root


# -- KV pool -------------------------------------------------------------------------------------
def test_kv_vllm() -> None:
    kv = report("vllm-64k").kv_pool
    assert kv is not None
    assert kv.tokens == 2_687_776 and kv.max_concurrency == 2.69 and kv.max_model_len == 1_000_000
    assert kv.memory_gib == 43.76
    assert kv.overcommit_gib == 5.28
    assert kv.memory is not None and kv.memory.suggested_kv_cache_bytes == 41317885440
    assert kv.memory.consumed_gib == 197.72 and kv.memory.activation_peak_gib == 12.82
    assert kv.memory.cuda_graph_gib == 5.13


def test_kv_sglang() -> None:
    kv = report("sglang-200k").kv_pool
    assert kv is not None
    assert kv.tokens == 916_672 and kv.max_model_len == 1_000_000
    assert kv.shortfall_pct == 8.33
    assert kv.max_running_requests == 39
    assert any("reset to 48" in n for n in kv.max_running_requests_notes)
    assert any("capped to 39 by the Mamba state cache" in n for n in kv.max_running_requests_notes)
    pools = {p.pool: p for p in kv.pools}
    assert pools["kv"].memory_gib == 11.8 and pools["kv"].seen == 8
    assert pools["draft"].tokens == 7_333_376 and pools["draft"].memory_gib == 8.74
    assert pools["mamba"].memory_gib == 10.93
    assert any("= 8 x the kv pool 916,672 (the DCP size)" in n for n in kv.notes)
    assert kv.memory is not None and kv.memory.weights_gib == 195.86 and kv.memory.available_gib == 17.08


# -- disturbances --------------------------------------------------------------------------------
def test_ooms_and_jit() -> None:
    d = report("vllm-64k").disturbances
    assert d is not None
    assert d.oom == 32 and d.oom_retried == 32 and d.oom_rounds == 4
    assert d.oom_by_rank == {f"TP{k}": 4 for k in range(8)}
    assert (d.oom_requested_gib, d.oom_free_gib) == (4.52, 2.67)
    assert d.runtime_compiles == 4
    ooms = [t for t in d.timeline if t.kind == "oom"]
    assert ooms[0].line == 345
    assert all(t.phase == "serving" and "prefill" in t.overlaps for t in ooms)
    assert any("OOM" in s and "prefill" in s for s in d.overlapping)
    jit = [t for t in d.timeline if t.kind == "compile"]
    assert [t.line for t in jit] == [343, 344, 353, 371]
    quiet = report("vllm-200k").disturbances
    assert quiet is not None and (quiet.oom, quiet.runtime_compiles) == (0, 0)


# -- cold start ----------------------------------------------------------------------------------
def test_cold_start_vllm() -> None:
    cs = report("vllm-64k").cold_start
    assert cs is not None
    assert cs.total_s == 636.0 and cs.total_min == 10.6
    assert (cs.start_time, cs.ready_time) == ("10-18 17:06:21", "10-18 17:16:57")
    phases = {p.name: p for p in cs.phases}
    assert phases["engine init"].seconds == 409.61 and phases["engine init"].source == "printed"
    assert phases["weights"].seconds == pytest.approx(163.8, abs=0.1)
    assert phases["profiling/warmup run"].range_s == (13.84, 16.87)
    assert phases["CUDA graph capture"].range_s == (85.0, 88.0)
    assert phases["CUDA graph capture"].memory_gib == 5.13


def test_cold_start_sglang() -> None:
    cs = report("sglang-64k").cold_start
    assert cs is not None
    assert cs.total_s == 614.0 and cs.total_min == pytest.approx(10.2, abs=0.05)
    phases = {p.name: p for p in cs.phases}
    assert phases["weights"].seconds == pytest.approx(141.0, abs=0.1)
    init = next(p for p in cs.phases if p.name.startswith("engine init after weights"))
    assert init.seconds == 369.0 and init.source == "timestamps"
    cap = phases["CUDA graph capture"]
    assert cap.seconds == pytest.approx(330.0, abs=1.0)  # ~5.5 min: target verify + draft extend


def test_report_keys() -> None:
    d = report("vllm-64k").to_dict()
    assert list(d) == [
        "logscope_version",
        "engine",
        "engine_version",
        "files",
        "lines",
        "not_applicable",
        "coverage",
        "stable_decode",
        "prefill",
        "spec_decode",
        "kv_pool",
        "cold_start",
        "disturbances",
        "findings",
        "bench",
        "stalls",
        "ranks",
        "decode_under_load",
        "notes",
        "lifetimes",
        "analyzed_lifetime",
        "metrics",
        "slo",
        "effective_config",
        "kv_saturation",
        "preempted_requests",
        "disturbance_segments",
        "requests",
    ]
    # no client output given, one engine; the V1 stats line has no `Preemptions:` field, so the count is unknown
    assert isinstance(d["findings"], list)
    assert list(d["not_applicable"]) == ["disturbances.preemptions", "bench", "ranks", "preempted_requests"]
    assert d["disturbances"]["preemptions"] is None
    for key in (
        "method",
        "concurrency",
        "samples",
        "duration_s",
        "mean_tok_s",
        "median_tok_s",
        "min_tok_s",
        "max_tok_s",
        "per_request_tok_s",
        "ms_per_token",
        "start_line",
        "end_line",
    ):
        assert key in d["stable_decode"]


def test_cold_start_span_named_by_what_it_holds(tmp_path: Path) -> None:
    # sglang-200k's own lines: the span from the start-up timings line (356) to ready holds no start-up work
    names = [p.name for p in report("sglang-200k").cold_start.phases]  # type: ignore[union-attr]
    assert "API server up -> ready" in names
    # the same lines with the draft CUDA graph capture (lines 336-351) printed after the start-up timings line,
    # as versions that log the scheduler first do: the span is named for the capture it holds
    lines = (CASE / "sglang-200k.log").read_text(encoding="utf-8").splitlines(keepends=True)[:366]
    moved = lines[:335] + lines[351:356] + lines[335:351] + lines[356:]
    part = tmp_path / "sglang-200k-capture-after-summary.log"
    part.write_text("".join(moved), encoding="utf-8")
    cs = logscope.load(part).analyze().cold_start
    assert cs is not None
    assert "engine init line -> ready (holds CUDA graph capture)" in [p.name for p in cs.phases]
    assert "API server up -> ready" not in [p.name for p in cs.phases]
