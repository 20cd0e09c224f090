"""Saved Prometheus scrapes (parsers/prometheus.py, analyses/metrics.py) on a real vLLM 0.32 capture.

fixtures/metrics/ (README there): 24 scrapes of a KV-tight run whose log has no `Preemptions:` field
while `vllm:num_preemptions_total` rises to 41. Expected numbers are read off those files by hand.
"""

from __future__ import annotations

import gzip
import html
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscope.analyses.base import NotApplicable
from logscope.analyses.metrics import ANALYSED, MetricsSection, metrics_section, quantile
from logscope.api import load
from logscope.cli import main
from logscope.parsers.prometheus import read_metrics

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "metrics"
LOG = HERE / "vllm-kvtight-metrics.log"
SERIES = HERE / "vllm-kvtight-metrics.scrapes.txt.gz"
FINAL = HERE / "vllm-kvtight-metrics.final.metrics.txt"
GREP = HERE / "vllm-kvtight-metrics.grep.metrics.txt"


@pytest.fixture(scope="module")
def series() -> MetricsSection:
    res = metrics_section(read_metrics([str(SERIES)]), load([str(LOG)]).events)
    assert isinstance(res, MetricsSection)
    return res


def _section(paths: list[str]) -> MetricsSection:
    res = metrics_section(read_metrics(paths))
    assert isinstance(res, MetricsSection), res
    return res


def test_series_counters_gauges(series: MetricsSection) -> None:
    assert series.scrapes == 24 and series.notes == []
    assert "scrape_time" in series.time_source
    pre = series.preemptions
    assert pre is not None and pre.total == 41 and "vllm:num_preemptions_total" in pre.source
    # num_preemptions_total in the scrapes: 0 ... 12, 26, 32, 38, 41 (fixtures/metrics/README.md)
    steps = [round(i.increase) for i in series.counters["preemptions"].intervals if i.increase]
    assert steps == [12, 14, 6, 6, 3]
    gen = series.counters["generation_tokens"]
    assert gen.total == 24000 and gen.resets == 0  # 24 requests × 1000 output tokens (--ignore-eos)
    assert series.counters["requests_finished"].total == 24
    assert series.gauges["waiting"].max == 19 and series.gauges["running"].last == 0
    assert series.gauges["kv_usage_pct"].max == 100.0
    assert any(f.startswith("vllm:request_prefill_time_seconds: histogram") for f in series.other_families)


def test_histogram_quantiles_by_hand(series: MetricsSection) -> None:
    ttft = series.histograms["ttft_s"].over_run
    # final TTFT buckets: le=0.25 -> 1, 0.5 -> 1, 0.75 -> 5, 1.0 -> 24; P50 rank 12 lies in (0.75, 1.0]
    assert ttft.count == 24
    assert ttft.p50 == pytest.approx(0.75 + 0.25 * (12 - 5) / 19)
    assert ttft.p95 == pytest.approx(0.75 + 0.25 * (22.8 - 5) / 19)
    assert ttft.p99 == pytest.approx(0.75 + 0.25 * (23.76 - 5) / 19)
    assert ttft.mean == pytest.approx(18.155035495758057 / 24)
    for role in ("itl_s", "e2e_s", "tpot_s"):
        q = series.histograms[role].over_run
        assert q.count and q.p50 is not None and q.p50 <= (q.p95 or 0) <= (q.p99 or 0)
    # all 24 queue times are ~0 (mean 0.06 ms) and fall in the lowest bucket (le=0.3): "≤ 0.3 s", never "150 ms"
    queue = series.histograms["queue_s"].over_run
    assert queue.first_bucket_s == 0.3 and queue.in_first_bucket == ["p50", "p90", "p95", "p99"]
    assert series.histograms["ttft_s"].intervals  # per interval too


