"""The report checks itself (analyses/selfcheck.py, rule BN02): silent on every real client of the shared
corpus with its server log, and flags a real client file edited to disagree with its server."""

from __future__ import annotations

from pathlib import Path

import pytest

import logscope
from logscope.analyses.base import RunData
from logscope.analyses.selfcheck import busy_spans, self_check
from logscope.parsers.bench import result_file_events
from tests.conftest import FIXTURES

VLLM_RUNS = [
    "a1_plain_c10",
    "a2_decode_steady_c10",
    "b1_ngram_spec_greedy_repetitive",
    "b2_ngram_spec_random_sampled",
    "c1_kv_tight_waiting",
    "c5_kv_tight_preempt_burst",
    "d1_ctx512",
    "e1_slow_tokenizer_fp8kv",
]
SGLANG_RUNS = ["a1_plain_c10", "c1_kv_tight_queue", "d1_ctx512"]
# every server log of the shared corpus (copied unedited) with its client's printed result, and its
# sidecar of hand counts (`*_client.json`: counts, not a client result file)
PAIRS = [
    (
        FIXTURES / "vllm" / "corpus" / f"gen-{r}.log",
        FIXTURES / "bench" / "corpus" / f"vllm-0.32.0-{r}.client.txt",
    )
    for r in VLLM_RUNS
] + [
    (FIXTURES / "sglang" / "corpus" / f"gen-{r}.log", FIXTURES / "sglang" / "corpus" / f"gen-{r}.client.txt")
    for r in SGLANG_RUNS
]


def _entry(log: Path, client: Path) -> tuple[object, object]:
    rep = logscope.load([log, client]).analyze()
    assert rep.bench is not None
    (entry,) = rep.bench.results
    return rep, entry


@pytest.mark.parametrize(
    ("log", "client"), PAIRS, ids=[f"{p[0].parent.parent.name}-{p[0].stem}" for p in PAIRS]
)
def test_real_clients_pass_their_self_check(log: Path, client: Path) -> None:
    rep, entry = _entry(log, client)
    sc = entry.self_check  # type: ignore[attr-defined]
    assert sc is not None and not sc.failed, [c.message for c in sc.failed]
    assert "BN02" not in {f.code for f in rep.findings}  # type: ignore[attr-defined]
    acc = next((c for c in sc.checks if c.name == "token_accounting"), None)
    if acc is None:  # e1: 12,800 tokens in two 10 s windows, too short to count
        assert "too few" in sc.not_applicable["token_accounting"]
    else:  # measured: the engine's count agrees with the client's total within 1.5 % on every run
        assert acc.client == pytest.approx(acc.server, rel=0.015)
    sidecar = client.with_name(client.name.replace(".client.txt", "_client.json"))
    assert sidecar.exists() and result_file_events(str(sidecar)) is None


def test_sglang_tokens_are_counted_exactly() -> None:
    # SGLang d1: 64 Decode batch lines of 10 running requests, 40 steps per line = 25,600 = the client's total
    _rep, entry = _entry(
        FIXTURES / "sglang" / "corpus" / "gen-d1_ctx512.log",
        FIXTURES / "sglang" / "corpus" / "gen-d1_ctx512.client.txt",
    )
    sc = entry.self_check  # type: ignore[attr-defined]
    acc = next(c for c in sc.checks if c.name == "token_accounting")
    assert (acc.client, acc.server) == (25600, 25600) and "× 40 decode steps per line" in sc.method
    ident = next(c for c in sc.checks if c.name == "latency_identity")
    assert (
        ident.ok and ident.client == 4494.42 and ident.server == pytest.approx(429.62 + 15.94 * 255, abs=0.01)
    )


def _planted(tmp_path: Path, client: Path, edits: dict[str, str]) -> Path:
    text = client.read_text(encoding="utf-8")
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new)
    out = tmp_path / client.name
    out.write_text(text, encoding="utf-8")
    return out


def test_planted_token_excess_points_to_measurement(tmp_path: Path) -> None:
    # the real SGLang a1 client, edited as a client counting 1.5 tokens per streamed chunk would print it
    real = FIXTURES / "sglang" / "corpus" / "gen-a1_plain_c10.client.txt"
    bad = _planted(
        tmp_path,
        real,
        {"Total generated tokens:                  60000": "Total generated tokens:                  90000"},
    )
    rep = logscope.load([FIXTURES / "sglang" / "corpus" / "gen-a1_plain_c10.log", bad]).analyze()
    bn = [f for f in rep.findings if f.code == "BN02"]
    assert len(bn) == 2  # the token count, and the latency identity it breaks (300 -> 450 tokens a request)
    acc = next(f for f in bn if "client output tokens" in f.message)
    assert "pointing to measurement" in acc.message and "90,000 vs 60,000 tokens" in acc.message
    assert "ratio 1.50" in acc.message


def test_planted_token_shortfall_points_to_workload(tmp_path: Path) -> None:
    # the real vLLM a2 client with half its tokens: the engine made more than the client received
    real = FIXTURES / "bench" / "corpus" / "vllm-0.32.0-a2_decode_steady_c10.client.txt"
    text = real.read_text(encoding="utf-8")
    assert "Total generated tokens:                  60000" in text
    ev = result_file_events(str(real))
    assert ev is None  # a printed block, not a result file: read through the pipeline
    run = logscope.load([FIXTURES / "vllm" / "corpus" / "gen-a2_decode_steady_c10.log", real])
    (e,) = run.of_kind("bench_result")
    half = e.model_copy(update={"total_output_tokens": 30000})
    spans, how = busy_spans(RunData.of(run))
    res = self_check(half, spans, how)  # type: ignore[arg-type]
    (acc,) = [c for c in res.checks if c.name == "token_accounting"]
    assert not acc.ok and acc.points_to == "workload" and acc.server == pytest.approx(59994, abs=1)
    assert "other traffic shared the server" in acc.message


