"""Verdicts: is OTHER worse than BASE by more than a threshold, beyond the runs' own noise?

Each headline metric of ``compare`` gets the relative change OTHER vs BASE, a two-sided confidence
interval (``LEVEL``, 90 %) and a verdict against ``--threshold`` (default ``DEFAULT_THRESHOLD_PCT``):

- **PASS**: even the worst end of the interval is a change smaller than the threshold (OTHER is at
  most that much worse; it may be better);
- **FAIL**: the whole interval is on the worse side of no change and the estimate is worse than the
  threshold;
- **INCONCLUSIVE**: neither (the interval reaches past the threshold without showing the change; too
  few samples; or the two runs are no A/B test: ``not_ab``).

"Worse" is lower for rates and higher for latencies. The interval (``METHOD`` says it for the reports):

- several runs per side (``runs``): each run's value is one sample; a Welch t-interval on the log
  ratio of the two sides' means (with one run on a side, the other side's spread stands for both,
  pooled). Assumes independent repeats: the honest way to a verdict;
- one run per side (``windows``: the engine's stats windows; ``requests``: a client's per-request
  latencies, from ``--save-detailed``, in blocks of ``BLOCK_REQUESTS`` consecutive requests, the
  statistic of each block one sample). Consecutive windows are not independent (the same requests run
  through them, their context grows), so each side's sample size is shrunk to the effective size
  n_eff = n (1 - rho) / (1 + rho), rho the lag-1 autocorrelation clipped to [0, 0.95]. And a run's mean
  moves from one repeat to the next (another start, another load on the machine) by an amount one run
  cannot measure: two real vLLM runs of one configuration on this project's shared 2-core machine
  decoded 238 and 319 tok/s, each with an interval of a few percent from its own windows. So each
  run's mean is taken to be uncertain by one sample's spread as well: var(log mean) = (s / mean)^2 *
  (1 / n_eff + 1). A run whose windows are steady (a quiet machine) gets a narrow interval, a noisy one
  a wide one. Welch t-interval on the log ratio (df from n_eff - 1 per side).

A metric with one number per side and no samples (a client's summary, a histogram's percentile) gets
no interval and is INCONCLUSIVE, saying so: one number carries no noise estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LEVEL = 0.90
DEFAULT_THRESHOLD_PCT = 5.0
BLOCK_REQUESTS = 20  # requests per block: a block's statistic is one sample of a run's latencies
MIN_SAMPLES = 3  # fewer windows (or requests) on a side: no interval
RHO_MAX = 0.95

METHOD = (
    "Change = OTHER / BASE - 1, with a two-sided 90 % interval. PASS: even the interval's worst end is worse by less "
    "than the threshold; FAIL: the whole interval is worse than no change and the estimate is worse than the "
    "threshold; else INCONCLUSIVE (and always when the runs are no A/B test or not at equal load). Worse is lower "
    "for rates, higher for latencies. Samples, named in each metric's method: 'runs' (several runs per side): each "
    "run's value is a sample; a Welch t-interval on the log ratio of the means (pooled spread when a side has one "
    "run); assumes independent repeats. 'windows' (one run per side): the engine's stats windows; 'requests' (one "
    "run per side, a client's per-request latencies from --save-detailed): blocks of 20 consecutive requests, the "
    "statistic of each block a sample. One run per side: consecutive samples are not independent (shared requests, "
    "a growing context), so each side's size is shrunk to n_eff = n (1 - rho) / (1 + rho), rho the lag-1 "
    "autocorrelation clipped to [0, 0.95]; and a repeat of a run moves its mean (another start, another load on the "
    "machine) by an amount one run cannot measure, taken to be one sample's spread: var(log mean) = (s / mean)^2 "
    "(1 / n_eff + 1); a Welch t-interval on the log ratio. Steady runs get narrow intervals, noisy ones wide. "
    "'none': one number per side (a client's summary, a histogram's percentile) carries no noise estimate: no "
    "interval, INCONCLUSIVE."
)

Outcome = Literal["PASS", "FAIL", "INCONCLUSIVE"]
Better = Literal["higher", "lower"]


class MetricVerdict(BaseModel):
    """One metric of a comparison: both values, OTHER's relative change, its interval and the verdict."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(description="key, e.g. decode_tok_s, per_request_tok_s, ttft_p95_ms")
    label: str
    unit: str
    better: Better = Field(description="which direction is better: higher (rates) or lower (latencies)")
    base: float | None
    other: float | None
    change_pct: float | None = Field(description="OTHER vs BASE: (OTHER / BASE - 1) x 100")
    ci_low_pct: float | None = Field(description="lower end of the interval of change_pct")
    ci_high_pct: float | None
    level: float = LEVEL
    threshold_pct: float
    verdict: Outcome
    reason: str = Field(description="why this verdict, in one sentence with the numbers")
    method: str = Field(description='"windows", "requests", "runs" or "none" (one number per side)')
    samples_base: int | None = None
    samples_other: int | None = None
    effective_base: float | None = Field(
        None, description="windows: the effective sample size after autocorrelation"
    )
    effective_other: float | None = None
    source: str = Field(description="where both values come from")