def test_quantile_rules() -> None:
    inf = float("inf")
    assert quantile(0.5, {1.0: 0, 2.0: 10, inf: 10}) == pytest.approx(1.5)
    assert quantile(0.99, {1.0: 5, 2.0: 5, inf: 10}) == 2.0  # in +Inf: the highest finite bound
    assert quantile(0.5, {1.0: 0, inf: 0}) is None
    assert quantile(0.5, {1.0: 4, 2.0: 5}) is None  # no +Inf bucket: not a histogram


def test_cross_check_against_log(series: MetricsSection) -> None:
    cc = series.cross_check
    assert cc is not None and "UTC+00:00" in cc.alignment and "24 of 24" in cc.alignment
    assert [c.log_gen_tok_s for c in cc.checks] == [544.6, 393.0, 293.1, 464.0, 373.5, 330.3, 0.0]
    assert cc.inconsistent == 0 and all(c.consistent for c in cc.checks)
    # the whole busy span: the log's 10 s windows add to the counter's increase within 1 %
    assert abs(cc.span_diff_pct or 99) < 1.0
    # 5 s scrapes against 10 s windows: the scrapes nearest a window's ends lie up to 2.5 s from them, so only 2 of 6
    # rated windows are within 10 %; each difference stays within what that mismatch allows
    assert (cc.rated, cc.within_10_pct, cc.beyond_allowed) == (6, 2, 0)
    assert cc.max_abs_diff_pct == pytest.approx(24.2)


def test_cross_check_one_second_scrapes() -> None:
    """The c6 recapture scraped every ~1.3 s: the same windows, compared honestly (README: vllm-c6-metrics-1s)."""
    res = metrics_section(
        read_metrics([str(HERE / "vllm-c6-metrics-1s.scrapes.txt.xz")], ANALYSED), load([str(C6_LOG)]).events
    )
    assert isinstance(res, MetricsSection) and res.scrapes == 339
    cc = res.cross_check
    assert cc is not None and "339 of 339" in cc.alignment
    assert len(cc.checks) == 35 and cc.rated == 34 and cc.inconsistent == 0
    # 25 of 34 windows within 10 % (29 with the counter interpolated); the log's whole-second stamps alone leave
    # each end half a second unshared (~10 % of a 10 s window at a steady rate)
    assert (cc.within_10_pct, cc.within_10_pct_interpolated) == (25, 29)
    # the one window beyond the allowance: 17:55:12-22, the log's 27.5 tok/s between 52.7 and 64.2 (a rate change)
    beyond = [c for c in cc.checks if c.diff_pct is not None and abs(c.diff_pct) > (c.allowed_pct or 0)]
    assert cc.beyond_allowed == 1 and [c.log_gen_tok_s for c in beyond] == [27.5]
    assert all(c.mismatch_s is not None and 1.0 <= c.mismatch_s <= 3.0 for c in cc.checks)
    assert abs(cc.span_diff_pct or 99) < 0.5  # 48,196 tokens in the log's windows, 48,000 counted


def test_grep_format_and_single_scrape() -> None:
    grep = _section([str(GREP)])
    assert grep.preemptions is not None and grep.preemptions.total == 41
    assert any("untyped" in n for n in grep.notes)
    final = _section([str(FINAL)])
    assert final.scrapes == 1 and final.counters["preemptions"].increase is None
    assert final.preemptions is not None and final.preemptions.total == 41
    assert "modification time" in final.time_source


def _scrapes(tmp_path: Path, *bodies: str) -> str:
    p = tmp_path / "s.txt"
    p.write_text("".join(f"# scrape_time {1796311000 + 10 * k}\n{b}" for k, b in enumerate(bodies)))
    return str(p)