def test_a_run_that_cannot_be_placed_is_not_checked() -> None:
    # the a1 client (178.89 s) against the d1 server log (one 50 s busy stretch): not placed, not checked
    spans, how = busy_spans(RunData.of(logscope.load(FIXTURES / "vllm" / "corpus" / "gen-d1_ctx512.log")))
    a1 = logscope.load(FIXTURES / "bench" / "corpus" / "vllm-0.32.0-a1_plain_c10.client.txt")
    (e,) = a1.of_kind("bench_result")
    res = self_check(e, spans, how)  # type: ignore[arg-type]
    assert (
        "no busy stretch(es) of the log match the client's 178.9 s (stretches: 50 s)"
        in res.not_applicable["token_accounting"]
    )
    assert not res.failed


@pytest.mark.parametrize(("run", "stretch"), [(1, (163.0, 193.0)), (2, (540.0, 570.0))])
def test_alike_stretches_are_told_apart_by_the_clients_clock(run: int, stretch: tuple[float, float]) -> None:
    # one log, two server lifetimes, one 30 s busy stretch each: both match either client's duration; the
    # --save-result `date` (the end of the run: 15:25:01 and 15:31:20) falls in one of them only
    lt = FIXTURES / "vllm" / "lifetimes"
    spans, how = busy_spans(RunData.of(logscope.load(lt / "two-lifetimes.log")))
    assert [(s.start_s, s.end_s) for s in spans] == [(163.0, 193.0), (540.0, 570.0)]
    (e,) = result_file_events(str(lt / f"two-lifetimes.run{run}.client.json")) or []
    res = self_check(e, spans, how)
    (acc,) = [c for c in res.checks if c.name == "token_accounting"]
    assert acc.ok and acc.client == 6000 and f"t = {stretch[0]:.0f}–{stretch[1]:.0f} s" in acc.message


CAP = FIXTURES / "bench" / "clients" / "capture"


def test_real_inference_perf_retokenizing_is_flagged_as_measurement() -> None:
    # inference-perf counts output tokens by retokenizing the text: 8,739 where vLLM generated 60 x 128 = 7,680
    # (its windows: 7,678); its own validation.json warns of the same client/server token mismatch
    import json

    validation = json.loads((CAP / "ip-run" / "validation.json").read_text())
    assert any(
        w["check"] == "summary.token_mismatches"
        for w in validation["reports"]["summary_lifecycle_metrics.json"]["warnings"]
    )
    rep = logscope.load(
        [CAP / "ip-run.vllm-server.log", CAP / "ip-run" / "summary_lifecycle_metrics.json"]
    ).analyze()
    (bn,) = [f for f in rep.findings if f.code == "BN02"]
    assert "pointing to measurement: client output tokens 8,739 vs 7,678 tokens" in bn.message
    assert "ratio 1.14" in bn.message


@pytest.mark.parametrize(
    "name",
    [
        "guidellm-benchmarks.json.gz",
        "D256_128_text-to-text_num_concurrency_8_time_62s.json",
        "inference-perf-summary_lifecycle_metrics.json",
    ],
)
def test_four_real_clients_on_one_server_raise_nothing(name: str) -> None:
    # three runs on one server lifetime, 45 s apart: GuideLLM's clock places its run (7,680 vs 7,652 tokens); the
    # others cannot be placed (two or three stretches match their duration), so nothing is judged on them
    rep = logscope.load([CAP / "four-clients.vllm-server.log", CAP / "four-clients" / name]).analyze()
    assert not {"BN01", "BN02"} & {f.code for f in rep.findings}
    (entry,) = rep.bench.results
    sc = entry.self_check
    placed = [c for c in sc.checks if c.name == "token_accounting"]
    if name.startswith("guidellm"):
        assert placed and placed[0].client == 7680 and placed[0].server == pytest.approx(7652, abs=1)
    else:
        assert not placed and "cannot be placed" in sc.not_applicable["token_accounting"]
        assert "not from this run's" in sc.not_applicable["physical_floor"]


def test_real_aiperf_retokenizing_is_flagged_as_measurement() -> None:
    # AIPerf counts 8,478 output tokens (its own osl_mismatch_diff_pct: 10.4 % over the requested 128 each); the
    # engine generated 7,634 in the run's 13 windows (60 x 128 = 7,680 asked, ignore_eos)
    run = CAP / "aiperf-run"
    for client in ("profile_export_aiperf.json", "profile_export_aiperf.csv", "profile_export.jsonl.gz"):
        rep = logscope.load([CAP / "aiperf-run.vllm-server.log", run / client]).analyze()
        (bn,) = [f for f in rep.findings if f.code == "BN02"]
        assert "pointing to measurement: client output tokens 8,478 vs 7,634 tokens" in bn.message, client
        assert "BN01" not in {f.code for f in rep.findings}


def test_the_report_shows_its_self_check() -> None:
    from logscope.render.markdown import render_markdown

    rep = logscope.load(
        [CAP / "aiperf-run.vllm-server.log", CAP / "aiperf-run" / "profile_export_aiperf.json"]
    ).analyze()
    md = render_markdown(rep, skipped_figures=None)
    assert "| result | self-check | client | server | unit | verdict |" in md
    assert "| token accounting | 8,478 | 7,634 | tokens | points to measurement |" in md
    assert "| latency identity | 15,302.8 | 15,306 | ms | ok |" in md
