"""--format br: llm-d's benchmark report (BR v0.2) written through the llmd-benchmark-report package and
validated by it; --bench reads such a report back, and the package's own published example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import logscope
from logscope.cli import main
from logscope.parsers.bench import result_file_events
from logscope.render.br import build_br
from tests.conftest import FIXTURES

br_pkg = pytest.importorskip("llmd_benchmark_report")  # the `br` extra (in `test`)

LOG = FIXTURES / "vllm" / "corpus" / "gen-a2_decode_steady_c10.log"
CLIENT = FIXTURES / "bench" / "corpus" / "vllm-0.32.0-a2_decode_steady_c10.client.txt"
EXAMPLE = FIXTURES / "bench" / "clients" / "br-v0.2-example.yaml"


def _write(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "report.br.json"
    res = CliRunner().invoke(main, ["analyze", *args, "--format", "br", "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_br_written_by_logscope_passes_the_packages_validator(tmp_path: Path) -> None:
    out = _write(tmp_path, str(LOG), "--bench", str(CLIENT))
    doc = json.loads(out.read_text())
    report = br_pkg.load_benchmark_report(doc)  # the package's validator (pydantic models of BR v0.2)
    assert type(report).__name__ == "BenchmarkReportV02"
    import jsonschema

    jsonschema.validate(doc, json.loads(br_pkg.make_json_schema("0.2")))  # and its published JSON schema
    agg = doc["results"]["request_performance"]["aggregate"]
    # the client's figures (a2: 20 requests x 1024 in / 3000 out, mean TTFT 614.11 ms, 598.63 tok/s)
    assert agg["requests"] == {
        "total": 20,
        "failures": 0,
        "input_length": {"units": "count", "mean": 1024.0},
        "output_length": {"units": "count", "mean": 3000.0},
    }
    assert agg["latency"]["time_to_first_token"] == {
        "units": "ms",
        "mean": 614.11,
        "p50": 593.62,
        "p99": 1186.26,
    }
    assert agg["throughput"]["output_token_rate"] == {"units": "tokens/s", "mean": 598.63}
    eng = doc["scenario"]["stack"][0]["standardized"]
    assert (eng["tool"], eng["tool_version"], eng["model"]["name"]) == ("vllm", "0.32.0", "unknown")
    assert doc["scenario"]["load"]["standardized"]["concurrency"] == 10
    assert doc["run"]["time"] == {"duration": "PT100.23S"}


def test_br_without_a_client_holds_no_request_figures(tmp_path: Path) -> None:
    doc = json.loads(_write(tmp_path, str(LOG)).read_text())
    br_pkg.load_benchmark_report(doc)
    assert "request_performance" not in doc["results"] and "load" not in doc["scenario"]
    assert doc["results"]["observability"]["components"][0]["aggregate"]["running_requests"]["mean"] == 10.0


def test_bench_reads_a_br_back_with_the_clients_figures(tmp_path: Path) -> None:
    out = _write(tmp_path, str(LOG), "--bench", str(CLIENT))
    (back,) = result_file_events(str(out)) or []
    run = logscope.load([LOG, CLIENT])
    (orig,) = run.of_kind("bench_result")
    assert back.client == "br"
    for f in (
        "successful_requests",
        "failed_requests",
        "total_input_tokens",
        "total_output_tokens",
        "output_tok_s",
        "request_throughput",
        "duration_s",
        "mean_ttft_ms",
        "median_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "p99_itl_ms",
        "max_concurrency",
    ):
        assert getattr(back, f) == getattr(orig, f), f


def test_the_packages_published_example_is_read_with_its_figures() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    agg = raw["results"]["request_performance"]["aggregate"]
    (e,) = result_file_events(str(EXAMPLE)) or []
    assert e.client == "br" and e.extra["tool"] == "inference-perf"
    assert e.successful_requests == agg["requests"]["total"] - agg["requests"]["failures"] == 500
    ttft = agg["latency"]["time_to_first_token"]  # seconds in the file
    assert e.mean_ttft_ms == pytest.approx(ttft["mean"] * 1000) and e.p95_ttft_ms == pytest.approx(
        ttft["p95"] * 1000
    )
    assert e.median_ttft_ms == pytest.approx(ttft["p50"] * 1000)
    assert e.mean_itl_ms == pytest.approx(agg["latency"]["inter_token_latency"]["mean"] * 1000)  # s/token
    assert e.output_tok_s == agg["throughput"]["output_token_rate"]["mean"]
    assert e.duration_s == pytest.approx(49.97206788184121)  # run.time.duration PT49.97206788184121S
    assert e.request_rate == 10 and e.max_concurrency is None  # concurrency .inf: no limit
    assert "time_series" in e.extra["not_kept"]


def test_build_br_is_a_plain_dict() -> None:
    doc = build_br(logscope.load(LOG).analyze())
    assert doc["version"] == "0.2" and len(doc["run"]["uid"]) == 32


def test_compare_writes_each_runs_br(tmp_path: Path) -> None:
    """compare --format br: one BR a run (a BR describes one run), BASE first, each tagged with its side and
    label, each accepted by the package's validator, each with its own client's figures."""
    a1_log = FIXTURES / "vllm" / "corpus" / "gen-a1_plain_c10.log"
    a1_client = FIXTURES / "bench" / "corpus" / "vllm-0.32.0-a1_plain_c10.client.txt"
    out = tmp_path / "compare.br.json"
    res = CliRunner().invoke(
        main,
        [
            "compare",
            str(a1_log),
            str(LOG),
            "--bench",
            str(a1_client),
            str(CLIENT),
            "--label",
            "a1",
            "--label",
            "a2",
            "--format",
            "br",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code in (0, 1, 2), res.output  # the verdict's code (docs/contract.md), not a failure
    docs = json.loads(out.read_text())
    assert [d["run"]["keywords"][-2:] for d in docs] == [["base", "a1"], ["other", "a2"]]
    for d in docs:
        br_pkg.load_benchmark_report(d)
    ttft = [
        d["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"]["mean"]
        for d in docs
    ]
    assert ttft == [344.68, 614.11]  # each client file's Mean TTFT (ms)
