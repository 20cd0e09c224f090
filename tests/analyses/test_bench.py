"""Sanity checks of client benchmark numbers: the case's inflated throughput, clean runs, each bound."""

from __future__ import annotations

from pathlib import Path

import pytest

import logscope
from logscope.analyses.bench import BenchSanity, check_bench
from logscope.events import BenchResult
from logscope.parsers.bench import result_file_events
from tests.conftest import FIXTURES

BENCH = FIXTURES / "bench"


def _result(path: Path) -> BenchResult:
    (ev,) = [e for e in logscope.load(path).events if isinstance(e, BenchResult)]
    return ev


def _case() -> BenchResult:
    return _result(BENCH / "case-vllm-200k-inflated.client.txt")


def test_case_inflated_output_throughput_is_flagged_against_the_physical_bound() -> None:
    s = check_bench(_case(), output_len=3000)
    c = s.check("output_throughput")
    assert c is not None and not c.ok and not s.ok
    assert c.observed == 1111.61
    assert c.bound == pytest.approx(10 * 3000 / 295.21, abs=1e-3)  # 101.62 tok/s
    assert c.trust == 101.62
    assert "1111.61 tok/s > 10 requests × 3000 tokens / 295.21 s = 101.6 tok/s" in c.message
    assert "10.9×" in c.message and "trust 101.6 tok/s" in c.message
    # the same bound from the printed total alone, without the requested length
    c2 = check_bench(_case()).check("output_throughput")
    assert c2 is not None and not c2.ok and c2.bound == c.bound and "30000 generated tokens" in c2.message
    # what else the block shows: total throughput inflated the same way; latencies and Little's law fine
    assert [x.name for x in s.violations] == ["output_throughput", "total_throughput"]
    for name in ("request_throughput", "p99_e2e_within_duration", "duration_vs_latency"):
        ok = s.check(name)
        assert ok is not None and ok.ok, name


def test_case_against_the_engine_log() -> None:
    s = check_bench(_case(), output_len=3000, engine_decode_tok_s=163.0, engine_decode_running=10,
                    engine_prefill_tok_s=21000.0)
    dec = s.check("output_vs_engine_decode")
    assert dec is not None and not dec.ok and dec.trust == 163.0
    assert "1111.61 tok/s > the engine's stable decode rate 163.0 tok/s" in dec.message
    ttft = s.check("ttft_vs_engine_prefill")
    assert ttft is not None and ttft.ok and ttft.bound == pytest.approx(2000000 / 10 / 21000 * 1000, rel=1e-6)
    tpot = s.check("tpot_vs_engine_decode")
    assert tpot is not None and tpot.ok and "61.35 ms per token per request" in tpot.message


def test_the_same_numbers_from_the_saved_json() -> None:
    (ev,) = result_file_events(str(BENCH / "vllm-save-result.json")) or []
    c = check_bench(ev, output_len=3000).check("output_throughput")
    assert c is not None and not c.ok and c.trust == 101.62


CLEAN = sorted((BENCH / "corpus").glob("*.client.txt")) + sorted((BENCH / "corpus").glob("*.log"))


# The variants' numbers were re-drawn by hand (their sidecars say so): one no longer adds up, and the
# checks see it. SGLang prints Concurrency = sum of E2E latencies / duration; the real runs agree to 0.1 %.
KNOWN = {"sglang-bench-serving-result-block-tpot-fix-partial": ["concurrency"]}


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: p.stem)
def test_real_client_output_passes_every_check(path: Path) -> None:
    s = check_bench(_result(path))
    assert [c.name for c in s.violations] == KNOWN.get(path.stem, []), [c.message for c in s.violations]
    names = {c.name for c in s.checks}
    if "client.txt" in path.name:  # complete blocks: every arithmetic check applies
        assert {"output_throughput", "total_throughput", "request_throughput", "duration_vs_latency"} <= names


def test_sglang_printed_concurrency_is_checked() -> None:
    s = check_bench(_result(BENCH / "corpus" / "sglang-0.5.23-c1_kv_tight_queue.client.txt"))
    c = s.check("concurrency")
    assert c is not None and c.ok and c.observed == 12.64 and c.bound == pytest.approx(24 * 104.88497 / 199.07, rel=1e-4)
    bad = _result(BENCH / "corpus" / "sglang-0.5.23-c1_kv_tight_queue.client.txt").model_copy(update={"concurrency": 20.0})
    c = check_bench(bad).check("concurrency")
    assert c is not None and not c.ok and c.trust == 12.64


def test_littles_law_catches_a_duration_too_short_for_the_latencies() -> None:
    ev = _case().model_copy(update={"duration_s": 120.0})
    s = check_bench(ev)
    c = s.check("duration_vs_latency")
    assert c is not None and not c.ok
    assert c.bound == pytest.approx(10 * 284.58 / 10)
    assert "10 requests × 284.58 s mean latency / 10 (concurrency limit) = 284.58 s" in c.message
    lat = s.check("p99_e2e_within_duration")
    assert lat is not None and not lat.ok


def test_latency_estimated_from_ttft_and_tpot_when_e2e_is_not_printed() -> None:
    ev = _case().model_copy(update={"mean_e2e_ms": None, "median_e2e_ms": None, "p99_e2e_ms": None})
    c = check_bench(ev).check("duration_vs_latency")
    assert c is not None and c.ok
    assert c.bound == pytest.approx((125210.80 + 2999 * 45.21) / 1000)
    assert "TTFT + tokens × TPOT" in c.message


def test_ttft_below_the_engines_prefill_time_is_flagged() -> None:
    ev = _case().model_copy(update={"mean_ttft_ms": 900.0})
    c = check_bench(ev, engine_prefill_tok_s=21000.0).check("ttft_vs_engine_prefill")
    assert c is not None and not c.ok and "9523.8 ms" in c.message and "prefix-cache" in c.message


def test_tpot_much_faster_than_the_engine_is_flagged() -> None:
    ev = _case().model_copy(update={"mean_tpot_ms": 20.0})
    c = check_bench(ev, engine_decode_tok_s=163.0, engine_decode_running=10).check("tpot_vs_engine_decode")
    assert c is not None and not c.ok and c.trust == 61.35 and "3.1× faster" in c.message


def test_missing_numbers_leave_checks_out() -> None:
    ev = BenchResult(successful_requests=10, output_tok_s=50.0)
    assert check_bench(ev).checks == []
    s = check_bench(BenchResult(successful_requests=10, duration_s=100.0, output_tok_s=350.0), output_len=3000)
    c = s.check("output_throughput")
    assert c is not None and not c.ok and "(at most)" in c.message and c.bound == 300.0


def test_result_model_round_trips() -> None:
    s = check_bench(_case(), output_len=3000)
    again = BenchSanity.model_validate_json(s.model_dump_json())
    assert again == s and again.line == 8
