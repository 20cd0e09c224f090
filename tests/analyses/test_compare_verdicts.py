"""compare's verdicts on real runs (analyses/compare_verdicts.py): a slowdown beyond the noise FAILs
with an interval that excludes zero, a spec on/off pair is INCONCLUSIVE because of not_ab, unequal
load is no comparison, and several runs per side are the samples."""

from __future__ import annotations

import logscope
from logscope.analyses.compare import compare, compare_runs

from ..conftest import FIXTURES

SG = FIXTURES / "sglang" / "corpus"
VL = FIXTURES / "vllm" / "corpus"
CASE = FIXTURES / "case"


def _by(cmp: object) -> dict[str, object]:
    return {m.metric: m for m in cmp.verdicts.metrics}  # type: ignore[attr-defined]


def test_short_vs_long_context_fails_beyond_the_noise() -> None:
    """SGLang 0.5.23, 512- vs 1024-token prompts, both at 10 running: stable decode 633.2 -> 443.6 tok/s."""
    cmp = compare(
        logscope.load(str(SG / "gen-d1_ctx512.log")), logscope.load(str(SG / "gen-a1_plain_c10.log"))
    )
    v = _by(cmp)
    d = v["decode_tok_s"]
    assert d.verdict == "FAIL" and d.method == "windows"  # type: ignore[attr-defined]
    assert (d.base, d.other, d.change_pct) == (633.21, 443.65, -29.94)  # type: ignore[attr-defined]
    assert d.ci_high_pct < 0 and d.ci_low_pct < d.change_pct < d.ci_high_pct  # type: ignore[attr-defined]
    assert (d.samples_base, d.samples_other) == (6, 7)  # type: ignore[attr-defined]
    assert d.effective_base < 6  # type: ignore[attr-defined]  # the windows are autocorrelated
    assert -40 < d.ci_low_pct and d.ci_high_pct < -15  # type: ignore[attr-defined]
    assert v["per_request_tok_s"].verdict == "FAIL"  # type: ignore[attr-defined]
    assert cmp.verdicts is not None and cmp.verdicts.verdict == "FAIL"
    assert cmp.verdicts.equal_load is not None and cmp.verdicts.equal_load.matched
    # the other way round, OTHER decodes faster: not a regression
    back = _by(
        compare(logscope.load(str(SG / "gen-a1_plain_c10.log")), logscope.load(str(SG / "gen-d1_ctx512.log")))
    )
    assert back["decode_tok_s"].verdict == "PASS" and back["decode_tok_s"].ci_low_pct > 0  # type: ignore[attr-defined]


def test_case_64k_vs_200k_fails_and_client_summaries_get_no_interval() -> None:
    cmp = compare(
        logscope.load([str(CASE / "vllm-64k.log"), str(CASE / "vllm-64k.client.txt")]),
        logscope.load([str(CASE / "vllm-200k.log"), str(CASE / "vllm-200k.client.txt")]),
    )
    v = _by(cmp)
    d = v["decode_tok_s"]
    assert d.verdict == "FAIL" and d.ci_high_pct < -60 and (d.base, d.other) == (501.0, 163.0)  # type: ignore[attr-defined]
    ttft = v["ttft_mean_ms"]  # the printed blocks: 34,838.8 ms vs 125,210.8 ms, one number each
    assert (ttft.base, ttft.other) == (34838.8, 125210.8)  # type: ignore[attr-defined]
    assert ttft.verdict == "INCONCLUSIVE" and ttft.ci_low_pct is None and ttft.method == "none"  # type: ignore[attr-defined]
    assert "no noise estimate" in ttft.reason  # type: ignore[attr-defined]
    assert cmp.verdicts is not None and cmp.verdicts.equal_load is not None
    assert (
        cmp.verdicts.equal_load.source == "the clients' max concurrency" and cmp.verdicts.equal_load.matched
    )


