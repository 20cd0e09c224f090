"""The verdicts' statistics (analyses/verdict.py): the t quantile, the effective sample size, the
interval and the PASS / FAIL / INCONCLUSIVE rule."""

from __future__ import annotations

import math
import random

import pytest

from logscope.analyses.verdict import (
    blocks,
    decide,
    effective_n,
    lag1,
    log_ratio_interval,
    parse_threshold,
    single_run_interval,
    statistic,
    t_quantile,
)


@pytest.mark.parametrize(
    ("p", "df", "want"),
    [
        (0.95, 1, 6.3138),
        (0.95, 2, 2.9200),
        (0.95, 5, 2.0150),
        (0.95, 30, 1.6973),
        (0.975, 10, 2.2281),
        (0.95, 1e6, 1.6449),
    ],
)
def test_t_quantile_matches_the_tables(p: float, df: float, want: float) -> None:
    assert t_quantile(p, df) == pytest.approx(want, abs=2e-4)


def test_effective_size_shrinks_for_correlated_windows_only() -> None:
    rng = random.Random(1)
    iid = [100 + rng.gauss(0, 5) for _ in range(200)]
    ar = [0.0]
    for _ in range(199):
        ar.append(0.8 * ar[-1] + rng.gauss(0, 5))
    drift = [100 + 0.5 * ar_i for ar_i in ar]
    assert abs(lag1(iid)) < 0.15 and effective_n(iid) > 150
    assert lag1(drift) > 0.7 and effective_n(drift) < 40  # n (1 - rho) / (1 + rho) ~ 200 * 0.2 / 1.8
    falling = [900.0, 600.0, 470.0, 380.0]  # a2's stable segment: decode slows as the context grows
    assert 2.0 <= effective_n(falling) < 3.0  # rho 0.17 (a 4-point estimate is biased toward 0)
    assert effective_n([1.0, 9.0]) == 2.0  # floor: at least 2 (the variance needs them)
    assert effective_n([5.0, 5.0, 5.0]) == 3.0  # constant: no correlation to correct


def test_interval_covers_the_truth_at_about_its_level() -> None:
    """Two samples of one distribution: the 90 % interval holds 0 about 90 % of the time."""
    rng = random.Random(7)
    hits = 0
    for _ in range(400):
        a = [rng.gauss(500, 40) for _ in range(8)]
        b = [rng.gauss(500, 40) for _ in range(8)]
        _c, lo, hi = log_ratio_interval(a, b, 8, 8)
        hits += lo <= 0 <= hi
    assert 0.85 <= hits / 400 <= 0.95


def test_interval_is_the_log_ratio_of_the_means() -> None:
    c, lo, hi = log_ratio_interval([100.0, 102.0, 98.0], [50.0, 51.0, 49.0], 3, 3)
    assert c == pytest.approx(-0.5)
    assert lo < c < hi and math.log1p(lo) + math.log1p(hi) == pytest.approx(2 * math.log1p(c))
    c1, lo1, hi1 = log_ratio_interval([100.0], [50.0, 51.0, 49.0], 1, 3, pooled=True)
    assert c1 == pytest.approx(-0.5) and lo1 < c1 < hi1


def test_one_run_per_side_adds_the_run_to_run_term() -> None:
    """Real vLLM stable decode windows: SGLang d1 (512-token prompts) vs a1 (1024) on a quiet machine, and a
    noisy pair whose windows swing by half their mean."""
    d1 = [671.38, 650.13, 622.64, 611.86, 611.03, 632.23]
    a1 = [473.14, 453.28, 439.14, 419.47, 430.45, 464.05, 426.04]
    c, lo, hi, nb, no = single_run_interval(d1, a1)
    assert c == pytest.approx(443.65 / 633.21 - 1, abs=1e-4) and -0.40 < lo < hi < -0.15
    # without the run-to-run term the interval is the within-run one, narrower
    c2, lo2, hi2 = log_ratio_interval(d1, a1, nb, no)
    assert lo < lo2 and hi2 < hi
    noisy = [132.0, 154.0, 126.0, 86.0, 271.0, 311.0, 481.0, 277.0, 151.0, 154.0]
    _c, lo3, hi3, _nb, _no = single_run_interval(noisy, [x * 1.3 for x in noisy])
    assert lo3 < 0 < hi3  # 30 % apart, but such windows cannot tell that from a repeat


def test_blocks_and_statistics() -> None:
    xs = [float(x) for x in range(1, 101)]
    assert (
        statistic(xs, "mean") == 50.5
        and statistic(xs, "p50") == 50.5
        and statistic(xs, "p95") == pytest.approx(95.05)
    )
    got = blocks(xs, list(reversed(xs)), "mean", size=20)  # in start order: the reverse
    assert got == [90.5, 70.5, 50.5, 30.5, 10.5]
    assert len(blocks(xs[:49], None, "mean", size=20)) == 2  # 9 left over join the block before


@pytest.mark.parametrize(
    ("change", "lo", "hi", "better", "want"),
    [
        (-0.30, -0.35, -0.25, "higher", "FAIL"),  # slower, the whole interval below 0, estimate past 5 %
        (-0.01, -0.03, 0.01, "higher", "PASS"),  # at worst 3 % slower
        (0.20, 0.05, 0.40, "higher", "PASS"),  # faster across the interval
        (-0.04, -0.20, 0.12, "higher", "INCONCLUSIVE"),  # holds no change and a 20 % slowdown
        (-0.045, -0.08, -0.01, "higher", "INCONCLUSIVE"),  # slower for sure, but the estimate is within 5 %
        (0.30, 0.25, 0.35, "lower", "FAIL"),  # a latency 30 % higher
        (-0.30, -0.35, -0.25, "lower", "PASS"),  # a latency 30 % lower
    ],
)
def test_decide(change: float, lo: float, hi: float, better: str, want: str) -> None:
    got, why = decide(change, lo, hi, 5.0, better)  # type: ignore[arg-type]
    assert got == want, why
    assert f"{change * 100:+.1f} %" in why


def test_parse_threshold() -> None:
    assert parse_threshold("5%") == parse_threshold("5") == parse_threshold("0.05") == pytest.approx(5.0)
    with pytest.raises(ValueError):
        parse_threshold("150%")
