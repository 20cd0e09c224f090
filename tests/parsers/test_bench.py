"""Client benchmark results: result blocks (every corpus block, inside server logs, paste damage) and
``--save-result`` JSON / JSONL files.

Row values are checked against the printed text with a table of this test's own (label -> field), so
the parser's table is not checked against itself.
"""

from __future__ import annotations

import gzip
import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import logscope
from logscope.cli import main
from logscope.events import BenchResult, Throughput
from logscope.parsers import detect, dialect
from logscope.parsers.bench import BLOCK, ROW, accepts, opens, result_file_events
from logscope.parsers.framing import ReadStats, read_lines
from logscope.parsers.pipeline import Parser
from tests.conftest import FIXTURES

BENCH = FIXTURES / "bench"
CORPUS = BENCH / "corpus"
SIDECARS = sorted(CORPUS.glob("*.json"))

_STATS = {"Mean": "mean", "Median": "median", "P90": "p90", "P95": "p95", "P99": "p99", "Max": "max"}
_METRICS = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2e", "E2E Latency": "e2e"}
EXPECT: dict[str, str] = {
    "Backend": "backend",
    "Successful requests": "successful_requests",
    "Failed requests": "failed_requests",
    "Maximum request concurrency": "max_concurrency",
    "Max request concurrency": "max_concurrency",
    "Max reqeuest concurrency": "max_concurrency",
    "Benchmark duration (s)": "duration_s",
    "Total input tokens": "total_input_tokens",
    "Total input text tokens": "total_input_text_tokens",
    "Total input vision tokens": "total_input_vision_tokens",
    "Total generated tokens": "total_output_tokens",
    "Total generated tokens (retokenized)": "total_output_tokens_retokenized",
    "Request throughput (req/s)": "request_throughput",
    "Request goodput (req/s)": "request_goodput",
    "Input token throughput (tok/s)": "input_tok_s",
    "Output token throughput (tok/s)": "output_tok_s",
    "Peak output token throughput (tok/s)": "peak_output_tok_s",
    "Peak concurrent requests": "peak_concurrent_requests",
    "Total token throughput (tok/s)": "total_tok_s",
    "Total Token throughput (tok/s)": "total_tok_s",
    "Concurrency": "concurrency",
    "Accept length": "accept_length",
    "Acceptance length": "accept_length",
    "Acceptance rate (%)": "acceptance_rate_pct",
    "Drafts": "drafts",
    "Draft tokens": "draft_tokens",
    "Accepted tokens": "accepted_tokens",
    **{f"{s} {m} (ms)": f"{sv}_{mv}_ms" for s, sv in _STATS.items() for m, mv in _METRICS.items()},
}
ROW_RX = re.compile(r"^\s*(?P<label>[^:]+):\s+(?P<value>\S(?:.*\S)?)\s*$")
POS_RX = re.compile(r"^\s*Position (\d+)$")


def _events(path: Path, engine: str | None = "auto") -> list[Any]:
    return logscope.load(path, engine=engine).events


def _bench(path: Path, engine: str | None = "auto") -> list[BenchResult]:
    return [e for e in _events(path, engine) if isinstance(e, BenchResult)]


def _printed_rows(ev: BenchResult) -> list[tuple[str, str]]:
    """(label, value) of every row with a value in the event's block, read with this test's regex."""
    out = []
    for line in ev.raw.split("\n"):
        m = ROW_RX.match(line)
        if m and "Serving Benchmark" not in line:
            out.append((m.group("label"), m.group("value")))
    return out


