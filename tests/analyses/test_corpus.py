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
    assert [(s.start_line, s.samples) for s in sd.other_segments] == [(131, 4)]  # the second wave
    assert sd.all_plateau is not None and sd.all_plateau.samples == 8


def test_real_spec_decode_matches_the_client() -> None:
    sd = _gen("b1_ngram_spec_greedy_repetitive").spec_decode
    assert sd is not None
    # the client printed acceptance rate 78 % and acceptance length 4.76 for this run
    assert sd.acceptance_rate_pct == pytest.approx(78.0, abs=0.05)
    assert sd.mean_acceptance_length == pytest.approx(4.76, abs=0.01)
    assert sd.verdict == "pays off"


def test_real_reasons() -> None:
    assert "nothing was drafted" in _gen("b2_ngram_spec_random_sampled").not_applicable["spec_decode"]
    assert "no pure-decode window" in _gen("c1_kv_tight_waiting").not_applicable["stable_decode"]
    assert "no 3 consecutive" in _gen("c5_kv_tight_preempt_burst").not_applicable["stable_decode"]
    c2 = _gen("c2_startup_fail_maxlen_vs_kv")
    assert c2.kv_pool is not None and c2.kv_pool.shortfall_pct == 81.64  # 6,016 of 32,768 tokens fit
    assert c2.cold_start is not None and c2.cold_start.total_s is None  # never ready


def test_benign_shutdown_error() -> None:
    d = _gen("a2_decode_steady_c10").disturbances
    assert d is not None and d.errors == 1
    assert d.error_list[0].benign_shutdown and d.error_list[0].phase == "shutdown"