def test_bad_input(tmp_path: Path) -> None:
    real = FINAL.read_text()
    # not exposition text
    junk = tmp_path / "junk.txt"
    junk.write_text("this is not metrics\nat all\n")
    res = metrics_section(read_metrics([str(junk)]))
    assert isinstance(res, NotApplicable) and "not read" in res.reason
    # a scrape cut mid-line: the families before the cut are read, the cut one read without its last line
    cut = real[: real.index("vllm:generation_tokens_total") + 40]
    got = _section([_scrapes(tmp_path, cut)])
    assert got.preemptions is not None and got.preemptions.total == 41
    assert any("ends mid-line" in n for n in got.notes)
    # a scrape cut mid-line inside a series: the next marker glued to its last bytes
    got = _section([_scrapes(tmp_path, cut, real)])
    assert got.scrapes == 2 and any("ends mid-line" in n for n in got.notes)
    # NaN / Inf values dropped with a note
    bad = real.replace(
        'vllm:num_requests_waiting{engine="0",model_name="/models/tiny-llama"} 0.0',
        'vllm:num_requests_waiting{engine="0",model_name="/models/tiny-llama"} NaN',
    )
    got = _section([_scrapes(tmp_path, bad)])
    assert "waiting" not in got.gauges and any("NaN/Inf" in n for n in got.notes)
    # a counter that goes down: a restart, counted from 0 again
    lower = real.replace(
        'vllm:num_preemptions_total{engine="0",model_name="/models/tiny-llama"} 41.0',
        'vllm:num_preemptions_total{engine="0",model_name="/models/tiny-llama"} 5.0',
    )
    got = _section([_scrapes(tmp_path, real, lower)])
    c = got.counters["preemptions"]
    assert c.resets == 1 and c.total == 46 and c.intervals[0].increase == 5
    assert any("went down from 41 to 5" in n for n in got.notes)
    # an unknown family is kept and listed
    got = _section([_scrapes(tmp_path, real + "# TYPE my_thing gauge\nmy_thing 3\n")])
    assert "my_thing: gauge" in got.other_families


def test_folder_of_timestamped_files(tmp_path: Path) -> None:
    with gzip.open(SERIES, "rt") as fh:
        text = fh.read()
    parts = text.split("# scrape_time ")[1:]
    for part in parts[-3:]:
        stamp, body = part.split("\n", 1)
        (tmp_path / f"metrics-{stamp}.prom").write_text(body)
    got = _section([str(tmp_path)])
    assert got.scrapes == 3 and "name" in got.time_source
    assert got.counters["generation_tokens"].total == 24000


def test_cli_analyze_and_metrics() -> None:
    runner = CliRunner()
    out = runner.invoke(main, ["analyze", str(LOG), "--metrics", str(GREP), "--format", "json"])
    assert out.exit_code == 0, out.output
    rep = json.loads(out.output)
    assert rep["metrics"]["preemptions"]["total"] == 41
    assert rep["metrics"]["preemptions"]["source"].startswith("vllm:num_preemptions_total")
    out = runner.invoke(main, ["analyze", str(LOG), "--metrics", str(SERIES), "--format", "markdown"])
    assert out.exit_code == 0 and "## Server metrics" in out.output and "41 preemptions" in out.output
    out = runner.invoke(main, ["metrics", str(SERIES), "--log", str(LOG), "--format", "json"])
    assert out.exit_code == 0 and json.loads(out.output)["cross_check"]["inconsistent"] == 0
    out = runner.invoke(main, ["metrics", str(LOG)])  # a log is no exposition text
    assert out.exit_code == 3 and "no Prometheus scrape" in out.output


