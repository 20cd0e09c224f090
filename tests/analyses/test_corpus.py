"""Real logs (fixtures/*/corpus, copied from the shared corpus): every analysis gives a result or says why not."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

import logscope
from logscope.analyses.report import SECTIONS, Report

from ..conftest import FIXTURES

LOGS = sorted(FIXTURES.glob("*/corpus/*.log")) + sorted((FIXTURES / "case").glob("*.log"))
VLLM = FIXTURES / "vllm" / "corpus"


@cache
def report(path: Path) -> Report:
    rep = logscope.load(str(path)).analyze()
    assert isinstance(rep, Report)
    return rep


@pytest.mark.parametrize("path", LOGS, ids=[f"{p.parent.name}/{p.name}" for p in LOGS])
def test_result_or_reason(path: Path) -> None:
    rep = report(path)
    for name in SECTIONS:
        section = rep.section(name)
        if section is None:
            assert rep.not_applicable.get(name), f"{name}: neither a result nor a reason"
        else:
            assert name not in rep.not_applicable
            assert getattr(section, "method", ""), f"{name} has no method text"
    d = json.loads(rep.to_json())
    assert d["coverage"]["lines"] >= d["coverage"]["events"] > 0 or d["coverage"]["lines"] > 0


def _gen(name: str) -> Report:
    path = VLLM / f"gen-{name}.log"
    if not path.exists():
        pytest.skip(f"{path.name} not in the fixtures")
    return report(path)


def test_real_plateau() -> None:
    sd = _gen("a2_decode_steady_c10").stable_decode
    assert sd is not None
    assert sd.concurrency == 10 and sd.samples == 4 and (sd.start_line, sd.end_line) == (116, 119)
    assert sd.values_tok_s == [927.0, 568.9, 460.9, 383.0]
    assert sd.trend is not None and sd.trend.direction == "falling"  # decode slows as the context grows
    # 927 -> 383 tok/s is no steady rate, and no 3 of its windows (nor of the second wave's) hold within 15 %
    assert sd.trend_pct == -61.7 and sd.stationary is False and sd.stretch is None
    assert "not stationary" in sd.method and "not a steady-state rate" in sd.method
    assert [(s.start_line, s.samples) for s in sd.other_segments] == [(131, 4)]  # the second wave
    assert sd.all_plateau is not None and sd.all_plateau.samples == 8


def test_real_spec_decode_matches_the_client() -> None:
    sd = _gen("b1_ngram_spec_greedy_repetitive").spec_decode
    assert sd is not None
    # the client printed acceptance rate 78 % and acceptance length 4.76 for this run
    assert sd.acceptance_rate_pct == pytest.approx(78.0, abs=0.05)
    assert sd.mean_acceptance_length == pytest.approx(4.76, abs=0.01)
    assert sd.verdict == "pays off"


@pytest.mark.parametrize(
    "name",
    [
        "a1_plain_c10",
        "a2_decode_steady_c10",
        "b1_ngram_spec_greedy_repetitive",
        "b2_ngram_spec_random_sampled",
        "c1_kv_tight_waiting",
        "c5_kv_tight_preempt_burst",
        "d1_ctx512",
        "e1_slow_tokenizer_fp8kv",
    ],
)
def test_real_runs_with_traffic_have_a_decode_rate_and_unknown_preemptions(name: str) -> None:
    rep = _gen(name)
    assert rep.stable_decode is not None or rep.decode_under_load is not None
    d = rep.disturbances
    assert (
        d is not None and d.preemptions is None
    )  # vLLM 0.32 never prints `Preemptions:` (c6's /metrics: 75)
    assert "no `Preemptions:` field" in rep.not_applicable["disturbances.preemptions"]


def test_real_decode_under_load() -> None:
    # 400 prompts at concurrency 10: every window holds prefill (prompt 1,023.8-3,072 tok/s)
    a1 = _gen("a1_plain_c10")
    assert a1.stable_decode is None and "no pure-decode window" in a1.not_applicable["stable_decode"]
    dl = a1.decode_under_load
    assert (
        dl is not None and dl.steady and dl.concurrency == 10 and (dl.running_min, dl.running_max) == (8, 10)
    )
    # the 17 plateau windows (lines 160-522) rise 40.3 % through a dip to 298.9 tok/s (a shared VM); the
    # longest part within 15 % is the 14 windows of lines 160-439
    assert dl.stretch is not None and (dl.stretch.samples, dl.stretch.trend_pct) == (17, 40.3)
    assert (dl.samples, dl.start_line, dl.end_line, dl.stationary) == (14, 160, 439, True)
    assert dl.values_tok_s[:3] == [899.3, 805.8, 867.8] and dl.min_tok_s == 298.9
    assert (dl.mean_tok_s, dl.ms_per_token, dl.prompt_share_pct) == (623.87, 15.23, 77.6)
    assert dl.prefill_windows == 14 and "prefills included" in dl.method
    # c1: KV pool of 6,144 tokens, 4 running and 20 waiting in every window
    c1 = _gen("c1_kv_tight_waiting").decode_under_load
    assert c1 is not None and c1.steady and c1.concurrency == 4 and c1.max_waiting == 20
    assert (c1.samples, c1.mean_tok_s, c1.ms_per_token) == (6, 701.33, 5.7)
    # c5: preemptions under the tight pool swing running 2-5: the aggregate, but no per-request rate
    c5 = _gen("c5_kv_tight_preempt_burst").decode_under_load
    assert c5 is not None and not c5.steady and (c5.running_min, c5.running_max) == (2, 5)
    assert c5.values_tok_s == [802.5, 896.5, 1007.0] and c5.per_request_tok_s is None
    assert c5.per_request_not_applicable is not None and "swung from 2 to 5" in c5.per_request_not_applicable
    # e1: 13 s of load, one busy window, and it reaches back into idle time: a lower bound, said so
    e1 = _gen("e1_slow_tokenizer_fp8kv").decode_under_load
    assert e1 is not None and (e1.samples, e1.mean_tok_s, e1.partial_windows) == (1, 845.1, 1)
    assert "lower bound" in e1.method and e1.ms_per_token is None


def test_real_prefill_is_offered_load() -> None:
    pf = _gen("a1_plain_c10").prefill
    assert pf is not None and pf.measure == "offered_prompt_load" and "not a prefill speed" in pf.method


def test_real_reasons() -> None:
    assert "nothing was drafted" in _gen("b2_ngram_spec_random_sampled").not_applicable["spec_decode"]
    assert "no pure-decode window" in _gen("c1_kv_tight_waiting").not_applicable["stable_decode"]
    # c2 never became ready: nothing was served, so no preemption to be unknown about
    assert _gen("c2_startup_fail_maxlen_vs_kv").disturbances.preemptions == 0  # type: ignore[union-attr]
    assert "no 3 consecutive" in _gen("c5_kv_tight_preempt_burst").not_applicable["stable_decode"]
    c2 = _gen("c2_startup_fail_maxlen_vs_kv")
    assert c2.kv_pool is not None and c2.kv_pool.shortfall_pct == 81.64  # 6,016 of 32,768 tokens fit
    assert c2.cold_start is not None and c2.cold_start.total_s is None  # never ready


def test_benign_shutdown_error() -> None:
    # EngineDeadError after `[shutdown] API server: shutdown triggered` (SIGINT): listed, classified benign,
    # not counted as an error
    d = _gen("a2_decode_steady_c10").disturbances
    assert d is not None and d.errors == 0 and d.benign_errors == 1 and len(d.error_list) == 1
    assert d.error_list[0].benign_shutdown and d.error_list[0].phase == "shutdown"
    assert d.error_list[0].exception == "vllm.v1.engine.exceptions.EngineDeadError"


def test_real_sglang_prefill_of_tiny_batches_is_not_a_rate() -> None:
    # SGLang 0.5.23 c1: 24 prompts of 63 tokens admitted one by one as KV frees up (lines ~8 s apart); the
    # printed input throughput (median 8.36 tok/s) is 63 tokens / the spacing, not a prefill speed
    path = FIXTURES / "sglang" / "corpus" / "gen-c1_kv_tight_queue.log"
    if not path.exists():
        pytest.skip(f"{path.name} not in the fixtures")
    rep = report(path)
    assert rep.prefill is None and "fewer than 256 new tokens" in rep.not_applicable["prefill"]