def test_spec_on_off_is_inconclusive_because_of_not_ab() -> None:
    """vLLM a1 (no speculation) vs b1 (ngram): decode +102 %, but not an A/B test of one change."""
    cmp = compare(
        logscope.load(str(VL / "gen-a1_plain_c10.log")),
        logscope.load(str(VL / "gen-b1_ngram_spec_greedy_repetitive.log")),
    )
    assert cmp.not_ab and cmp.verdicts is not None and cmp.verdicts.verdict == "INCONCLUSIVE"
    for m in cmp.verdicts.metrics:
        assert m.verdict == "INCONCLUSIVE" and "speculative decoding is on in OTHER only" in m.reason
    d = _by(cmp)["decode_tok_s"]
    assert (
        d.change_pct is not None and d.change_pct > 50 and d.ci_low_pct is not None
    )  # the numbers stay shown


def test_unequal_load_is_no_comparison() -> None:
    """vLLM d1's decode-under-load windows ran a median of 4 requests, a1's 10."""
    cmp = compare(
        logscope.load(str(VL / "gen-d1_ctx512.log")), logscope.load(str(VL / "gen-a1_plain_c10.log"))
    )
    assert cmp.verdicts is not None and cmp.verdicts.equal_load is not None
    assert (cmp.verdicts.equal_load.base, cmp.verdicts.equal_load.other) == ([4.0], [10.0])
    d = _by(cmp)["decode_tok_s"]
    assert d.verdict == "INCONCLUSIVE" and d.reason.startswith("not at equal load: 4 vs 10")  # type: ignore[attr-defined]


def test_several_runs_per_side_are_the_samples() -> None:
    runs_a = [logscope.load(str(SG / "gen-d1_ctx512.log")), logscope.load(str(SG / "gen-a1_plain_c10.log"))]
    runs_b = [logscope.load(str(SG / "gen-a1_plain_c10.log")), logscope.load(str(SG / "gen-d1_ctx512.log"))]
    cmp = compare_runs(runs_a, runs_b)
    assert cmp.verdicts is not None and (cmp.verdicts.runs_base, cmp.verdicts.runs_other) == (2, 2)
    d = _by(cmp)["decode_tok_s"]
    # the same two runs on both sides: no change, and two runs each cannot pin it to 5 %
    assert d.method == "runs" and d.change_pct == 0.0 and d.verdict == "INCONCLUSIVE"  # type: ignore[attr-defined]
    assert d.ci_low_pct < 0 < d.ci_high_pct  # type: ignore[attr-defined]
    assert len(cmp.runs["base"]) == 2 and cmp.sections["stable_decode"]["base"]["mean_tok_s"] == 633.21


def test_verdicts_render_a_line_per_metric() -> None:
    from logscope.render.formats import compare_text

    cmp = compare(
        logscope.load(str(SG / "gen-d1_ctx512.log")), logscope.load(str(SG / "gen-a1_plain_c10.log"))
    )
    md = compare_text(cmp, "markdown", None)
    assert "## Verdict: FAIL" in md
    assert "| decode tok/s | 633.2 | 443.6 | -29.9 % |" in md and "**FAIL**" in md
    assert "Verdict method:" in md and "lag-1 autocorrelation" in md


CMP = FIXTURES / "compare"


def _rep(n: int) -> list[str]:
    return [str(CMP / f"vllm-rep{n}.log"), str(CMP / f"vllm-rep{n}.client.json.gz")]