# --- Student's t quantile (our own: the regularized incomplete beta by its continued fraction) ---


def _betacf(a: float, b: float, x: float) -> float:
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return h


def _ibeta(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _ibeta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t distribution's p-quantile (p > 0.5), by bisection on the CDF."""
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


# --- the estimators ---


def _mean_var(xs: Sequence[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def lag1(xs: Sequence[float]) -> float:
    """Lag-1 autocorrelation (0 for a constant series)."""
    m = sum(xs) / len(xs)
    den = sum((x - m) ** 2 for x in xs)
    if den <= 0:
        return 0.0
    return sum((xs[i] - m) * (xs[i + 1] - m) for i in range(len(xs) - 1)) / den


def effective_n(xs: Sequence[float]) -> float:
    """n · (1 − ρ) / (1 + ρ), ρ the lag-1 autocorrelation clipped to [0, RHO_MAX]; at least 2 (or n)."""
    rho = min(max(lag1(xs), 0.0), RHO_MAX)
    return max(min(2.0, len(xs)), len(xs) * (1 - rho) / (1 + rho))


def log_ratio_interval(
    base: Sequence[float],
    other: Sequence[float],
    n_base: float,
    n_other: float,
    pooled: bool = False,
    level: float = LEVEL,
) -> tuple[float, float, float]:
    """(change, low, high) as fractions: OTHER's mean / BASE's - 1 and its t-interval on the log scale.
    ``n_*``: the sample sizes to use (effective sizes for windows). ``pooled``: one side may have a single
    sample; the other side's relative spread stands for both."""
    mb, vb = (base[0], 0.0) if len(base) == 1 else _mean_var(base)
    mo, vo = (other[0], 0.0) if len(other) == 1 else _mean_var(other)
    d = math.log(mo / mb)
    rb, ro = vb / mb**2, vo / mo**2  # relative variances (delta method for the log of a mean)
    if pooled:
        dfs = (len(base) - 1) + (len(other) - 1)
        rel = ((len(base) - 1) * rb + (len(other) - 1) * ro) / dfs
        se2 = rel * (1 / n_base + 1 / n_other)
        df = float(dfs)
    else:
        sb, so = rb / n_base, ro / n_other
        se2 = sb + so
        den = (sb**2 / max(n_base - 1, 1e-9) if sb else 0.0) + (so**2 / max(n_other - 1, 1e-9) if so else 0.0)
        df = se2**2 / den if den > 0 else float(max(n_base + n_other - 2, 1))
    half = t_quantile(0.5 + level / 2, max(df, 1.0)) * math.sqrt(se2)
    return math.exp(d) - 1, math.exp(d - half) - 1, math.exp(d + half) - 1


def single_run_interval(
    base: Sequence[float],
    other: Sequence[float],
    center: tuple[float, float] | None = None,
    level: float = LEVEL,
) -> tuple[float, float, float, float, float]:
    """(change, low, high, n_eff base, n_eff other) for one run per side, its samples ``base`` and
    ``other`` (windows, or the statistic of blocks of consecutive requests), as fractions.

    A run's mean is uncertain by its samples' standard error (s / sqrt(n_eff)) and, more, by how much
    a repeat of the run would move (another start, another load on the machine), which one run cannot
    measure: it is taken to be as large as one sample's spread (s). So var(log mean) = (s / mean)² ·
    (1 / n_eff + 1), and the interval is a Welch t-interval on the log ratio (each side's df: n_eff - 1).
    ``center``: the two point estimates (default the samples' means)."""
    nb, no = effective_n(base), effective_n(other)
    mb, vb = _mean_var(base)
    mo, vo = _mean_var(other)
    cb, co = center or (mb, mo)
    sb, so = vb / mb**2 * (1 / nb + 1), vo / mo**2 * (1 / no + 1)
    se2 = sb + so
    den = (sb**2 / max(nb - 1, 1e-9) if sb else 0.0) + (so**2 / max(no - 1, 1e-9) if so else 0.0)
    df = se2**2 / den if den > 0 else max(nb + no - 2, 1.0)
    d = math.log(co / cb)
    half = t_quantile(0.5 + level / 2, max(df, 1.0)) * math.sqrt(se2)
    return math.exp(d) - 1, math.exp(d - half) - 1, math.exp(d + half) - 1, nb, no


def blocks(values: Sequence[float], order: Sequence[float] | None, stat: str, size: int = 20) -> list[float]:
    """The statistic (``mean`` or ``pNN``) of consecutive blocks of ``size`` requests, in ``order`` (their
    start times) when given; a last block shorter than half the size joins the one before."""
    xs = [v for _, v in sorted(zip(order, values, strict=True))] if order is not None else list(values)
    cuts = [xs[i : i + size] for i in range(0, len(xs), size)]
    if len(cuts) > 1 and len(cuts[-1]) < size / 2:
        cuts[-2] += cuts.pop()
    return [statistic(c, stat) for c in cuts]


def statistic(xs: Sequence[float], stat: str) -> float:
    """``mean``, or ``pNN``: the NN-th percentile, linear between order statistics (numpy's default, as
    the benchmark clients compute theirs)."""
    if stat == "mean":
        return sum(xs) / len(xs)
    q = float(stat[1:]) / 100 * (len(xs) - 1)
    s = sorted(xs)
    lo = int(math.floor(q))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (q - lo)


def decide(
    change: float, low: float, high: float, threshold_pct: float, better: Better
) -> tuple[Outcome, str]:
    """The verdict for a change and its interval (fractions), and why."""
    sign = -1.0 if better == "higher" else 1.0  # worse = positive
    w, a, b = sign * change * 100, sign * low * 100, sign * high * 100
    worst, best = max(a, b), min(a, b)
    word = "lower" if better == "higher" else "higher"
    span = f"{change * 100:+.1f} % ({LEVEL:.0%} interval {low * 100:+.1f} % .. {high * 100:+.1f} %)"
    if worst <= 0:
        good = "higher" if better == "higher" else "lower"
        return "PASS", f"{span}: {good} (better) across the whole interval"
    if worst < threshold_pct:
        return "PASS", f"{span}: at worst {worst:.1f} % {word}, within the {threshold_pct:g} % threshold"
    if best > 0 and w > threshold_pct:
        return "FAIL", (
            f"{span}: {word} by more than the {threshold_pct:g} % threshold, and the whole interval "
            f"is {word} (it excludes no change)"
        )
    if best > 0:
        return "INCONCLUSIVE", (
            f"{span}: {word} (the whole interval is), but by less than the "
            f"{threshold_pct:g} % threshold at its best estimate"
        )
    return "INCONCLUSIVE", (
        f"{span}: the interval holds both no change and a change past the {threshold_pct:g} % "
        "threshold; more samples (longer or repeated runs) would decide"
    )


def parse_threshold(text: str) -> float:
    """``5%``, ``5`` or ``0.05`` (a fraction below 1) -> percent."""
    t = text.strip()
    pct = t.endswith("%")
    v = float(t.rstrip("%").strip())
    if not pct and v < 1:
        v *= 100
    if not 0 < v < 100:
        raise ValueError(f"threshold {text!r} is not a percentage between 0 and 100")
    return v