def test_slo_gates() -> None:
    from logscope.analyses.slo import SloSyntaxError, evaluate, parse_slo

    assert parse_slo("ttft_p95<=2s, tpot_p95<50ms,error_rate<=1%")[0][1:] == ("ttft_p95", "<=", 2000.0, "ms")
    assert parse_slo("error_rate<=0.01")[0][3] == 1.0
    for bad in ("foo<3", "ttft_p95<=2", "error_rate<=2s", "ttft_p95=2s", ""):
        with pytest.raises(SloSyntaxError):
            parse_slo(bad)
    run = load([str(LOG), str(HERE / "vllm-kvtight-metrics.client.txt")])
    m = _section([str(SERIES)])
    got = evaluate(
        "ttft_p95<=2s,tpot_p95<=50ms,itl_p99<=100ms,error_rate<=1%,queue_p99<=1s,queue_p99<=100ms",
        run.events,
        m,
    )
    by = {(c.gate): c for c in got.checks}
    ttft = by["ttft_p95<=2s"]  # the client prints no P95 TTFT: from the histogram (984.2 ms, see above)
    assert (
        ttft.status == "pass" and ttft.source and ttft.source.startswith("metrics vllm:time_to_first_token")
    )
    assert ttft.measured == pytest.approx(1000 * (0.75 + 0.25 * (22.8 - 5) / 19), abs=1e-3)
    assert by["tpot_p95<=50ms"].status == "fail"
    itl = by["itl_p99<=100ms"]  # the client printed P99 ITL 128.04 ms: the client comes first
    assert itl.status == "fail" and itl.measured == 128.04 and (itl.source or "").startswith("client ")
    err = by["error_rate<=1%"]
    assert err.status == "pass" and err.measured == 0 and "0 failed of 24" in (err.source or "")
    # queue times all in the lowest bucket (<= 0.3 s): decides "<= 1 s", not "<= 100 ms"
    assert by["queue_p99<=1s"].status == "pass" and by["queue_p99<=1s"].bound == "at_most"
    assert by["queue_p99<=100ms"].status == "unknown"
    assert not got.passed and got.failed == 2 and got.unknown == 1
    # nothing gives the value: unknown, never pass
    alone = evaluate("ttft_p95<=2s", load([str(LOG)]).events, None)
    assert alone.checks[0].status == "unknown" and alone.checks[0].measured is None and not alone.passed


def test_cli_slo_exit_codes() -> None:
    runner = CliRunner()
    base = [
        "analyze",
        str(LOG),
        "--bench",
        str(HERE / "vllm-kvtight-metrics.client.txt"),
        "--metrics",
        str(SERIES),
        "--format",
        "json",
    ]
    ok = runner.invoke(main, [*base, "--slo", "ttft_p95<=2s,error_rate<=1%"])
    assert ok.exit_code == 0, ok.output
    assert "SLO PASS: ttft_p95 984.21 ms <= 2000 ms" in ok.stderr
    fail = runner.invoke(main, [*base, "--slo", "ttft_p95<=2s,tpot_p95<=50ms,error_rate<=1%"])
    assert fail.exit_code == 2 and "SLO FAIL: tpot_p95 71.67 ms <= 50 ms" in fail.stderr
    assert json.loads(fail.stdout)["slo"]["failed"] == 1
    unknown = runner.invoke(main, ["analyze", str(LOG), "--slo", "ttft_p95<=2s"])
    assert unknown.exit_code == 1 and "SLO UNKNOWN" in unknown.stderr
    assert runner.invoke(main, ["analyze", str(LOG), "--slo", "ttft<=2s"]).exit_code == 3  # a usage error


C6_LOG = HERE / "vllm-c6-metrics-1s.log"
C6_GREP = HERE / "vllm-c6-metrics-1s.metrics.txt"