def _num(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _check_values(ev: BenchResult) -> None:
    """Every printed value is on the event: in its field, in ``extra``, or in the per-position list."""
    d = ev.model_dump()
    for label, value in _printed_rows(ev):
        want = _num(value)
        pos = POS_RX.match(label)
        if pos:
            assert ev.per_position_acceptance_pct is not None
            assert ev.per_position_acceptance_pct[int(pos.group(1))] == pytest.approx(want)
        elif label.strip() in EXPECT:
            got = d[EXPECT[label.strip()]]
            if value in ("inf", "not set"):
                assert got is None, label
            else:
                assert got == pytest.approx(want) if isinstance(want, float) else got == want, (
                    label,
                    got,
                    want,
                )
        else:
            assert want in ev.extra.values() or value in ev.extra.values(), (label, value, ev.extra)


# -- every block of the corpus -------------------------------------------------------------------
@pytest.mark.parametrize("sidecar", SIDECARS, ids=lambda p: p.stem)
def test_corpus_block_parses_with_all_rows(sidecar: Path) -> None:
    side = json.loads(sidecar.read_text())
    log = CORPUS / (
        sidecar.name.replace("_client.json", ".client.txt") if side.get("log") else sidecar.stem + ".log"
    )
    evs = _bench(log)
    assert len(evs) == side["contains"]["bench_result_block"] == 1
    ev = evs[0]
    text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    printed = [ln for ln in text[ev.line - 1 : ev.end_line] if ROW_RX.match(ln) and "Serving" not in ln]
    want_rows = side["contains"].get("bench_metric_lines", len(printed))
    assert ev.rows == want_rows == len(printed)
    assert "cut_rows" not in ev.extra
    if "bench_result_block_complete" in side["contains"]:
        assert ev.complete == bool(side["contains"]["bench_result_block_complete"])
    else:
        assert ev.complete and text[ev.end_line - 1] == "=" * 50
    assert text[ev.line - 1].startswith("=" * 12 + " Serving Benchmark Result")
    _check_values(ev)
    assert ev.client == ("sglang" if "sglang" in sidecar.name else "vllm")


def test_corpus_blocks_spot_values() -> None:
    (b1,) = _bench(CORPUS / "vllm-0.32.0-b1_ngram_spec_greedy_repetitive.client.txt")
    assert (b1.successful_requests, b1.duration_s, b1.total_output_tokens, b1.output_tok_s) == (
        300,
        61.89,
        76800,
        1240.90,
    )
    assert (b1.acceptance_rate_pct, b1.accept_length, b1.drafts, b1.draft_tokens, b1.accepted_tokens) == (
        78.01,
        4.76,
        15319,
        73785,
        57561,
    )
    assert b1.per_position_acceptance_pct == [90.44, 78.78, 73.94, 67.81, 64.78]
    assert b1.rows == 30 and b1.complete
    (typo,) = _bench(CORPUS / "sglang-bench-serving-040post2-reqeuest-typo-partial.log")
    assert typo.max_concurrency is None and typo.backend == "sglang" and typo.extra == {"request_rate": "inf"}
    assert (
        typo.total_output_tokens_retokenized == 200185 and typo.mean_ttft_ms == 32983.07 and not typo.complete
    )
    (wide,) = _bench(CORPUS / "sglang-bench-serving-oai-chat-vision-tokens-overflow-column.log")
    assert (
        wide.backend == "sglang-oai-chat"
        and wide.total_input_vision_tokens == 652665
        and wide.mean_itl_ms == 0.0
    )
    (tt,) = _bench(CORPUS / "vllm-bench-serve-complete-block-failed-peak-tt-server.log")
    assert tt.total_tok_s == 184254.41 and tt.failed_requests == 1 and tt.peak_concurrent_requests == 611.0
    (old_t,) = _bench(CORPUS / "vllm-bench-serve-result-block-llama31-8b-sharegpt.log")
    assert old_t.total_tok_s == 19262.16 and old_t.p99_itl_ms == 185.03 and not old_t.complete


def test_blocks_need_no_engine_dialect() -> None:
    """The block rule carries its grammar: any dialect (and plain text) gives the same event."""
    log = CORPUS / "sglang-bench-serving-result-block-tpot-fix-partial.log"
    got = [_bench(log, engine=e)[0].model_dump(exclude={"engine"}) for e in ("vllm", None)]
    assert got[0] == got[1]


def test_fast_path_equals_pyparsing_on_every_block() -> None:
    files = sorted(p for p in BENCH.rglob("*") if p.suffix in (".txt", ".log"))
    seen = 0
    for f in files:
        for rec in Parser(dialect("vllm")).records(read_lines(str(f))):
            if rec.block is None:
                continue
            seen += 1
            assert BLOCK.fields(rec.message) == BLOCK.fields(rec.message, reference=True), f.name
            for line in rec.message.split("\n"):
                assert ROW.match(line) == ROW.match_pp(line), line
    assert seen >= 25


def test_block_lines_do_not_sway_engine_detection() -> None:
    """A block's single lines never match the block grammar (it needs two lines); SGLang's own rows
    are that dialect's markers, by its design, vLLM's are no engine's."""
    lines = list(read_lines(str(CORPUS / "vllm-bench-serve-complete-block-failed-peak-tt-server.log")))
    assert detect(lines) is None
    assert BLOCK.match("============ Serving Benchmark Result ============") is None
    assert BLOCK.match("Successful requests:                     785       ") is None


# -- inside a server log -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["in-server-log-interleaved.log", "in-server-log-compose.log"])
def test_block_inside_server_log_with_an_engine_line_written_into_it(name: str) -> None:
    evs = _events(BENCH / name)
    assert [(e.kind, e.line) for e in evs if e.kind in ("bench_result", "throughput")] == [
        ("throughput", 1),
        ("bench_result", 3),
        ("throughput", 15),
        ("throughput", 33),
    ]
    (ev,) = [e for e in evs if isinstance(e, BenchResult)]
    (case,) = _bench(BENCH / "case-vllm-200k-inflated.client.txt")
    skip = {"engine", "file", "line", "end_line", "raw"}
    assert ev.model_dump(exclude=skip) == case.model_dump(exclude=skip)
    assert ev.engine == "vllm" and ev.end_line == 32 and ev.complete and ev.rows == 23
    assert [e.gen_tok_s for e in evs if isinstance(e, Throughput)] == [163.2, 158.4, 12.1]
    assert len(evs) == len({(e.line, e.kind) for e in evs})  # each record once


def test_block_inside_an_sglang_server_log() -> None:
    """A real SGLang client block (d1) written into a real SGLang server log, a Decode line inside it."""
    evs = _events(BENCH / "in-sglang-server-log.log")
    assert [(e.kind, e.line) for e in evs if e.kind != "unparsed"] == [
        ("decode_batch", 1),
        ("decode_batch", 2),
        ("decode_batch", 3),
        ("bench_result", 5),
        ("decode_batch", 24),
        ("decode_batch", 49),
        ("decode_batch", 50),
    ]
    (ev,) = [e for e in evs if isinstance(e, BenchResult)]
    (alone,) = _bench(CORPUS / "sglang-0.5.23-d1_ctx512.client.txt")
    skip = {"engine", "file", "line", "end_line", "raw"}
    assert ev.model_dump(exclude=skip) == alone.model_dump(exclude=skip)
    assert ev.engine == "sglang" and ev.end_line == 48 and ev.rows == 37 and ev.complete


def test_case_block_values() -> None:
    (ev,) = _bench(BENCH / "case-vllm-200k-inflated.client.txt")
    assert (ev.successful_requests, ev.max_concurrency, ev.duration_s) == (10, 10, 295.21)
    assert (ev.total_output_tokens, ev.output_tok_s, ev.total_tok_s) == (30000, 1111.61, 7886.45)
    assert (ev.mean_ttft_ms, ev.mean_tpot_ms, ev.mean_e2e_ms, ev.p99_e2e_ms) == (
        125210.80,
        45.21,
        284580.00,
        294870.44,
    )
    assert ev.rows == 23 and ev.complete and ev.line == 8 and ev.end_line == 36
    _check_values(ev)


# -- paste damage ------------------------------------------------------------------------------
def test_stripped_padding_and_a_float_cut_mid_value() -> None:
    (ev,) = _bench(BENCH / "paste-stripped-cut-float.txt")
    assert ev.mean_e2e_ms is None  # printed "28458", cut from 284580.00: no number rather than a wrong one
    assert ev.extra["cut_rows"] == ["Mean E2EL (ms)"]
    assert ev.rows == 20 and not ev.complete
    assert (ev.total_input_tokens, ev.total_output_tokens, ev.p99_itl_ms) == (2000000, 30000, 97.35)


def test_an_int_cut_mid_value_where_the_block_kept_its_padding() -> None:
    (ev,) = _bench(BENCH / "paste-cut-int.txt")
    assert ev.total_output_tokens is None  # "300" without padding, cut from 30000
    assert (ev.successful_requests, ev.total_input_tokens, ev.rows) == (10, 2000000, 5)


def test_a_clipped_terminal_keeps_only_what_is_certain() -> None:
    (ev,) = _bench(BENCH / "paste-clipped-45-columns.txt")
    assert ev.rows == 4
    assert (ev.successful_requests, ev.failed_requests, ev.max_concurrency, ev.request_throughput) == (
        10,
        0,
        10,
        0.03,
    )
    for fld in (
        "duration_s",
        "total_input_tokens",
        "total_output_tokens",
        "output_tok_s",
        "peak_concurrent_requests",
        "mean_ttft_ms",
        "mean_e2e_ms",
    ):
        assert getattr(ev, fld) is None, fld
    assert len(ev.extra["cut_rows"]) == 19 and ev.end_line == 29


def test_no_header_crlf_and_indented_paste() -> None:
    (ev,) = _bench(BENCH / "paste-no-header-crlf-indented.txt")
    (case,) = _bench(BENCH / "case-vllm-200k-inflated.client.txt")
    skip = {"file", "line", "end_line", "raw", "engine"}
    assert ev.model_dump(exclude=skip) == case.model_dump(exclude=skip)
    assert ev.line == 1 and ev.end_line == 28


def test_no_closing_rule_does_not_swallow_later_output() -> None:
    evs = _events(BENCH / "paste-no-closing-rule-then-output.txt")
    (ev,) = [e for e in evs if isinstance(e, BenchResult)]
    assert ev.rows == 23 and not ev.complete and ev.end_line == 28
    assert "nanobind" not in ev.raw
    assert [e.line for e in evs if e.kind == "unparsed"] == [29, 30, 31]


def test_two_blocks_back_to_back_and_extra_percentiles() -> None:
    a, b = _bench(BENCH / "vllm-2025-rate-sweep-two-blocks.txt")
    assert (a.line, a.end_line, b.line, b.end_line) == (2, 26, 28, 52)
    assert a.duration_s == 52.37 and b.duration_s == 28.91 and a.total_tok_s == 1637.54
    assert a.extra == {"p99.9_ttft_ms": 86.65, "p99.9_tpot_ms": 20.18, "p99.9_itl_ms": 51.17}
    assert a.request_goodput == 3.44 and a.complete and b.complete
    _check_values(a)
    _check_values(b)


def test_oldest_unaligned_vllm_format() -> None:
    (ev,) = _bench(BENCH / "vllm-2024-02-unaligned.txt")
    assert ev.line == 2  # "Traffic request rate: inf" printed before the results is not a row of them
    assert (ev.successful_requests, ev.duration_s, ev.request_throughput) == (1000, 87.319584, 11.45)
    assert (ev.input_tok_s, ev.output_tok_s, ev.mean_ttft_ms, ev.p99_tpot_ms) == (
        2489.63,
        2127.01,
        24871.06,
        620.35,
    )
    assert ev.rows == 13 and not ev.extra


def test_unaligned_results_one_after_the_other_stay_apart() -> None:
    """Old format, no progress bar between runs: a repeated row starts the next result, and the
    "Traffic request rate" line printed before each run belongs to neither."""
    a, b = _bench(BENCH / "vllm-2024-02-unaligned-sweep.txt")
    assert (a.line, a.end_line, a.duration_s, a.rows) == (2, 5, 87.319584, 4)
    assert (b.line, b.end_line, b.duration_s, b.mean_ttft_ms) == (7, 10, 60.1, 30000.0)
    assert a.request_rate is None and b.request_rate is None


def test_sglang_typo_accept_length_goodput_and_cache_sections() -> None:
    (ev,) = _bench(BENCH / "sglang-044-typo-accept-goodput-cache.txt")
    assert ev.line == 2 and ev.complete and ev.client == "sglang" and ev.rows == 33
    assert (ev.max_concurrency, ev.concurrency, ev.accept_length, ev.max_itl_ms) == (64, 61.27, 2.87, 1027.16)
    assert ev.request_goodput == 7.02 and ev.mean_e2e_ms == 7526.38
    assert ev.extra == {
        "request_rate": "inf",
        "slos_ms": "{'ttft': 1000.0, 'tpot': 50.0}",
        "slo_attainment_pct": 86.2,
        "ttft_slo_attainment_pct": 95.4,
        "total_prompt_tokens": 107624,
        "total_cached_tokens": 31207,
        "total_cached_tokens_device": 29115,
        "total_cached_tokens_host": 2092,
        "cache_hit_rate_pct": 29.0,
    }


def test_single_lines_are_not_blocks() -> None:
    assert not opens("Maximum request concurrency: 10") and not opens("Traffic request rate: inf")
    assert opens("Successful requests: 1000") and opens("Backend:                                 sglang    ")
    assert not opens("Backend: sglang")
    assert accepts("Successful requests: 1", "nanobind: leaked 4 instances!") is None
    assert accepts("Successful requests: 1", "=" * 50) == "last"
    assert accepts("Successful requests: 1", "") == "more" and accepts("Successful requests: 1\n", "") is None


def test_a_lone_row_gives_no_event(tmp_path: Path) -> None:
    p = tmp_path / "one.txt"
    p.write_text("Successful requests: 5\nsomething else\n")
    assert _bench(p) == []


# -- JSON / JSONL result files -----------------------------------------------------------------
def test_vllm_save_result_json() -> None:
    stats = ReadStats()
    evs = result_file_events(str(BENCH / "vllm-save-result.json"), stats)
    assert evs is not None and len(evs) == 1
    ev = evs[0]
    assert ev.client == "vllm" and ev.engine is None and ev.line == 1 and ev.complete
    assert (ev.successful_requests, ev.failed_requests, ev.duration_s, ev.total_output_tokens) == (
        10,
        0,
        295.21,
        30000,
    )
    assert (ev.output_tok_s, ev.total_tok_s, ev.peak_output_tok_s, ev.max_concurrency) == (
        1111.6112,
        7886.4498,
        2240.0,
        10,
    )
    assert (ev.mean_e2e_ms, ev.p99_e2e_ms, ev.mean_tpot_ms) == (284580.0, 294870.44, 45.21)
    assert (ev.acceptance_rate_pct, ev.accept_length, ev.drafts, ev.accepted_tokens) == (
        2.12,
        1.15,
        26111,
        3879,
    )
    assert ev.per_position_acceptance_pct == pytest.approx([12.88, 1.53, 0.34, 0.11, 0.0, 0.0, 0.0])
    assert ev.request_rate is None and ev.extra["request_rate"] == "inf"
    assert ev.extra["std_ttft_ms"] == 31022.7 and ev.extra["model_id"] == "kimi-k3"
    assert stats.text_lines == 1 and stats.files == [str(BENCH / "vllm-save-result.json")]


def test_indented_and_detailed_json_give_the_same_result() -> None:
    base = result_file_events(str(BENCH / "vllm-save-result.json"))
    assert base is not None
    for name in ("vllm-save-result-indented.json", "vllm-save-detailed.json"):
        evs = result_file_events(str(BENCH / name))
        assert evs is not None and len(evs) == 1
        skip = {"file", "raw"}
        assert evs[0].model_dump(exclude=skip) == base[0].model_dump(exclude=skip), name
    (det,) = result_file_events(str(BENCH / "vllm-save-detailed.json")) or []
    assert "itls" not in det.extra and len(det.raw) < 20000


def test_vllm_append_result_jsonl() -> None:
    evs = result_file_events(str(BENCH / "vllm-append-result.jsonl"))
    assert evs is not None and [e.line for e in evs] == [1, 2]
    assert evs[1].request_rate == 4.0 and "request_rate" not in evs[1].extra and evs[1].duration_s == 310.77


def test_sglang_jsonl_with_infinity() -> None:
    text = (BENCH / "sglang-output-file.jsonl").read_text()
    assert "Infinity" in text
    evs = result_file_events(str(BENCH / "sglang-output-file.jsonl"))
    assert evs is not None and len(evs) == 2
    ev = evs[0]
    assert ev.client == "sglang" and ev.request_rate is None and ev.extra["request_rate"] == "inf"
    assert (ev.total_tok_s, ev.input_tok_s, ev.concurrency, ev.total_output_tokens_retokenized) == (
        1832.46,
        1416.94,
        9.99,
        64579,
    )
    assert (ev.mean_e2e_ms, ev.p90_e2e_ms, ev.p95_ttft_ms, ev.peak_concurrent_requests) == (
        7216.3,
        7780.64,
        964.73,
        20,
    )
    assert ev.extra["random_output_len"] == 300 and "server_info" not in ev.extra
    assert evs[1].max_concurrency == 24 and evs[1].line == 2


def test_non_finite_numbers_stay_out_of_the_json_output(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    p.write_text(
        '{"duration": 10.0, "completed": 5, "burstiness": Infinity, "std_ttft_ms": NaN, '
        '"mean_tpot_ms": NaN, "request_rate": "trace"}\n'
    )
    (ev,) = result_file_events(str(p)) or []
    assert ev.extra == {"burstiness": "inf", "std_ttft_ms": "nan", "request_rate": "trace"}
    assert ev.mean_tpot_ms is None and ev.request_rate is None
    json.loads(ev.model_dump_json())  # strict JSON


def test_gzipped_json(tmp_path: Path) -> None:
    p = tmp_path / "r.json.gz"
    p.write_bytes(gzip.compress((BENCH / "vllm-save-result.json").read_bytes()))
    evs = result_file_events(str(p))
    assert evs is not None and evs[0].output_tok_s == 1111.6112


def test_other_files_are_not_results() -> None:
    assert result_file_events(str(BENCH / "not-a-result.json")) is None
    assert result_file_events(str(BENCH / "case-vllm-200k-inflated.client.txt")) is None
    assert result_file_events("-") is None


def _api_reads_result_files() -> bool:
    import logscope.api

    return "result_file_events" in inspect.getsource(logscope.api)


@pytest.mark.skipif(
    not _api_reads_result_files(), reason="api.iter_file_events does not call result_file_events yet"
)
def test_cli_events_on_a_result_file() -> None:
    r = CliRunner().invoke(main, ["events", str(BENCH / "sglang-output-file.jsonl")])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert [x["kind"] for x in rows] == ["bench_result", "bench_result"]
    assert rows[0]["output_tok_s"] == 415.52


def test_cli_events_on_a_client_output() -> None:
    r = CliRunner().invoke(
        main, ["events", str(BENCH / "case-vllm-200k-inflated.client.txt"), "--kind", "bench_result"]
    )
    assert r.exit_code == 0, r.output
    (row,) = [json.loads(x) for x in r.output.splitlines()]
    assert row["output_tok_s"] == 1111.61 and row["rows"] == 23 and row["complete"] is True
