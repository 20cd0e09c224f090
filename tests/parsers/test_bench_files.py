"""Other clients' result files (AIPerf, GuideLLM, genai-bench, inference-perf, BR v0.2): each real file
(fixtures/bench/clients/README.md says where from) is read into ``bench_result`` with the file's own
figures, read here independently with json / yaml, converted to the field's unit only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import logscope
from logscope.events import BenchResult
from logscope.parsers.bench import result_file_events
from tests.conftest import FIXTURES

CLIENTS = FIXTURES / "bench" / "clients"


def _one(path: Path) -> BenchResult:
    got = result_file_events(str(path))
    assert got is not None and len(got) == 1, path
    return got[0]


def test_guidellm_json_figures_equal_the_file() -> None:
    raw = json.loads((CLIENTS / "guidellm-0.2-benchmarks_stripped.json").read_text())["benchmarks"][0]
    m = raw["metrics"]
    e = _one(CLIENTS / "guidellm-0.2-benchmarks_stripped.json")
    assert e.client == "guidellm" and e.complete
    assert e.successful_requests == raw["request_totals"]["successful"] == 46
    assert e.failed_requests == 0 and e.extra["incomplete_requests"] == 1
    assert e.duration_s == raw["duration"]
    assert e.total_output_tokens == m["output_token_count"]["successful"]["total_sum"] == 5888
    assert e.total_input_tokens == m["prompt_token_count"]["successful"]["total_sum"] == 11827
    assert e.output_tok_s == m["output_tokens_per_second"]["successful"]["mean"]
    assert e.request_throughput == m["requests_per_second"]["successful"]["mean"]
    ttft = m["time_to_first_token_ms"]["successful"]
    assert (e.mean_ttft_ms, e.median_ttft_ms, e.p99_ttft_ms) == (
        ttft["mean"],
        ttft["median"],
        ttft["percentiles"]["p99"],
    )
    # GuideLLM's "inter token latency" is (e2e - TTFT) / (tokens - 1) per request: vLLM's TPOT
    itl = m["inter_token_latency_ms"]["successful"]
    assert (e.mean_tpot_ms, e.p90_tpot_ms) == (
        itl["mean"],
        itl["percentiles"]["p90"],
    ) and e.mean_itl_ms is None
    lat = m["request_latency"]["successful"]
    assert e.mean_e2e_ms == pytest.approx(lat["mean"] * 1000) and e.p95_e2e_ms == pytest.approx(
        lat["percentiles"]["p95"] * 1000
    )
    # its own printed summary (benchmarks_stripped_output.txt): Out Tok/sec 198.1, TTFT mean 16.8 ms, ITL 4.9 ms
    assert (round(e.output_tok_s, 1), round(e.mean_ttft_ms, 1), round(e.mean_tpot_ms, 1)) == (
        198.1,
        16.8,
        4.9,
    )
    # nothing dropped silently: the other metrics by name, the per-request samples named as not kept
    assert e.extra["tokens_per_second_median"] == m["tokens_per_second"]["successful"]["median"]
    assert e.extra["time_per_output_token_ms_mean"] == m["time_per_output_token_ms"]["successful"]["mean"]
    assert "requests" in e.extra["not_kept"] and e.extra["run_id"] == raw["run_id"]


def test_guidellm_yaml_reads_as_the_json() -> None:
    a = _one(CLIENTS / "guidellm-0.2-benchmarks_stripped.json")
    b = _one(CLIENTS / "guidellm-0.2-benchmarks_stripped.yaml")
    skip = {"file", "raw", "extra"}
    assert a.model_dump(exclude=skip) == b.model_dump(exclude=skip)


@pytest.mark.parametrize(
    "name", ["inference-perf-summary_lifecycle_metrics.json", "inference-perf-stage_0_lifecycle_metrics.json"]
)
def test_inference_perf_summary_figures_equal_the_file(name: str) -> None:
    raw = json.loads((CLIENTS / name).read_text())
    ok = raw["successes"]
    e = _one(CLIENTS / name)
    assert e.client == "inference-perf"
    assert e.successful_requests == ok["count"] and e.failed_requests == raw["failures"]["count"] == 0
    assert e.output_tok_s == ok["throughput"]["output_tokens_per_sec"]
    assert e.input_tok_s == ok["throughput"]["input_tokens_per_sec"]
    assert e.total_tok_s == ok["throughput"]["total_tokens_per_sec"]
    assert e.request_throughput == ok["throughput"]["requests_per_sec"]
    lat = ok["latency"]
    for what, key in (
        ("ttft", "time_to_first_token"),
        ("tpot", "time_per_output_token"),
        ("itl", "inter_token_latency"),
        ("e2e", "request_latency"),
    ):
        assert getattr(e, f"mean_{what}_ms") == pytest.approx(lat[key]["mean"] * 1000)
        assert getattr(e, f"median_{what}_ms") == pytest.approx(lat[key]["median"] * 1000)
        assert getattr(e, f"p99_{what}_ms") == pytest.approx(lat[key]["p99"] * 1000)
    assert e.max_itl_ms == pytest.approx(lat["inter_token_latency"]["max"] * 1000)
    # derived exactly, and said so
    assert e.total_output_tokens == round(ok["output_len"]["mean"] * ok["count"])
    assert "total_output_tokens" in e.extra["derived"]
    assert e.extra["request_latency_p99.9"] == lat["request_latency"]["p99.9"]


def test_inference_perf_stage_values() -> None:
    e = _one(CLIENTS / "inference-perf-stage_0_lifecycle_metrics.json")
    assert (e.successful_requests, e.total_output_tokens, e.request_rate) == (60, 3741, 1.0)
    assert e.extra["load_summary_achieved_rate"] == 1.0048047820203576


def test_genai_bench_figures_equal_the_file() -> None:
    raw = json.loads((CLIENTS / "genai-bench-mock_run_data.json").read_text())["aggregated_metrics"]
    e = _one(CLIENTS / "genai-bench-mock_run_data.json")
    assert e.client == "genai-bench"
    assert (e.successful_requests, e.failed_requests, e.max_concurrency) == (32, 0, 1)
    assert e.output_tok_s == raw["mean_output_throughput_tokens_per_s"]
    assert e.input_tok_s == raw["mean_input_throughput_tokens_per_s"]
    assert e.request_throughput == pytest.approx(raw["requests_per_minute"] / 60)
    s = raw["stats"]
    assert e.mean_ttft_ms == pytest.approx(s["ttft"]["mean"] * 1000)  # seconds in the file (no _time_unit)
    assert e.p99_tpot_ms == pytest.approx(s["tpot"]["p99"] * 1000)
    assert e.median_e2e_ms == pytest.approx(s["e2e_latency"]["p50"] * 1000)
    assert e.total_output_tokens == s["num_output_tokens"]["sum"] == 3200
    assert e.extra["output_inference_speed_mean"] == s["output_inference_speed"]["mean"]
    assert e.extra["scenario"] == "D(100,100)"


def test_files_are_sniffed_by_content_not_name(tmp_path: Path) -> None:
    for name in ("guidellm-0.2-benchmarks_stripped.yaml", "inference-perf-stage_0_lifecycle_metrics.json"):
        copy = tmp_path / "results.txt"
        shutil.copy(CLIENTS / name, copy)
        assert _one(copy).client in ("guidellm", "inference-perf")
    log = tmp_path / "benchmarks.json"  # a name that says result, a server log inside
    shutil.copy(FIXTURES / "vllm" / "corpus" / "gen-d1_ctx512.log", log)
    assert result_file_events(str(log)) is None


def test_other_json_and_yaml_are_not_results(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"benchmarks": "none", "successes": 3}))
    (tmp_path / "b.yaml").write_text("version: 1\nname: x\n")
    assert result_file_events(str(tmp_path / "a.json")) is None
    assert result_file_events(str(tmp_path / "b.yaml")) is None


def test_bench_option_takes_the_other_clients() -> None:
    rep = logscope.load(
        [
            FIXTURES / "vllm" / "corpus" / "gen-d1_ctx512.log",
            CLIENTS / "inference-perf-stage_0_lifecycle_metrics.json",
        ]
    ).analyze()
    assert rep.bench is not None
    (entry,) = rep.bench.results
    assert entry.client == "inference-perf" and entry.successful_requests == 60


# -- captured here: real clients against a real vLLM 0.32 CPU server (fixtures/bench/clients/capture/README.md)
CAP = CLIENTS / "capture"


def test_guidellm_08_capture_figures_equal_the_file() -> None:
    import gzip

    raw = json.loads(gzip.decompress((CAP / "four-clients" / "guidellm-benchmarks.json.gz").read_bytes()))
    b = raw["benchmarks"][0]
    m = b["metrics"]
    e = _one(CAP / "four-clients" / "guidellm-benchmarks.json.gz")
    assert e.client == "guidellm" and (e.successful_requests, e.failed_requests) == (60, 0)
    assert e.max_concurrency == b["config"]["strategy"]["streams"] == 8
    assert (
        e.duration_s == b["duration"]
        and e.total_output_tokens == 7680 == m["output_token_count"]["successful"]["total_sum"]
    )
    assert e.output_tok_s == m["output_tokens_per_second"]["successful"]["mean"]
    assert e.mean_ttft_ms == m["time_to_first_token_ms"]["successful"]["mean"]
    assert e.mean_tpot_ms == m["inter_token_latency_ms"]["successful"]["mean"]  # (e2e - TTFT) / (n - 1)
    assert e.extra["time_per_output_token_ms_mean"] == m["time_per_output_token_ms"]["successful"]["mean"]
    assert e.extra["metrics_request_totals_total"] == 60 and e.extra["start_time"] == b["start_time"]
    # its own printed table: TTFT mean 758.3 ms, ITL mean 41.5 ms, output 159.7 tok/s
    assert (round(e.mean_ttft_ms, 1), round(e.mean_tpot_ms, 1), round(e.output_tok_s, 1)) == (
        758.3,
        41.5,
        159.7,
    )
    y = _one(CAP / "four-clients" / "guidellm-benchmarks.yaml.gz")
    assert y.model_dump(exclude={"file", "raw", "extra"}) == e.model_dump(exclude={"file", "raw", "extra"})


def test_genai_bench_capture_figures_equal_the_file() -> None:
    path = CAP / "four-clients" / "D256_128_text-to-text_num_concurrency_8_time_62s.json"
    raw = json.loads(path.read_text())
    agg = raw["aggregated_metrics"]
    e = _one(path)
    assert raw["_time_unit"] == "s" and e.client == "genai-bench"
    assert (e.successful_requests, e.total_output_tokens, e.max_concurrency) == (68, 8704, 8)
    assert e.duration_s == agg["run_duration"] and e.request_throughput == agg["requests_per_second"]
    assert e.output_tok_s == agg["mean_output_throughput_tokens_per_s"]
    assert e.mean_tpot_ms == pytest.approx(agg["stats"]["tpot"]["mean"] * 1000)
    assert e.p90_e2e_ms == pytest.approx(agg["stats"]["e2e_latency"]["p90"] * 1000)
    assert e.extra["not_kept"]["individual_request_metrics"] == "list of 68"
    assert result_file_events(str(CAP / "four-clients" / "experiment_metadata.json")) is None  # not a result


def test_inference_perf_per_request_file_summarised_like_its_summary() -> None:
    # the same run's per-request records (text fields trimmed) and summary: counts, totals and latencies agree
    per = _one(CAP / "ip-run" / "per_request_lifecycle_metrics.trimmed.json.gz")
    summ = _one(CAP / "ip-run" / "summary_lifecycle_metrics.json")
    assert per.extra["aggregated_from"] == "60 per-request records (60 ok, 0 failed)"
    assert (per.successful_requests, per.total_output_tokens) == (
        summ.successful_requests,
        summ.total_output_tokens,
    )
    assert (per.total_output_tokens, per.total_input_tokens) == (8739, 15360)
    for f in ("mean_e2e_ms", "median_e2e_ms", "p99_e2e_ms", "mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms"):
        assert getattr(per, f) == pytest.approx(getattr(summ, f), rel=1e-9), f
    assert per.mean_tpot_ms == pytest.approx(
        summ.mean_tpot_ms, rel=0.01
    )  # its TPOT excludes the first chunk's time
    assert per.duration_s == pytest.approx(summ.duration_s, rel=1e-9)


def test_aiperf_json_csv_and_records_of_one_run() -> None:
    run = CAP / "aiperf-run"
    raw = json.loads((run / "profile_export_aiperf.json").read_text())
    e = _one(run / "profile_export_aiperf.json")
    assert e.client == "aiperf" and raw["aiperf_version"] == e.extra["aiperf_version"]
    assert e.successful_requests == raw["request_count"]["avg"] == 60
    assert e.total_output_tokens == raw["total_output_tokens"]["avg"] == 8478
    assert e.duration_s == raw["benchmark_duration"]["avg"] and raw["benchmark_duration"]["unit"] == "sec"
    assert e.output_tok_s == raw["output_token_throughput"]["avg"]
    assert e.request_throughput == raw["request_throughput"]["avg"]
    ttft = raw["time_to_first_token"]
    assert ttft["unit"] == "ms" and (e.mean_ttft_ms, e.median_ttft_ms, e.p99_ttft_ms) == (
        ttft["avg"],
        ttft["p50"],
        ttft["p99"],
    )
    itl = raw["inter_token_latency"]  # AIPerf: (request latency - TTFT) / (OSL - 1) per request = TPOT
    assert (e.mean_tpot_ms, e.p90_tpot_ms) == (itl["avg"], itl["p90"]) and e.mean_itl_ms is None
    assert e.mean_e2e_ms == raw["request_latency"]["avg"]
    assert e.extra["osl_mismatch_diff_pct_avg"] == raw["osl_mismatch_diff_pct"]["avg"]  # kept, not dropped
    assert e.extra["start_time"] == raw["start_time"]
    # the CSV export: the same figures at its two decimals
    c = _one(run / "profile_export_aiperf.csv")
    for f in (
        "successful_requests",
        "total_output_tokens",
        "total_input_tokens",
        "duration_s",
        "output_tok_s",
        "mean_ttft_ms",
        "p95_ttft_ms",
        "mean_tpot_ms",
        "median_e2e_ms",
    ):
        assert getattr(c, f) == pytest.approx(getattr(e, f), abs=0.006), f
    assert c.extra["not_kept"]["csv_sections"] == ["Endpoint,GPU_Index,GPU_Name,GPU_UUID"]
    # the per-request records summarised: the JSON's percentiles again (numpy's linear interpolation)
    r = _one(run / "profile_export.jsonl.gz")
    assert r.extra["aggregated_from"] == "60 per-request records (60 ok, 0 failed)"
    for f in (
        "total_output_tokens",
        "total_input_tokens",
        "mean_ttft_ms",
        "median_ttft_ms",
        "p90_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "p95_tpot_ms",
        "mean_e2e_ms",
        "p99_e2e_ms",
    ):
        assert getattr(r, f) == pytest.approx(getattr(e, f), rel=1e-9), f
    assert r.duration_s == pytest.approx(e.duration_s, rel=1e-6)