def test_c6_preemptions_from_the_metrics() -> None:
    """c6 again (corpus README: c5's KV-tight server and client, then a grep of /metrics; the original files are not
    in the corpus): the log has no `Preemptions:` field, `vllm:num_preemptions_total 71.0` in the grep."""
    assert "Preemptions:" not in C6_LOG.read_text()
    plain = load([str(C6_LOG)]).analyze()
    assert plain.disturbances is not None and plain.disturbances.preemptions is None
    assert "disturbances.preemptions" in plain.not_applicable
    rep = load([str(C6_LOG)]).analyze(metrics=[str(C6_GREP)])
    d = rep.disturbances
    assert d is not None and d.preemptions == 71 and d.preemptions_not_applicable is None
    assert (d.preemptions_source or "").startswith("metrics: vllm:num_preemptions_total")
    assert "disturbances.preemptions" not in rep.not_applicable
    out = CliRunner().invoke(main, ["analyze", str(C6_LOG), "--metrics", str(C6_GREP)])
    assert out.exit_code == 0 and "71 preemptions (server metrics)" in " ".join(out.output.split())


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json", "br"])
def test_c6_preemptions_with_their_source_in_every_format(fmt: str) -> None:
    """`analyze c6.log --metrics c6.metrics.txt` states the counter's 71 and where it comes from, in each format
    (br: the observability aggregate, its source in the key BR leaves open)."""
    out = CliRunner().invoke(main, ["analyze", str(C6_LOG), "--metrics", str(C6_GREP), "--format", fmt])
    assert out.exit_code == 0, out.output
    if fmt in ("json", "br"):
        doc = json.loads(out.output)
        if fmt == "json":
            total, source = doc["disturbances"]["preemptions"], doc["disturbances"]["preemptions_source"]
        else:
            obs = doc["results"]["observability"]
            total = obs["components"][0]["aggregate"]["preemptions"]["mean"]
            source = obs["logscope_preemptions_source"]
        assert total == 71 and source.startswith("metrics: vllm:num_preemptions_total")
        assert "vllm-c6-metrics-1s.metrics.txt:1" in source
        return
    flat = " ".join((html.unescape(out.output) if fmt == "html" else out.output).split())
    assert "71 preemptions (server metrics)" in flat
    # the source: the counter, the file it was read from, and that the file's time is its modification time
    assert "71 (source: metrics: vllm:num_preemptions_total in the metrics (last scrape" in flat
    assert "by its file's modification time" in flat


SGLANG_DOCS = HERE / "sglang-docs-production.metrics.txt"


def test_sglang_scrape_from_its_docs() -> None:
    """A real SGLang scrape (`curl http://localhost:30000/metrics` printed in SGLang's docs/references/
    production_metrics.md, an 0.3-era server under 11k requests; README): the sglang: names map to the roles."""
    m = _section([str(SGLANG_DOCS)])
    assert m.notes == []
    assert m.counters["generation_tokens"].total == 7557572 and m.counters["prompt_tokens"].total == 8128902
    assert (m.gauges["running"].last, m.gauges["waiting"].last) == (162, 2826)
    assert m.gauges["kv_usage_pct"].last == pytest.approx(28.0)  # sglang:token_usage 0.28, a fraction
    assert m.preemptions is None and m.finished_by_reason == {}  # SGLang has neither counter
    # TTFT: 2,513 of 11,008 within the top finite bucket (30 s): every quantile is only "at least 30 s"
    ttft = m.histograms["ttft_s"].over_run
    assert ttft.count == 11008 and ttft.p50 == 30.0 and ttft.in_inf_bucket == ["p50", "p90", "p95", "p99"]
    # the old per-token name: P50 rank 3,700,378.5 in (0.075, 0.1] (433,413 -> 4,950,195)
    itl = m.histograms["itl_s"]
    assert itl.family == "sglang:time_per_output_token_seconds" and itl.over_run.count == 7400757
    assert itl.over_run.p50 == pytest.approx(0.075 + 0.025 * (0.5 * 7400757 - 433413) / (4950195 - 433413))
    assert itl.over_run.p99 == pytest.approx(0.5 + 0.25 * (0.99 * 7400757 - 7312226) / (7339675 - 7312226))
    assert m.histograms["e2e_s"].over_run.in_inf_bucket == ["p50", "p90", "p95", "p99"]
    assert "sglang:func_latency_seconds: histogram" in m.other_families
    out = CliRunner().invoke(main, ["metrics", str(SGLANG_DOCS)])
    assert out.exit_code == 0 and "≥ 30,000" in out.output  # a +Inf quantile is shown as a bound


def test_sglang_ranks_counted_once(tmp_path: Path) -> None:
    """SGLang 0.5's scheduler metrics carry tp_rank/pp_rank/moe_ep_rank (format notes): two TP ranks of one DP group
    report the same batch, so the running count is the lowest rank's, not their sum; two DP groups add."""
    base = SGLANG_DOCS.read_text().replace(
        'sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 162.0',
        'sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="0"} 162.0\n'
        'sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="1"} 162.0\n'
        'sglang:num_running_reqs{dp_rank="1",model_name="m",tp_rank="2"} 7.0\n'
        'sglang:num_running_reqs{dp_rank="1",model_name="m",tp_rank="3"} 7.0',
    )
    got = _section([_scrapes(tmp_path, base)])
    assert got.gauges["running"].last == 169


