"""Speculative decoding: token weighting, V0 counters differenced, SGLang lines, verdicts, reasons."""

from __future__ import annotations

import pytest

from logscope.analyses.base import NotApplicable
from logscope.analyses.spec import SpecDecode, spec_decode
from logscope.events import Config, Event
from logscope.events import SpecDecode as SpecEvent

from .build import run, sglang, stats


def _ok(res: SpecDecode | NotApplicable) -> SpecDecode:
    assert isinstance(res, SpecDecode), getattr(res, "reason", res)
    return res


def _v1(
    line: int,
    t: float,
    accepted: int,
    drafted: int,
    k: int,
    length: float,
    per_pos: list[float] | None = None,
) -> SpecEvent:
    return SpecEvent(
        engine="vllm",
        file="t.log",
        line=line,
        t_s=t,
        accepted_tokens=accepted,
        drafted_tokens=drafted,
        mean_acceptance_length=length,
        acceptance_rate_pct=round(100 * accepted / drafted, 1),
        accepted_tok_s=accepted / 10,
        drafted_tok_s=drafted / 10,
        per_position_acceptance=per_pos,
    )


def test_token_weighted_not_line_mean() -> None:
    # a big window at 10 % and a tiny one at 90 %: the line mean would say 50 %
    a = _v1(10, 10.0, 700, 7000, 7, 1 + 700 / 1000, [0.1] * 7)
    b = _v1(20, 20.0, 63, 70, 7, 1 + 63 / 10, [0.9] * 7)
    sd = _ok(spec_decode(run([a, b])))
    assert sd.acceptance_rate_pct == pytest.approx(100 * 763 / 7070, abs=0.01)
    assert sd.mean_acceptance_length == pytest.approx(1 + 763 / 1010, abs=0.001)
    assert sd.per_position_acceptance == pytest.approx([(0.1 * 1000 + 0.9 * 10) / 1010] * 7, abs=1e-4)
    assert sd.wasted_draft_pct == pytest.approx(100 - 100 * 763 / 7070, abs=0.01)
    assert sd.draft_tokens == 7
    assert sd.run.acceptance_length_range == (1.7, 7.3)


def test_ngram_short_drafts_use_printed_length() -> None:
    # 1000 drafts of 4.5 tokens on average with k = 5: drafted / k would be wrong
    ev = _v1(10, 10.0, 3000, 4500, 5, 4.0, [0.9, 0.8, 0.6, 0.4, 0.3])
    sd = _ok(spec_decode(run([ev])))
    assert sd.mean_acceptance_length == 4.0


def test_v0_cumulative_counters_are_differenced() -> None:
    evs: list[Event] = []
    for k, (acc, dr, em) in enumerate([(100, 400, 180), (300, 800, 460), (310, 1200, 570)]):
        evs.append(
            SpecEvent(
                engine="vllm",
                file="t.log",
                line=10 + k,
                t_s=10.0 * (k + 1),
                accepted_tokens=acc,
                drafted_tokens=dr,
                emitted_tokens=em,
                speculative_tokens=4,
                system_efficiency=0.5,
                acceptance_rate_pct=100 * acc / dr,
                cumulative=True,
            )
        )
    sd = _ok(spec_decode(run(evs)))
    assert sd.accepted_tokens == 310 and sd.drafted_tokens == 1200  # the deltas add up to the last counter
    assert sd.acceptance_rate_pct == pytest.approx(100 * 310 / 1200, abs=0.01)
    assert sd.run.acceptance_rate_range_pct == (2.5, 50.0)  # 10/400 in the last interval, 200/400 before
    assert sd.accepted_tok_s == pytest.approx(
        (20.0 + 1.0) / 2
    )  # per-second rates of the differenced intervals
    assert "differenced" in sd.method


def test_sglang_accept_len_weighted_by_running() -> None:
    rows = [
        ("d", 10.0, {"running": 10, "gen_tok_s": 300.0, "accept_len": 1.1, "accept_rate": 0.01}),
        ("d", 11.0, {"running": 10, "gen_tok_s": 300.0, "accept_len": 1.1, "accept_rate": 0.01}),
        ("d", 12.0, {"running": 1, "gen_tok_s": 60.0, "accept_len": 3.0, "accept_rate": 0.29}),
    ]
    cfg = Config(
        engine="sglang",
        file="s.log",
        line=1,
        t_s=0.0,
        form="server_args",
        args={
            "speculative_algorithm": "EAGLE",
            "speculative_num_steps": 7,
            "speculative_num_draft_tokens": 8,
        },
    )
    sd = _ok(spec_decode(run([cfg, *sglang(rows)], engine="sglang")))
    assert sd.mean_acceptance_length == pytest.approx((1.1 * 20 + 3.0) / 21, abs=0.001)
    assert sd.acceptance_rate_pct == pytest.approx((1 * 20 + 29) / 21, abs=0.01)
    assert sd.draft_tokens == 7 and sd.speculative_method == "EAGLE"
    assert sd.verdict == "net cost"


@pytest.mark.parametrize(("length", "verdict"), [(4.8, "pays off"), (2.0, "marginal"), (1.1, "net cost")])
def test_verdicts(length: float, verdict: str) -> None:
    acc = round((length - 1) * 1000)
    sd = _ok(spec_decode(run([_v1(10, 10.0, acc, 5000, 5, length)])))
    assert sd.verdict == verdict


def test_verdict_uses_the_stable_segment() -> None:
    ramp = _v1(100, 60.0, 4000, 5000, 5, 5.0)  # great acceptance during the ramp only
    evs: list[Event] = [ramp, *stats([(1000.0, 50.0, 5)] + [(0.0, 500.0, 10)] * 4)]
    evs += [_v1(110 + k, 70.0 + 10 * k, 100, 5000, 5, 1.1) for k in range(4)]
    sd = _ok(spec_decode(run(evs)))
    assert sd.stable_segment is not None and sd.stable_segment.windows == 4
    assert sd.verdict == "net cost"


def test_configured_but_silent() -> None:
    cfg = Config(
        engine="vllm",
        file="t.log",
        line=8,
        t_s=0.0,
        form="non_default_args",
        args={"speculative_config": {"method": "ngram", "num_speculative_tokens": 5}},
    )
    res = spec_decode(run([cfg, *stats([(0.0, 500.0, 10)] * 3)]))
    assert isinstance(res, NotApplicable)
    assert "configured (ngram, 5 tokens, line 8)" in res.reason and "nothing was drafted" in res.reason


def test_not_configured() -> None:
    cfg = Config(
        engine="vllm", file="t.log", line=8, t_s=0.0, form="engine_config", args={"speculative_config": None}
    )
    res = spec_decode(run([cfg]))
    assert isinstance(res, NotApplicable) and "not configured" in res.reason