def test_two_runs_of_one_configuration_are_not_a_change() -> None:
    """rep1 and rep2: one server configuration, one client workload, decoded 237.8 and 319.4 tok/s on a loaded
    machine. Neither direction may FAIL (nor PASS at 5 %): the runs' own noise is wider than the threshold."""
    for a, b in ((1, 2), (2, 1)):
        cmp = compare(logscope.load(_rep(a)), logscope.load(_rep(b)))
        assert cmp.not_ab == [] and cmp.verdicts is not None
        assert cmp.verdicts.verdict == "INCONCLUSIVE"
        assert cmp.verdicts.equal_load is not None and cmp.verdicts.equal_load.matched
        v = _by(cmp)
        d = v["decode_tok_s"]
        assert d.ci_low_pct < 0 < d.ci_high_pct  # type: ignore[attr-defined]
        # the client's per-request latencies (--save-detailed), 20 blocks of 20 requests each
        t = v["ttft_mean_ms"]
        assert t.method == "requests" and t.samples_base == 20 and t.ci_low_pct < 0 < t.ci_high_pct  # type: ignore[attr-defined]
        assert {t.base, t.other} == {768.09, 519.94}  # type: ignore[attr-defined]  # the files' mean_ttft_ms
        assert all(m.verdict != "FAIL" for m in cmp.verdicts.metrics)


def test_cli_runs_with_their_files_beside_them_and_metrics() -> None:
    from click.testing import CliRunner

    from logscope.cli import main

    r = CliRunner().invoke(
        main,
        [
            "compare",
            "--base",
            str(CMP / "vllm-rep1.log"),
            "--other",
            str(CMP / "vllm-rep2.log"),
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 1, r.output  # INCONCLUSIVE
    import json

    data = json.loads(r.stdout)
    files = data["runs"] or {"base": [data["base"]["files"]]}
    assert any(f.endswith("vllm-rep1.client.json.gz") for f in files["base"][0])
    v = {m["metric"]: m for m in data["verdicts"]["metrics"]}
    assert v["ttft_mean_ms"]["method"] == "requests"
    # the scrapes beside each log give the server's histograms: the sections hold them
    assert data["sections"]["metrics"]["base"]["scrapes"] > 10


def test_a_four_times_longer_context_fails_on_latency() -> None:
    """rep1 (512-token prompts) vs long (2048), same server, same client otherwise: the client's TTFT 768 -> 3681 ms
    and TPOT 36.3 -> 112.7 ms FAIL with intervals above zero; the decode rate (-66 %) stays INCONCLUSIVE because
    rep1's windows swing by half their mean; the offered prompt load is the workload's, not a speed."""
    cmp = compare(
        logscope.load(_rep(1)),
        logscope.load([str(CMP / "vllm-long.log"), str(CMP / "vllm-long.client.json.gz")]),
    )
    assert (
        cmp.not_ab == [] and cmp.degradation.context_ratio is not None and cmp.degradation.context_ratio > 3
    )
    v = _by(cmp)
    for key, base, other in (("ttft_mean_ms", 768.09, 3680.62), ("tpot_mean_ms", 36.26, 112.68)):
        m = v[key]
        assert (m.base, m.other) == (base, other) and m.verdict == "FAIL" and m.ci_low_pct > 0  # type: ignore[attr-defined]
    d = v["decode_tok_s"]
    assert d.change_pct < -60 and d.verdict == "INCONCLUSIVE" and d.ci_high_pct > 0  # type: ignore[attr-defined]
    assert "a figure of the workload" in v["prefill_tok_s"].reason  # type: ignore[attr-defined]
    assert cmp.verdicts is not None and cmp.verdicts.verdict == "FAIL"


def test_two_repeats_against_one_run() -> None:
    cmp = compare_runs(
        [logscope.load(_rep(1)), logscope.load(_rep(2))],
        [logscope.load([str(CMP / "vllm-long.log"), str(CMP / "vllm-long.client.json.gz")])],
    )
    v = _by(cmp)
    itl = v["itl_p50_ms"]  # the printed summaries: 16.35 and 16.95 ms, then 88.05 ms
    assert itl.method == "runs" and itl.base == 16.65 and itl.verdict == "FAIL"  # type: ignore[attr-defined]
    assert itl.ci_low_pct > 100  # type: ignore[attr-defined]
    d = v["decode_tok_s"]  # the two repeats' means 237.8 and 319.4 tok/s: too far apart for a verdict
    assert d.method == "runs" and d.verdict == "INCONCLUSIVE"  # type: ignore[attr-defined]