def test_summary_for_callers(series: MetricsSection) -> None:
    from logscope.analyses.metrics import summary

    s = summary(series)
    assert s is not None and summary(None) is None
    assert s["preemptions"] == 41 and s["generation_tokens"] == 24000 and s["waiting_max"] == 19
    assert s["ttft_p95_s"] == series.histograms["ttft_s"].over_run.p95 and "ttft_p95_s_bound" not in s
    assert s["queue_p50_s"] == 0.3 and s["queue_p50_s_bound"] == "at_most"  # all in the lowest bucket
    assert s["error_rate_pct"] == 0.0
    sg = summary(_section([str(SGLANG_DOCS)]))
    assert sg is not None and sg["ttft_p50_s"] == 30.0 and sg["ttft_p50_s_bound"] == "at_least"
    assert sg["error_rate_pct"] is None and sg["preemptions"] is None  # SGLang 0.3 has neither counter


MS_LOG = HERE / "vllm-c6-metrics-ms.log"
MS_SERIES = HERE / "vllm-c6-metrics-ms.scrapes.txt.xz"


def test_cross_check_millisecond_stamps_every_window_within_10_pct() -> None:
    """c6 with the log's stamps to the millisecond (a logging config, README: vllm-c6-metrics-ms) and ~0.6 s scrapes:
    each window's ends are known, the counter is read linearly between the scrapes around them, and every window
    holding tokens agrees with the log's rate within 10 % (the largest 3.6 %, the 133-token tail window)."""
    events = load([str(MS_LOG)]).events
    stats = [e for e in events if e.kind == "throughput"]
    assert (
        len(stats) == 18 and stats[0].time == "12-03 21:07:43.505" and stats[1].time == "12-03 21:07:53.505"
    )
    assert (stats[2].t_s or 0) - (stats[1].t_s or 0) == pytest.approx(10.005)  # the parser keeps the fraction
    res = metrics_section(read_metrics([str(MS_SERIES)], ANALYSED), events)
    assert isinstance(res, MetricsSection) and res.scrapes == 323
    cc = res.cross_check
    assert cc is not None and cc.stamp_resolution_s == 0.001 and "stamps hold 0.001 s" in cc.alignment
    assert len(cc.checks) == 18 and cc.rated == 17 and cc.inconsistent == 0
    # the windows are the printed gaps between stats lines, 10.000-10.040 s; the first one is assumed (10 s)
    assert [c.window_assumed for c in cc.checks] == [True] + [False] * 17
    assert all(10.0 <= c.window_end - c.window_start <= 10.041 for c in cc.checks)
    assert (cc.within_10_pct_interpolated, cc.enough_tokens, cc.within_10_pct_enough) == (17, 17, 17)
    worst = max(cc.checks, key=lambda c: abs(c.interpolated_diff_pct or 0.0))
    assert worst.log_gen_tok_s == 13.3 and worst.interpolated_diff_pct == pytest.approx(-3.58, abs=0.01)
    assert cc.span_log_tokens == 48001.0 and cc.span_metrics_tokens == 48000.0
    assert res.preemptions is not None and res.preemptions.total == 76


def test_cross_check_whole_second_stamps_rule() -> None:
    """The 1 s recapture's whole-second stamps: read linearly, 29 of the 33 windows of at least 100 tokens are within
    10 %; the misses are where the rate changed within a second of a window's end."""
    res = metrics_section(
        read_metrics([str(HERE / "vllm-c6-metrics-1s.scrapes.txt.xz")], ANALYSED), load([str(C6_LOG)]).events
    )
    assert isinstance(res, MetricsSection) and res.cross_check is not None
    cc = res.cross_check
    assert cc.stamp_resolution_s == 1.0 and (cc.enough_tokens, cc.within_10_pct_enough) == (33, 29)
    # the 6-token window (0.6 tok/s) is below the rule
    assert [c.window_tokens for c in cc.checks if (c.window_tokens or 0) < 100 and c.log_gen_tok_s > 0] == [
        6.0
    ]


