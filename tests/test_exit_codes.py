"""The exit-code contract of ``analyze`` and ``compare`` (logscope/exits.py, docs/contract.md): 0 pass,
1 a gate warns, 2 a gate fails, 3 no result; --shadow, --strict, --best-effort. One CLI test per case,
on real logs."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from logscope import exits
from logscope.cli import main
from tests.conftest import FIXTURES

DIGEST = FIXTURES / "digest"
WARN_LOG = DIGEST / "TK01" / "fail-vllm.log"  # TK01: a warning finding
ERROR_LOG = DIGEST / "EN02" / "fail-sglang.log"  # EN02: an error finding
CLEAN_LOG = DIGEST / "TK01" / "pass-vllm.log"
MET = FIXTURES / "metrics"
MLOG, CLIENT, SCRAPES = (
    MET / "vllm-kvtight-metrics.log",
    MET / "vllm-kvtight-metrics.client.txt",
    MET / "vllm-kvtight-metrics.scrapes.txt.gz",
)
SG = FIXTURES / "sglang" / "corpus"
SHORT, LONG = SG / "gen-d1_ctx512.log", SG / "gen-a1_plain_c10.log"  # stable decode 633 vs 444 tok/s
VL = FIXTURES / "vllm" / "corpus"


def _run(*args: object) -> object:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_analyze_pass() -> None:
    r = _run("analyze", CLEAN_LOG, "--fail-on", "warning")
    assert r.exit_code == exits.PASS == 0, r.output  # type: ignore[attr-defined]
    r = _run("analyze", MLOG, "--bench", CLIENT, "--metrics", SCRAPES, "--slo", "ttft_p95<=2s,error_rate<=1%")
    assert r.exit_code == 0 and "SLO PASS" in r.stderr  # type: ignore[attr-defined]


def test_analyze_warn() -> None:
    r = _run("analyze", WARN_LOG, "--fail-on", "warning")
    assert r.exit_code == exits.WARN == 1 and "TK01" in r.stderr  # type: ignore[attr-defined]
    r = _run("analyze", MLOG, "--slo", "ttft_p95<=2s")  # no client, no metrics: unknown
    assert r.exit_code == 1 and "SLO UNKNOWN" in r.stderr  # type: ignore[attr-defined]


def test_analyze_fail() -> None:
    assert _run("analyze", ERROR_LOG, "--fail-on", "error").exit_code == exits.FAIL == 2  # type: ignore[attr-defined]
    r = _run(
        "analyze", MLOG, "--bench", CLIENT, "--metrics", SCRAPES, "--slo", "tpot_p95<=50ms,ttft_p95<=1ms"
    )
    assert r.exit_code == 2 and "SLO FAIL" in r.stderr  # type: ignore[attr-defined]
    # the worst gate wins: a warning finding (1) and a failed gate (2) give 2
    r = _run("analyze", MLOG, "--bench", CLIENT, "--slo", "ttft_mean<=1ms", "--fail-on", "warning")
    assert r.exit_code == 2  # type: ignore[attr-defined]


def test_analyze_unreadable_and_strict(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    r = _run("analyze", empty)
    assert r.exit_code == exits.NO_RESULT == 3 and r.output.startswith("logscope: ")  # type: ignore[attr-defined]
    assert _run("analyze", tmp_path / "missing.log").exit_code == 3  # type: ignore[attr-defined]
    assert _run("analyze", MLOG, "--fail-on", "bogus").exit_code == 3  # type: ignore[attr-defined]  # usage error
    # --strict: a gate without a value is a missing input, not a warning
    r = _run("analyze", MLOG, "--slo", "ttft_p95<=2s", "--strict")
    assert r.exit_code == 3  # type: ignore[attr-defined]
    notes = tmp_path / "notes.txt"
    notes.write_text("not a benchmark result\n")
    r = _run("analyze", MLOG, "--bench", notes, "--strict")
    assert r.exit_code == 3 and "--strict: --bench" in r.stderr  # type: ignore[attr-defined]
    assert _run("analyze", MLOG, "--bench", notes).exit_code == 0  # type: ignore[attr-defined]
    assert _run("analyze", MLOG, "--strict", "--best-effort").exit_code == 3  # type: ignore[attr-defined]


def test_analyze_best_effort(tmp_path: Path) -> None:
    missing = tmp_path / "gone.log"
    assert _run("analyze", MLOG, missing).exit_code == 3  # type: ignore[attr-defined]
    r = _run("analyze", MLOG, missing, "--best-effort", "--format", "json")
    assert r.exit_code == 0 and "left out" in r.stderr and '"engine": "vllm"' in r.stdout  # type: ignore[attr-defined]
    assert _run("analyze", missing, "--best-effort").exit_code == 3  # type: ignore[attr-defined]  # nothing left


def test_analyze_shadow() -> None:
    r = _run("analyze", ERROR_LOG, "--fail-on", "error", "--shadow")
    assert r.exit_code == 0 and "--shadow: the gates say exit 2" in r.stderr  # type: ignore[attr-defined]
    r = _run("analyze", MLOG, "--bench", CLIENT, "--slo", "ttft_mean<=1ms", "--shadow")
    assert r.exit_code == 0 and "SLO FAIL" in r.stderr  # type: ignore[attr-defined]


def test_compare_pass_warn_fail() -> None:
    case = FIXTURES / "case"  # SGLang 200K vs 64K: OTHER decodes 25 % faster; its prefill rate's interval
    r = _run(
        "compare", case / "sglang-200k.log", case / "sglang-64k.log", "--threshold", "10%"
    )  # reaches -7 %
    assert r.exit_code == 0 and "verdict PASS: every metric (3) passes" in r.stderr, r.stderr  # type: ignore[attr-defined]
    r = _run(
        "compare", case / "sglang-200k.log", case / "sglang-64k.log"
    )  # at 5 %: the prefill rate is undecided
    assert r.exit_code == 1 and "prefill_tok_s inconclusive" in r.stderr  # type: ignore[attr-defined]
    r = _run("compare", VL / "gen-a1_plain_c10.log", VL / "gen-b1_ngram_spec_greedy_repetitive.log")
    assert r.exit_code == 1 and "verdict INCONCLUSIVE" in r.stderr  # type: ignore[attr-defined]  # not_ab
    r = _run("compare", SHORT, LONG)
    assert r.exit_code == 2 and "verdict FAIL: decode_tok_s, per_request_tok_s fail" in r.stderr  # type: ignore[attr-defined]


def test_compare_unreadable_usage_and_shadow(tmp_path: Path) -> None:
    r = _run("compare", SHORT, tmp_path / "missing.log")
    assert r.exit_code == 3 and "Traceback" not in r.output  # type: ignore[attr-defined]
    assert _run("compare", SHORT, LONG, "--threshold", "150%").exit_code == 3  # type: ignore[attr-defined]
    assert _run("compare", SHORT).exit_code == 3  # type: ignore[attr-defined]
    r = _run("compare", SHORT, LONG, "--shadow", "--format", "json")
    assert r.exit_code == 0 and '"verdict": "FAIL"' in r.stdout  # type: ignore[attr-defined]
    # --strict: a client file that gives no result for one side is a missing input
    notes = tmp_path / "notes.txt"
    notes.write_text("not a benchmark result\n")
    args = ("compare", SHORT, LONG, "--bench", SG / "gen-d1_ctx512.client.txt", notes)
    r = _run(*args, "--strict")
    assert r.exit_code == 3 and "--strict: --bench gave no client result for OTHER" in r.stderr  # type: ignore[attr-defined]
    assert _run(*args).exit_code == 2  # type: ignore[attr-defined]  # without it: the decode verdict, FAIL


def test_compare_runs_from_the_command_line(tmp_path: Path) -> None:
    r = _run("compare", "--base", SHORT, LONG, "--other", LONG, SHORT, "--format", "json", "--shadow")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    import json

    data = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert data["verdicts"]["runs_base"] == 2 and data["verdicts"]["runs_other"] == 2
    assert {m["method"] for m in data["verdicts"]["metrics"]} == {"runs"}
    assert _run("compare", SHORT, LONG, "--base", SHORT).exit_code == 3  # type: ignore[attr-defined]
