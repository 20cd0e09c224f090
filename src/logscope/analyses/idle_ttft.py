"""Slow time to first token right after an idle gap, from a series of saved ``/metrics`` scrapes.

A server that sat idle can answer its next requests slowly (a cold start, lazy warm-up, caches or clocks
that idled down): engineers meet it as "the first request of the morning takes seconds". The log cannot
show it (vLLM 0.32 prints no per-request TTFT), but the scrapes can: the running and waiting gauges say
when nothing was in flight, and the TTFT histogram's count and sum, differenced between scrapes, give the
exact mean TTFT of the requests whose first token came in each interval.

An idle gap is a stretch of consecutive scrapes, at least ``IDLE_GAP_S`` apart end to end, at each of
which nothing was running or waiting and between which no first token came and no token was generated
(a gap that starts at the first scrape counts: the server idled since before the series began). The
requests "right after" it are those whose first token came in the first scrape interval after the gap
that holds any, and in the intervals starting within ``AFTER_S`` of it. Their mean TTFT (sum / count,
exact) is set against the run's median TTFT (the whole run's histogram, linear within a bucket); the gap
is slow when that mean is at least ``SLOW_FACTOR`` times the median and at least ``MIN_EXCESS_S`` above
it (both, so that neither a fast run's jitter nor a slow run's spread raises it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from logscope.analyses.metrics import MetricCounter, MetricGauge, MetricHistogram

IDLE_GAP_S = 30.0
AFTER_S = 10.0
SLOW_FACTOR = 3.0
MIN_EXCESS_S = 0.5


class IdleGap(BaseModel):
    """One idle stretch of the scrape series and the TTFT of the requests that came right after it."""

    model_config = ConfigDict(extra="forbid")

    start: float = Field(description="unix seconds of the stretch's first idle scrape")
    end: float = Field(description="unix seconds of its last idle scrape")
    idle_s: float = Field(description="end - start: at least this long nothing was in flight")
    from_first_scrape: bool = Field(description="the stretch begins at the series' first scrape")
    after_start: float | None = Field(
        description="unix seconds: start of the first interval with a first token"
    )
    after_end: float | None = Field(
        description="unix seconds: end of the last interval counted as right after"
    )
    requests_after: int = Field(
        description="first tokens observed in those intervals (the histogram's count)"
    )
    ttft_mean_after_s: float | None = Field(description="their mean TTFT: the histogram's sum / count, exact")
    ratio_to_p50: float | None = Field(description="ttft_mean_after_s / the run's median TTFT")
    slow: bool


class IdleTtft(BaseModel):
    """TTFT right after each idle gap against the run's median."""

    model_config = ConfigDict(extra="forbid")

    method: str
    run_ttft_p50_s: float | None = Field(description="the run's median TTFT from the whole histogram")
    gaps: list[IdleGap]
    slow_gaps: int


def idle_ttft(
    running: MetricGauge | None,
    waiting: MetricGauge | None,
    ttft: MetricHistogram | None,
    generated: MetricCounter | None,
) -> IdleTtft | str:
    """The idle gaps and their TTFT, or the reason there is no answer."""
    if running is None or ttft is None:
        return "needs the running-requests gauge and the TTFT histogram over a scrape series"
    if len(running.series) < 2:
        return "needs a series of scrapes (one scrape has no interval)"
    queued = dict(waiting.series) if waiting is not None else {}
    busy_at = [(t, v + queued.get(t, 0.0) > 0) for t, v in running.series]
    moving = [(iv.start, iv.end) for iv in ttft.intervals] + [
        (iv.start, iv.end) for iv in (generated.intervals if generated else []) if iv.increase > 0
    ]
    p50 = ttft.over_run.p50
    p50_known = p50 is not None and p50 > 0 and "p50" not in ttft.over_run.in_inf_bucket
    gaps: list[IdleGap] = []
    k = 0
    while k < len(busy_at):
        if busy_at[k][1]:
            k += 1
            continue
        j = k
        while j + 1 < len(busy_at) and not busy_at[j + 1][1]:
            nt0, nt1 = busy_at[j][0], busy_at[j + 1][0]
            if any(s < nt1 and e > nt0 for s, e in moving):
                break
            j += 1
        t0, t1 = busy_at[k][0], busy_at[j][0]
        if t1 - t0 >= IDLE_GAP_S:
            gaps.append(_gap(t0, t1, k == 0, ttft, p50 if p50_known else None))
        k = j + 1
    waiting_note = "" if waiting is not None else " (no waiting gauge: running alone)"
    method = (
        f"an idle gap: consecutive scrapes at least {IDLE_GAP_S:g} s apart end to end with nothing running or "
        f"waiting{waiting_note} and no first token or generated token between them; right after it: the first "
        f"tokens in the first scrape interval after the gap that holds any and in the intervals starting within "
        f"{AFTER_S:g} s of it, their mean TTFT the histogram's sum / count (exact); slow when that mean is at least "
        f"{SLOW_FACTOR:g}x the run's median TTFT (the whole histogram, linear within a bucket) and at least "
        f"{MIN_EXCESS_S:g} s above it"
    )
    return IdleTtft(method=method, run_ttft_p50_s=p50, gaps=gaps, slow_gaps=sum(g.slow for g in gaps))


def _gap(t0: float, t1: float, first: bool, ttft: MetricHistogram, p50: float | None) -> IdleGap:
    after = [iv for iv in ttft.intervals if iv.start >= t1 and iv.count > 0]
    chosen = [iv for iv in after if iv.start < after[0].start + AFTER_S] if after else []
    n = sum(iv.count for iv in chosen)
    total = sum((iv.mean or 0.0) * iv.count for iv in chosen)
    mean = total / n if n else None
    ratio = mean / p50 if mean is not None and p50 else None
    slow = (
        mean is not None
        and p50 is not None
        and ratio is not None
        and ratio >= SLOW_FACTOR
        and mean - p50 >= MIN_EXCESS_S
    )
    return IdleGap(
        start=t0,
        end=t1,
        idle_s=round(t1 - t0, 3),
        from_first_scrape=first,
        after_start=chosen[0].start if chosen else None,
        after_end=chosen[-1].end if chosen else None,
        requests_after=n,
        ttft_mean_after_s=None if mean is None else round(mean, 4),
        ratio_to_p50=None if ratio is None else round(ratio, 2),
        slow=slow,
    )
