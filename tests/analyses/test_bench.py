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
    # engine figures as the analyses give them for a 200K-like run: 30,100 tokens generated in all its windows,
    # 61.35 ms per token per request in its stable segment
    s = check_bench(
        _case(),
        output_len=3000,
        engine_tokens=30100.0,
        engine_ms_per_token=61.35,
        engine_decode_method="stable decode",
    )
    dec = s.check("output_vs_engine_decode")
    assert (
        dec is not None and not dec.ok and dec.trust is None
    )  # a different quantity is never offered instead
    assert "1111.61 tok/s × 295.21 s = 328,158 tokens > the 30,100 tokens the engine generated" in dec.message
    assert s.check("ttft_vs_engine_prefill") is None  # no bound from vLLM's window-averaged prompt throughput
    tpot = s.check("tpot_vs_engine_decode")
    assert tpot is not None and tpot.ok and "61.35 ms per token per request (stable decode)" in tpot.message
    # the output throughput flag offers the same quantity measured right, never the engine's rate
    out = s.check("output_throughput")
    assert out is not None and out.trust == 101.62 and "engine" not in out.message


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
    assert (
        c is not None
        and c.ok
        and c.observed == 12.64
        and c.bound == pytest.approx(24 * 104.88497 / 199.07, rel=1e-4)
    )
    bad = _result(BENCH / "corpus" / "sglang-0.5.23-c1_kv_tight_queue.client.txt").model_copy(
        update={"concurrency": 20.0}
    )
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


def test_tpot_much_faster_than_the_engine_is_flagged() -> None:
    ev = _case().model_copy(update={"mean_tpot_ms": 20.0})
    c = check_bench(ev, engine_ms_per_token=61.35, engine_decode_method="stable decode").check(
        "tpot_vs_engine_decode"
    )
    assert c is not None and not c.ok and c.trust is None and "3.1× faster" in c.message


def test_missing_numbers_leave_checks_out() -> None:
    ev = BenchResult(successful_requests=10, output_tok_s=50.0)
    assert check_bench(ev).checks == []
    s = check_bench(
        BenchResult(successful_requests=10, duration_s=100.0, output_tok_s=350.0), output_len=3000
    )
    c = s.check("output_throughput")
    assert c is not None and not c.ok and "(at most)" in c.message and c.bound == 300.0


def test_result_model_round_trips() -> None:
    s = check_bench(_case(), output_len=3000)
    again = BenchSanity.model_validate_json(s.model_dump_json())
    assert again == s and again.line == 8


# the shared corpus's vLLM 0.32 runs with traffic: server log (fixtures/vllm/corpus/gen-*.log) and the
# client that drove it (fixtures/bench/corpus/vllm-0.32.0-*.client.txt), both copied unedited
RUNS = [
    "a1_plain_c10",
    "a2_decode_steady_c10",
    "b1_ngram_spec_greedy_repetitive",
    "b2_ngram_spec_random_sampled",
    "c1_kv_tight_waiting",
    "c5_kv_tight_preempt_burst",
    "d1_ctx512",
    "e1_slow_tokenizer_fp8kv",
]


@pytest.mark.parametrize("name", RUNS)
def test_real_clients_hold_against_their_engine_logs(name: str) -> None:
    log = FIXTURES / "vllm" / "corpus" / f"gen-{name}.log"
    client = BENCH / "corpus" / f"vllm-0.32.0-{name}.client.txt"
    rep = logscope.load([log, client]).analyze()
    assert rep.stable_decode is not None or rep.decode_under_load is not None  # a decode rate on every run
    assert rep.bench is not None and rep.bench.violations == 0, [
        c.message for e in rep.bench.results for c in e.sanity.violations
    ]
    assert "BN01" not in {f.code for f in rep.findings}
    (entry,) = rep.bench.results
    names = {c.name for c in entry.sanity.checks}
    assert {"output_vs_engine_decode", "itl_vs_tpot", "tpot_percentile_order"} <= names
    assert "ttft_vs_engine_prefill" not in names
    # the engine's tokens (each window's rate x 10 s) agree with the client's printed total within 0.1 %
    ev = _result(client)
    assert rep.bench.engine_generated_tokens == pytest.approx(ev.total_output_tokens, rel=1e-3)


def test_real_client_tpot_beside_the_engines_ms_per_token() -> None:
    # a1: 400 prompts at concurrency 10, every window holds prefill: the client's 13.80 ms TPOT beside the
    # engine's 15.23 ms/token under load (it counts the request being prefilled as running)
    rep = logscope.load(
        [
            FIXTURES / "vllm" / "corpus" / "gen-a1_plain_c10.log",
            BENCH / "corpus" / "vllm-0.32.0-a1_plain_c10.client.txt",
        ]
    ).analyze()
    assert rep.bench is not None and rep.bench.engine_decode_method == "decode under load"
    (entry,) = rep.bench.results
    assert (entry.mean_tpot_ms, entry.engine_ms_per_token) == (13.80, 15.23)
    c = entry.sanity.check("tpot_vs_engine_decode")
    assert (
        c is not None
        and c.ok
        and "beside the engine's 15.23 ms per token per request (decode under load)" in c.message
    )


def test_client_itl_far_below_tpot_is_flagged() -> None:
    ev = _result(BENCH / "corpus" / "vllm-0.32.0-a1_plain_c10.client.txt")  # mean TPOT 13.80, mean ITL 13.84
    assert (c := check_bench(ev).check("itl_vs_tpot")) is not None and c.ok
    bad = ev.model_copy(update={"mean_itl_ms": 1.06})  # 13x below the TPOT
    c = check_bench(bad).check("itl_vs_tpot")
    assert c is not None and not c.ok and "ITL is 13.0× below TPOT" in c.message
    # speculative decoding: chunks carry several tokens, so ITL above TPOT is consistent (b1: 28.70 vs 7.31)
    spec = _result(BENCH / "corpus" / "vllm-0.32.0-b1_ngram_spec_greedy_repetitive.client.txt")
    assert (c := check_bench(spec).check("itl_vs_tpot")) is not None and c.ok


def test_client_percentiles_out_of_order_are_flagged() -> None:
    ev = _result(BENCH / "corpus" / "sglang-0.5.23-a1_plain_c10.client.txt")
    c = check_bench(ev).check("tpot_percentile_order")
    assert (
        c is not None and c.ok and c.message == "TPOT (ms): median 21.63 ≤ P90 23.41 ≤ P95 23.68 ≤ P99 24.51"
    )
    bad = ev.model_copy(update={"p95_tpot_ms": 25.0})
    c = check_bench(bad).check("tpot_percentile_order")
    assert c is not None and not c.ok and "p95 25 > p99 24.51" in c.message
    c = check_bench(ev.model_copy(update={"mean_itl_ms": 600.0})).check("itl_percentile_order")
    assert c is not None and not c.ok and "mean 600 > max 595.11" in c.message


def test_client_throughput_below_its_own_totals_is_flagged() -> None:
    ev = _result(BENCH / "corpus" / "vllm-0.32.0-a1_plain_c10.client.txt")  # 120000 tokens / 178.89 s = 670.8
    c = check_bench(ev.model_copy(update={"output_tok_s": 600.0})).check("output_throughput")
    assert c is not None and not c.ok and c.relation == "==" and c.trust == 670.8
    assert "600.00 tok/s < 120000 generated tokens (printed total) / 178.89 s = 670.8 tok/s" in c.message
