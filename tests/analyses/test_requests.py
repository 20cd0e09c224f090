"""Request analysis (analyses/requests.py, report key ``requests``, ``Run.requests()``) on real captures.

Expected numbers are the captures' own, counted by hand with grep (see each fixture's README):
- fixtures/vllm/captures/vllm-logreq-errors.log (vLLM 0.32 --enable-log-requests): 39 access lines (34 x 200,
  3 x 400, 2 x 404; 8 of them probes/metadata: 5 GET /metrics, /health, /v1/models, POST /tokenize),
  30 `Received request`, 4 `Aborted request(s)` each followed by `Request <id> aborted.`, no completion line;
- fixtures/vllm/no_stats/vllm-enginecore-killed.log: EngineCore SIGKILLed under load, 16 x 200 then 24 x 500
  on POST /v1/completions (plus 4 GET /metrics and 1 POST /tokenize);
- fixtures/sglang/corpus/gen-a1_plain_c10.log (SGLang 0.5.23, 200 prompts at concurrency 10).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logscope.analyses.base import NotApplicable, RunData
from logscope.analyses.requests import RequestsSection, requests_section, summary
from logscope.api import load

FIX = Path(__file__).resolve().parents[2] / "fixtures"
LOGREQ = FIX / "vllm" / "captures" / "vllm-logreq-errors.log"
KILLED = FIX / "vllm" / "no_stats" / "vllm-enginecore-killed.log"
SGLANG = FIX / "sglang" / "corpus" / "gen-a1_plain_c10.log"


def _section(path: Path) -> RequestsSection:
    res = requests_section(RunData.of(load([str(path)])))
    assert isinstance(res, RequestsSection), res
    return res


def test_request_logging_joined_by_id() -> None:
    r = _section(LOGREQ)
    assert r.access_lines == 39 and r.inference_requests == 31
    assert r.by_status == {"200": 26, "400": 3, "404": 2}
    assert sum(r.probes.values()) == 8 and r.probes["GET /metrics 200"] == 5
    assert r.http_error_rate_pct == pytest.approx(100 * 5 / 31, abs=1e-3) and r.server_error_rate_pct == 0.0
    # 30 Received ids; the 4 aborts (two lines each, ids with and without the -<hex> suffix) count once each
    assert r.logged_requests == 30 and r.outcomes == {"aborted": 4, "unknown": 26}
    assert r.abort_rate_pct == pytest.approx(100 * 4 / 30, abs=1e-3) and r.failure_rate_pct == 0.0
    assert "no line when a request completes" in r.method  # vLLM V1: unknown is not "unfinished"
    assert r.latency == {} and "no per-request latency" in (r.latency_not_applicable or "")
    assert r.in_flight and r.in_flight_max is not None and "vLLM stats lines" in (r.in_flight_source or "")


def test_per_request_table() -> None:
    run = load([str(LOGREQ)])
    df = run.requests()
    assert df.height == 30 and set(df["source"]) == {"request log"}
    row = df.filter(df["request_id"] == "cmpl-9c44fcd1f99e5825-0").row(0, named=True)
    # Received and Added at 15:00:27, `Aborted request(s) ...-8288f04f` and `Request ... aborted.` at 15:00:29
    assert row["outcome"] == "aborted" and row["time"] == "12-03 15:00:27"
    assert row["end_t_s"] - row["t_s"] == 2.0 and row["added_t_s"] == row["t_s"]
    assert df["request_id"].n_unique() == 30


def test_http_500_after_engine_killed() -> None:
    r = _section(KILLED)
    assert r.inference_requests == 40 and r.by_status == {"200": 16, "500": 24}
    assert r.http_error_rate_pct == 60.0 and r.server_error_rate_pct == 60.0
    assert r.logged_requests is None and r.abort_rate_pct is None and r.outcomes == {}  # unknown, not zero
    assert r.table_source == "access log" and r.table_rows == 40
    df = load([str(KILLED)]).requests()
    assert df.filter(df["status"] == 500).height == 24
    # vLLM's plain access lines carry no time: after_t_s is the stamp printed before each
    assert df["t_s"].null_count() == 40 and df["after_t_s"].null_count() == 0
    s = summary(load([str(KILLED)]).analyze())
    assert s is not None and s["server_error_rate_pct"] == 60.0 and s["abort_rate_pct"] is None


def test_sglang_access_and_in_flight() -> None:
    r = _section(SGLANG)
    assert r.inference_requests == 203 and r.by_status == {"200": 203} and r.http_error_rate_pct == 0.0
    assert r.in_flight_max == 10 and "SGLang Decode batch" in (r.in_flight_source or "")


def test_no_request_lines_is_not_applicable() -> None:
    log = FIX / "metrics" / "vllm-kvtight-metrics.log"
    data = RunData.of(load([str(log)]))
    got = requests_section(data)
    # this capture has access lines; one without any (c2: a start-up failure) has nothing to count
    assert isinstance(got, RequestsSection)
    failed = RunData.of(load([str(FIX / "vllm" / "corpus" / "gen-c2_startup_fail_maxlen_vs_kv.log")]))
    na = requests_section(failed)
    assert isinstance(na, NotApplicable) and "nothing counts requests" in na.reason


def test_metrics_fill_server_counts() -> None:
    m = FIX / "metrics"
    rep = load([str(m / "vllm-kvtight-metrics.log")]).analyze(
        metrics=[str(m / "vllm-kvtight-metrics.scrapes.txt.gz")]
    )
    assert rep.requests is not None
    # vllm:request_success_total{finished_reason="length"} 24 at the last scrape (--ignore-eos, 1000 tokens each)
    assert rep.requests.metrics_finished_by_reason.get("length") == 24
    assert rep.requests.metrics_error_rate_pct == 0.0 and rep.requests.metrics_abort_rate_pct == 0.0