IDLE_SERIES = HERE / "vllm-idle-gap.scrapes.txt.xz"


def test_ttft_after_idle_not_slow_on_a_warm_server() -> None:
    """Three bursts of 8 requests with ~55 s idle between them (README: vllm-idle-gap): both gaps are found and the
    8 first tokens right after each come at 1.16x and 0.98x the run's median TTFT (91 ms): not slow."""
    res = metrics_section(read_metrics([str(IDLE_SERIES)], ANALYSED))
    assert isinstance(res, MetricsSection) and res.scrapes == 143
    idle = res.idle_ttft
    assert idle is not None and res.idle_ttft_not_applicable is None
    assert idle.run_ttft_p50_s == pytest.approx(0.0914, abs=1e-4)
    assert [round(g.idle_s) for g in idle.gaps] == [53, 61]
    assert [g.requests_after for g in idle.gaps] == [8, 8]
    assert [g.ttft_mean_after_s for g in idle.gaps] == [pytest.approx(0.1057), pytest.approx(0.0894)]
    assert [g.ratio_to_p50 for g in idle.gaps] == [1.16, 0.98]
    assert idle.slow_gaps == 0 and not any(g.slow or g.from_first_scrape for g in idle.gaps)
    out = CliRunner().invoke(main, ["metrics", str(IDLE_SERIES)])
    assert out.exit_code == 0 and "0 of 2 idle gap(s) followed by slow first tokens" in " ".join(
        out.output.split()
    )


def test_ttft_after_idle_needs_a_series() -> None:
    """One scrape has no interval: no answer, and the reason."""
    res = _section([str(C6_GREP)])
    assert res.idle_ttft is None and res.idle_ttft_not_applicable is not None


def test_ttft_after_idle_from_the_start_not_slow() -> None:
    """No warm-up request: the first 8 requests come 69 s after `Application startup complete` (the client's initial
    test run skipped; README: vllm-idle-cold). vLLM 0.32 CPU warms up at start, so they are not slow either:
    0.85x the run's median (117 ms); the idle stretch is counted from the series' first scrape."""
    res = metrics_section(read_metrics([str(HERE / "vllm-idle-cold.scrapes.txt.xz")], ANALYSED))
    assert isinstance(res, MetricsSection) and res.scrapes == 137 and res.idle_ttft is not None
    idle = res.idle_ttft
    assert [g.from_first_scrape for g in idle.gaps] == [True, False]
    assert [g.requests_after for g in idle.gaps] == [8, 8]
    assert [g.ratio_to_p50 for g in idle.gaps] == [0.85, 0.86] and idle.slow_gaps == 0


def test_ttft_after_idle_twice_the_median_is_not_far_above() -> None:
    """A noisy neighbour (README: vllm-idle-neighbour): three busy loops pinned to the engine's core started during
    the first idle stretch and stopped 2 s after the next burst's first request. The 8 first tokens right after it
    average 814 ms, 2.21x the run's median (368 ms) and 0.45 s above it: below both bars (3x, +0.5 s), no alarm;
    the second gap's burst is back at 0.84x."""
    res = metrics_section(read_metrics([str(HERE / "vllm-idle-neighbour.scrapes.txt.xz")], ANALYSED))
    assert isinstance(res, MetricsSection) and res.scrapes == 202 and res.idle_ttft is not None
    idle = res.idle_ttft
    assert idle.run_ttft_p50_s == pytest.approx(0.3676, abs=1e-4)
    assert [g.requests_after for g in idle.gaps] == [8, 8]
    assert [g.ttft_mean_after_s for g in idle.gaps] == [pytest.approx(0.8137), pytest.approx(0.3089)]
    assert [g.ratio_to_p50 for g in idle.gaps] == [2.21, 0.84] and idle.slow_gaps == 0
