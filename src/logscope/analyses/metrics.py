"""Server metrics from saved Prometheus scrapes (``logscope metrics``, ``analyze --metrics``).

What the scrapes say and the log cannot: counters as per-interval rates (tokens/s, preemptions,
spec-decode accepted/drafted, prefix-cache hits), gauges as a time series (running, waiting, KV
usage), histograms as quantiles per interval and over the run (TTFT, inter-token latency, TPOT, e2e,
queue time). And one cross-check against the log: the stats line's generation throughput against the
generation-token counter's rate over the same window.

Method, stated once here and in each result's ``method``:

- a family's value in a scrape is the sum over its label sets (engines, models), except ratios
  (KV usage), which are the mean over them; SGLang's scheduler metrics carry ``tp_rank``/``pp_rank``/
  ``moe_ep_rank`` labels, and the ranks of one DP group report one batch: the lowest rank's are taken;
- a counter's increase between two scrapes is the difference, or, when it went down (the server
  restarted, or a broken exporter), the new value itself (counted from 0 again), with a note; its
  total is the cumulative count since the server started (the last value plus the value before each
  reset), its rate per interval the increase over the scrapes' time difference;
- a histogram's quantile is estimated from its cumulative buckets as Prometheus'
  ``histogram_quantile`` does: the bucket holding the rank, linear interpolation between that
  bucket's lower and upper bound (lower bound 0 for the first bucket); a rank in the ``+Inf`` bucket
  gives the highest finite bound (a lower bound of the truth). Per interval: over the bucket
  increases between consecutive scrapes; over the run: over the cumulative buckets of the last
  scrape (since server start, resets added);
- one clock: scrapes carry unix seconds, vLLM's stamps carry neither year nor time zone. The log's
  stamps are read in the scrapes' year, and at the zone offset (a multiple of 15 minutes, UTC
  preferred on a tie) that puts the most scrapes inside the log's first-to-last stamp span.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, Result
from logscope.analyses.idle_ttft import IdleTtft, idle_ttft
from logscope.events import Event
from logscope.parsers.prometheus import Family, MetricsInput, Sample, Scrape

QUANTILES = (0.5, 0.9, 0.95, 0.99)
LOG_INTERVAL_S = 10.0  # vLLM's stats line interval (VLLM_LOG_STATS_INTERVAL): the first line's window
# the least log tokens in a window for the 10 % rate criterion: below 100, a few tokens that the counter's reading
# at an end puts on the wrong side are 10 % (one engine step adds up to one token per running request)
MIN_WINDOW_TOKENS = 100.0

# role -> family names (prometheus_client's names: a counter without ``_total``). vLLM's are those of the
# real 0.32 scrapes (fixtures/metrics); SGLang's from the format notes and a real scrape printed in SGLang's docs
# (fixtures/metrics/sglang-docs-production.metrics.txt).
COUNTERS = {
    "generation_tokens": ("vllm:generation_tokens", "sglang:generation_tokens"),
    "prompt_tokens": ("vllm:prompt_tokens", "sglang:prompt_tokens"),
    "preemptions": ("vllm:num_preemptions",),
    "spec_accepted_tokens": ("vllm:spec_decode_num_accepted_tokens",),
    "spec_draft_tokens": ("vllm:spec_decode_num_draft_tokens",),
    "prefix_cache_hits": ("vllm:prefix_cache_hits",),
    "prefix_cache_queries": ("vllm:prefix_cache_queries",),
    "requests_finished": ("vllm:request_success", "sglang:num_requests"),
    # SGLang's own (format notes §metrics): aborted requests (0.5.3+; 0.4.9 without _total), retracted requests
    # (0.5.10+; SGLang's preemption: a running request sent back to the queue)
    "requests_aborted": ("sglang:num_aborted_requests",),
    "retractions": ("sglang:num_retracted_requests",),
}
GAUGES = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "kv_usage_pct": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
}
HISTOGRAMS = {
    "ttft_s": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "itl_s": (
        "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds",
        "sglang:inter_token_latency_seconds",
        "sglang:time_per_output_token_seconds",
    ),  # SGLang 0.3's name
    "tpot_s": ("vllm:request_time_per_output_token_seconds",),
    "e2e_s": ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds"),
    "queue_s": ("vllm:request_queue_time_seconds", "sglang:queue_time_seconds"),
}
_RATIO = ("kv_usage_pct",)
# the families whose samples the analysis reads (parsers.prometheus.read_metrics(paths, ANALYSED)): the others are
# listed by name and type
ANALYSED = frozenset(n for table in (COUNTERS, GAUGES, HISTOGRAMS) for names in table.values() for n in names)
INTERPOLATION = (
    "histogram quantiles as Prometheus' histogram_quantile: linear within the bucket holding the rank "
    "(lower bound 0 for the first bucket); a rank in the +Inf bucket gives the highest finite bound"
)


class CounterInterval(BaseModel):
    """A counter's increase between two consecutive scrapes."""

    model_config = ConfigDict(extra="forbid")

    start: float = Field(description="unix seconds of the earlier scrape")
    end: float = Field(description="unix seconds of the later scrape")
    increase: float
    rate_per_s: float


class MetricCounter(BaseModel):
    """A counter of the scrapes (summed over its label sets), its resets, its rate per interval."""

    model_config = ConfigDict(extra="forbid")

    family: str
    total: float = Field(
        description="cumulative count since the server started (at the last scrape; resets added)"
    )
    increase: float | None = Field(description="increase over the scrape series (null with one scrape)")
    resets: int
    intervals: list[CounterInterval]


class MetricGauge(BaseModel):
    """A gauge per scrape (summed over label sets; ratios the mean)."""

    model_config = ConfigDict(extra="forbid")

    family: str
    min: float
    max: float
    mean: float
    last: float
    series: list[tuple[float, float]] = Field(description="(unix seconds, value) per scrape")


class LatencyQuantiles(BaseModel):
    """Quantiles (seconds) from a histogram's buckets, linear within the bucket holding the rank."""

    model_config = ConfigDict(extra="forbid")

    count: int
    mean: float | None = Field(description="sum / count (exact, not from buckets)")
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    first_bucket_s: float | None = Field(
        None, description="upper bound of the lowest bucket, when it holds observations"
    )
    in_first_bucket: list[str] = Field(
        default_factory=list,
        description="quantiles that fall in the lowest bucket "
        "(interpolated from 0 to its bound: only an upper bound)",
    )
    in_inf_bucket: list[str] = Field(
        default_factory=list,
        description="quantiles that fall in the +Inf bucket "
        "(given as the highest finite bound: only a lower bound)",
    )


class IntervalQuantiles(LatencyQuantiles):
    """The quantiles of the observations made between two scrapes."""

    start: float
    end: float


class MetricHistogram(BaseModel):
    """A latency histogram: quantiles over the run (since server start) and per interval."""

    model_config = ConfigDict(extra="forbid")

    family: str
    over_run: LatencyQuantiles
    intervals: list[IntervalQuantiles] = Field(
        description="intervals between scrapes in which observations came"
    )


class MetricPreemptions(BaseModel):
    """Preemptions counted by the server, where the log may not say (vLLM 0.32 prints no `Preemptions:`)."""

    model_config = ConfigDict(extra="forbid")

    total: int
    source: str


class RateCheck(BaseModel):
    """One stats line's generation throughput against the counter's rate over the same window."""

    model_config = ConfigDict(extra="forbid")

    log_line: str = Field(description="file:line of the stats line")
    window_start: float = Field(description="unix seconds")
    window_end: float
    log_gen_tok_s: float
    metrics_gen_tok_s: float = Field(
        description="the counter's difference between the scrapes nearest the window's "
        "two ends (the middle of each printed second), over those scrapes' time difference"
    )
    metrics_min_tok_s: float = Field(description="the least rate the scrapes allow (a counter only grows)")
    metrics_max_tok_s: float = Field(description="the most rate the scrapes allow")
    diff_pct: float | None = Field(description="(metrics - log) / log, percent; null when the log says 0")
    consistent: bool = Field(description="the log's rate lies within what the scrapes allow")
    scrape_start: float | None = Field(
        None, description="unix seconds of the scrape nearest the window's start"
    )
    scrape_end: float | None = Field(None, description="unix seconds of the scrape nearest the window's end")
    interpolated_gen_tok_s: float | None = Field(
        None, description="the counter read linearly between the scrapes around each window end"
    )
    mismatch_s: float | None = Field(
        None,
        description="seconds the scrapes' span and the log's window may not share: "
        "each end's distance to its scrape plus the stamps' whole-second resolution",
    )
    allowed_pct: float | None = Field(
        None,
        description="the difference the mismatch allows, percent of the log's "
        "tokens: each end's unshared seconds at the counter's fastest rate over the "
        "scrape intervals they touch; null when the log says 0",
    )
    window_tokens: float | None = Field(
        None, description="the log's tokens in the window: its rate × the window's length"
    )
    interpolated_diff_pct: float | None = Field(
        None, description="(interpolated - log) / log, percent; null when the log says 0"
    )
    window_assumed: bool = Field(
        False,
        description="the window's start is not a printed stats line (the first line, or one after "
        "stats lines the log did not print): taken as the log interval before its end",
    )


class MetricsCrossCheck(BaseModel):
    """The log's generation throughput against the metrics, on one clock."""

    model_config = ConfigDict(extra="forbid")

    method: str
    alignment: str
    zone_offset_s: int = Field(0, description="the log's stamps minus UTC, seconds (the alignment's zone)")
    log_start_unix: float | None = Field(
        None,
        description="unix seconds of the log's t_s = 0 on the scrapes' "
        "clock: a log event's time is log_start_unix + t_s",
    )
    checks: list[RateCheck]
    max_abs_diff_pct: float | None
    inconsistent: int = Field(description="windows whose log rate the scrapes cannot produce")
    rated: int = Field(
        0, description="windows with a log rate above 0 (the ones a percent difference applies to)"
    )
    within_10_pct: int = Field(0, description="rated windows whose metrics rate is within 10 % of the log's")
    beyond_allowed: int = Field(
        0, description="rated windows whose difference exceeds what the mismatch allows"
    )
    within_10_pct_interpolated: int = Field(
        0,
        description="rated windows within 10 % when the counter is read "
        "linearly between the scrapes around each end's middle instead",
    )
    span_log_tokens: float = Field(
        description="sum over the checked windows of the log's rate × window length"
    )
    span_metrics_tokens: float = Field(description="the counter's increase over the same span")
    span_diff_pct: float | None
    stamp_resolution_s: float | None = Field(
        None, description="the resolution of the log's stamps: 1 for whole seconds, 0.001 for milliseconds"
    )
    min_window_tokens: float | None = Field(
        None, description="the rule for `enough_tokens`: a window holding at least this many log tokens"
    )
    enough_tokens: int = Field(
        0, description="rated windows whose window holds at least min_window_tokens of the log's tokens"
    )
    within_10_pct_enough: int = Field(
        0,
        description="of those, the windows whose interpolated rate is within 10 % of the log's "
        "(the issue's criterion, on windows with enough tokens for a 10 % comparison)",
    )


class MetricsSection(Result):
    """The server's saved Prometheus scrapes of the run (``--metrics``)."""

    files: list[str]
    scrapes: int
    first_scrape: float | None = Field(description="unix seconds")
    last_scrape: float | None
    time_source: str
    interpolation: str
    counters: dict[str, MetricCounter]
    gauges: dict[str, MetricGauge]
    histograms: dict[str, MetricHistogram]
    preemptions: MetricPreemptions | None
    cross_check: MetricsCrossCheck | None
    finished_by_reason: dict[str, float] = Field(
        default_factory=dict,
        description="requests finished by "
        "finished_reason label at the last scrape (vLLM: stop, length, abort, error)",
    )
    other_families: list[str] = Field(description="families read but not analysed (name: type)")
    notes: list[str]
    idle_ttft: IdleTtft | None = Field(
        None, description="TTFT right after each idle gap of the scrape series against the run's median"
    )
    idle_ttft_not_applicable: str | None = Field(None, description="why idle_ttft is null")


_RANK_LABELS = ("tp_rank", "pp_rank", "moe_ep_rank")


def _one_rank(samples: list[Sample]) -> list[Sample]:
    """The samples of one rank per engine: SGLang's scheduler metrics carry ``tp_rank``/``pp_rank``/``moe_ep_rank``
    (0.5.x), and the ranks of one DP group share one batch: summing them would count each request once per rank.
    Keeps, per set of the other labels, the samples of the lowest ranks."""
    if not any(k in _RANK_LABELS for s in samples for k, _v in s.labels):
        return samples
    lowest: dict[tuple[tuple[str, str], ...], tuple[int, ...]] = {}
    keyed = []
    for s in samples:
        d = dict(s.labels)
        rank = tuple(int(d[k]) if d.get(k, "").isdigit() else 0 for k in _RANK_LABELS)
        other = tuple((k, v) for k, v in s.labels if k not in _RANK_LABELS)
        keyed.append((other, rank, s))
        if other not in lowest or rank < lowest[other]:
            lowest[other] = rank
    return [s for other, rank, s in keyed if rank == lowest[other]]


def _value(fam: Family, ratio: bool = False) -> float | None:
    """The family's value in one scrape: the sum (mean for ratios) over its label sets' main samples (one rank
    per engine: see ``_one_rank``)."""
    want = fam.name + "_total" if fam.type == "counter" else fam.name
    vals = [s.value for s in _one_rank(fam.samples) if s.name == want]
    if not vals:
        return None
    return sum(vals) / len(vals) if ratio else sum(vals)


def _buckets(fam: Family) -> tuple[dict[float, float], float, float] | None:
    """Cumulative buckets (upper bound -> count, summed over label sets), sum and count."""
    b: dict[float, float] = {}
    total = count = 0.0
    for s in _one_rank(fam.samples):
        if s.name == fam.name + "_bucket":
            le = dict(s.labels).get("le")
            if le is None:
                continue
            try:
                bound = float(le)
            except ValueError:
                continue
            b[bound] = b.get(bound, 0.0) + s.value
        elif s.name == fam.name + "_sum":
            total += s.value
        elif s.name == fam.name + "_count":
            count += s.value
    return (b, total, count) if b else None


def quantile(q: float, buckets: dict[float, float]) -> float | None:
    """``histogram_quantile(q, ...)`` of cumulative ``buckets`` (see the module docstring)."""
    bounds = sorted(buckets)
    if not bounds or bounds[-1] != float("inf"):
        return None
    total = buckets[bounds[-1]]
    if total <= 0:
        return None
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for k, bound in enumerate(bounds):
        c = buckets[bound]
        if c >= rank:
            if bound == float("inf"):
                return bounds[k - 1] if k > 0 else None
            if k == 0 and bound <= 0:
                return bound
            in_bucket = c - prev_count
            if in_bucket <= 0:
                return bound
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / in_bucket
        prev_bound, prev_count = bound, c
    return None


def _quantiles(buckets: dict[float, float], total: float, count: float) -> LatencyQuantiles:
    qs = [quantile(q, buckets) for q in QUANTILES]
    bounds = sorted(buckets)
    # the lowest bucket's lower bound is taken as 0: a quantile in it, when it holds observations, is only "≤ bound"
    first = bounds[0] if bounds and bounds[0] != float("inf") and buckets[bounds[0]] > 0 else None
    low = [
        f"p{round(q * 100)}"
        for q, v in zip(QUANTILES, qs, strict=True)
        if v is not None and first is not None and v <= first
    ]
    finite = [k for k in bounds if k != float("inf")]
    top = buckets[finite[-1]] if finite else 0.0
    total_n = buckets.get(float("inf"), 0.0)
    high = [f"p{round(q * 100)}" for q in QUANTILES if total_n > 0 and q * total_n > top]
    return LatencyQuantiles(
        count=int(round(count)),
        mean=(total / count) if count > 0 else None,
        p50=qs[0],
        p90=qs[1],
        p95=qs[2],
        p99=qs[3],
        first_bucket_s=first,
        in_first_bucket=low,
        in_inf_bucket=high,
    )


def _find(scrapes: Sequence[Scrape], names: tuple[str, ...], kind: str) -> str | None:
    for n in names:
        if any(n in s.families and s.families[n].type == kind for s in scrapes):
            return n
    return None


def metrics_section(inp: MetricsInput, events: Sequence[Event] = ()) -> MetricsSection | NotApplicable:
    """The metrics of ``inp``; with the run's ``events``, the cross-check against its stats lines."""
    notes = list(inp.notes)
    scrapes = [s for s in inp.scrapes if s.time is not None] or inp.scrapes[:1]
    if not scrapes:
        return NotApplicable(
            reason="no Prometheus scrape could be read from "
            + ", ".join(inp.files)
            + (f" ({notes[0]})" if notes else "")
        )
    used: set[str] = set()
    counters: dict[str, MetricCounter] = {}
    for role, names in COUNTERS.items():
        fam = _find(scrapes, names, "counter")
        if fam is not None:
            used.add(fam)
            counters[role] = _counter(fam, scrapes, notes)
    gauges: dict[str, MetricGauge] = {}
    for role, names in GAUGES.items():
        fam = _find(scrapes, names, "gauge")
        if fam is None:
            continue
        used.add(fam)
        series = [
            (s.time or 0.0, v)
            for s in scrapes
            if fam in s.families and (v := _value(s.families[fam], role in _RATIO)) is not None
        ]
        if role == "kv_usage_pct":
            series = [(t, 100.0 * v) for t, v in series]  # both engines export a fraction 0..1
        if series:
            vals = [v for _t, v in series]
            gauges[role] = MetricGauge(
                family=fam,
                min=min(vals),
                max=max(vals),
                mean=sum(vals) / len(vals),
                last=vals[-1],
                series=series,
            )
    histograms: dict[str, MetricHistogram] = {}
    for role, names in HISTOGRAMS.items():
        fam = _find(scrapes, names, "histogram")
        if fam is not None:
            used.add(fam)
            h = _histogram(fam, scrapes, notes)
            if h is not None:
                histograms[role] = h
    others: dict[str, str] = {}
    for s in scrapes:
        for name, family in s.families.items():
            if name not in used and not name.endswith("_created"):
                others.setdefault(name, family.type)
    pre = counters.get("preemptions")
    preemptions = None
    if pre is not None:
        last = scrapes[-1]
        when = (
            datetime.fromtimestamp(last.time, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            if last.time
            else "untimed"
        ) + (" by its file's modification time" if last.file_time else "")
        preemptions = MetricPreemptions(
            total=int(round(pre.total)),
            source=f"{pre.family}_total in the metrics (last scrape {last.source}, {when})",
        )
    finished: dict[str, float] = {}
    done = counters.get("requests_finished")
    if done is not None and done.family in scrapes[-1].families:
        for smp in scrapes[-1].families[done.family].samples:
            reason = dict(smp.labels).get("finished_reason")
            if reason is not None and smp.name == done.family + "_total":
                finished[reason] = finished.get(reason, 0.0) + smp.value
    cross = _cross_check(counters.get("generation_tokens"), scrapes, events, notes)
    times = [s.time for s in scrapes if s.time is not None]
    method = (
        f"{len(scrapes)} scrape(s); counters summed over label sets (of SGLang's scheduler metrics, whose "
        "tp/pp/ep ranks repeat one batch, the lowest rank's), rates per interval between scrapes, "
        "a counter going down taken as a restart; gauges per scrape (KV usage as percent, the mean over "
        f"engines); {INTERPOLATION}. Scrape times from {inp.time_source}."
    )
    idle = idle_ttft(
        gauges.get("running"),
        gauges.get("waiting"),
        histograms.get("ttft_s"),
        counters.get("generation_tokens"),
    )
    return MetricsSection(
        method=method,
        files=inp.files,
        scrapes=len(scrapes),
        first_scrape=min(times) if times else None,
        last_scrape=max(times) if times else None,
        time_source=inp.time_source,
        interpolation=INTERPOLATION,
        counters=counters,
        gauges=gauges,
        histograms=histograms,
        preemptions=preemptions,
        cross_check=cross,
        finished_by_reason=finished,
        other_families=[f"{n}: {t}" for n, t in sorted(others.items())],
        notes=notes,
        idle_ttft=idle if isinstance(idle, IdleTtft) else None,
        idle_ttft_not_applicable=idle if isinstance(idle, str) else None,
    )


def _counter(fam: str, scrapes: Sequence[Scrape], notes: list[str]) -> MetricCounter:
    prev: tuple[float, float] | None = None
    before_resets = 0.0
    resets = 0
    intervals: list[CounterInterval] = []
    increase = 0.0
    for s in scrapes:
        v = _value(s.families[fam]) if fam in s.families else None
        if v is None:
            continue
        t = s.time or 0.0
        if prev is not None:
            pt, pv = prev
            if v < pv:
                resets += 1
                before_resets += pv
                notes.append(
                    f"{s.source}: {fam}_total went down from {pv:g} to {v:g}: taken as a restart "
                    "(counted from 0 again)"
                )
                d = v
            else:
                d = v - pv
            increase += d
            if t > pt:
                intervals.append(CounterInterval(start=pt, end=t, increase=d, rate_per_s=d / (t - pt)))
        prev = (t, v)
    last = prev[1] if prev else 0.0
    return MetricCounter(
        family=fam,
        total=before_resets + last,
        increase=increase if len(intervals) else None,
        resets=resets,
        intervals=intervals,
    )


def _histogram(fam: str, scrapes: Sequence[Scrape], notes: list[str]) -> MetricHistogram | None:
    prev: tuple[float, dict[float, float], float, float] | None = None
    acc: dict[float, float] = {}
    acc_sum = acc_count = 0.0
    intervals: list[IntervalQuantiles] = []
    last: tuple[dict[float, float], float, float] | None = None
    for s in scrapes:
        got = _buckets(s.families[fam]) if fam in s.families else None
        if got is None:
            continue
        b, total, count = got
        t = s.time or 0.0
        if prev is not None:
            pt, pb, ps, pc = prev
            if count < pc or any(b.get(k, 0.0) < v for k, v in pb.items()):
                notes.append(f"{s.source}: {fam} went down: taken as a restart (counted from 0 again)")
                for k, v in pb.items():
                    acc[k] = acc.get(k, 0.0) + v
                acc_sum += ps
                acc_count += pc
                db, dsum, dcount = b, total, count
            else:
                db = {k: v - pb.get(k, 0.0) for k, v in b.items()}
                dsum, dcount = total - ps, count - pc
            if dcount > 0:
                q = _quantiles(db, dsum, dcount)
                intervals.append(IntervalQuantiles(start=pt, end=t, **q.model_dump()))
        prev = (t, b, total, count)
        last = (b, total, count)
    if last is None:
        return None
    b, total, count = last
    run = {k: v + acc.get(k, 0.0) for k, v in b.items()}
    return MetricHistogram(
        family=fam, over_run=_quantiles(run, total + acc_sum, count + acc_count), intervals=intervals
    )


_STAMP = re.compile(r"(?:(\d{4})-)?(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")


def _fraction(time: str | None) -> str | None:
    """The digits after a stamp's seconds (``"12-03 21:04:07.123"`` -> ``"123"``), or None."""
    m = _STAMP.search(time or "")
    return m.group(7) if m else None


def _naive(time: str | None, year: int) -> float | None:
    """A printed stamp as seconds of a naive calendar (as if UTC), in ``year`` when it prints none."""
    m = _STAMP.search(time or "")
    if m is None:
        return None
    y = int(m.group(1)) if m.group(1) else year
    frac = float("0." + m.group(7)) if m.group(7) else 0.0
    try:
        dt = datetime(y, int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), int(m.group(6)))
    except ValueError:
        return None
    return calendar.timegm(dt.timetuple()) + frac


def _at(scrapes: Sequence[tuple[float, float]], t: float) -> float | None:
    """The counter at unix time ``t``, linear between the scrapes around it; None outside them."""
    for (t0, v0), (t1, v1) in zip(scrapes, scrapes[1:], strict=False):
        if t0 <= t <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    return None


def _bounds(scrapes: Sequence[tuple[float, float]], t: float) -> tuple[float, float] | None:
    """The counter at ``t`` lies between the scrape before and the scrape after it."""
    before = [v for st, v in scrapes if st <= t]
    after = [v for st, v in scrapes if st >= t]
    return (before[-1], after[0]) if before and after else None


def _peak_rate(scrapes: Sequence[tuple[float, float]], lo: float, hi: float) -> float:
    """The counter's fastest rate over the scrape intervals that overlap [lo, hi]."""
    rates = [
        (v1 - v0) / (t1 - t0)
        for (t0, v0), (t1, v1) in zip(scrapes, scrapes[1:], strict=False)
        if t1 > t0 and t1 >= lo and t0 <= hi
    ]
    return max(rates, default=0.0)


def _nearest(scrapes: Sequence[tuple[float, float]], t: float) -> tuple[float, float]:
    """The (time, counter) of the scrape nearest ``t``."""
    return min(scrapes, key=lambda sv: abs(sv[0] - t))


def _cross_check(
    gen: MetricCounter | None, scrapes: Sequence[Scrape], events: Sequence[Event], notes: list[str]
) -> MetricsCrossCheck | None:
    stats = [e for e in events if e.kind == "throughput" and e.time]
    if gen is None or not stats or len(scrapes) < 2:
        return None
    first = scrapes[0].time
    if first is None:
        return None
    year = datetime.fromtimestamp(first, UTC).year
    stamps = [(e, _naive(e.time, year)) for e in stats]
    timed = [(e, t) for e, t in stamps if t is not None]
    log_all = [t for e in events if (t := _naive(e.time, year)) is not None]
    if not timed or not log_all:
        return None
    lo, hi = min(log_all), max(log_all)
    stimes = [s.time for s in scrapes if s.time is not None]
    best = (-1, 0)  # (scrapes inside, -|offset|), offset in minutes
    offset = 0
    for k in range(-14 * 4, 14 * 4 + 1):
        off = k * 15 * 60  # local = utc + off
        inside = sum(1 for t in stimes if lo <= t + off <= hi)
        score = (inside, -abs(k))
        if score > best:
            best, offset = score, off
    if best[0] <= 0:
        notes.append(
            "cross-check skipped: no scrape falls within the log's span at any time-zone offset "
            "(are the log and the metrics of one run?)"
        )
        return None
    sign = "+" if offset >= 0 else "-"
    zone = f"UTC{sign}{abs(offset) // 3600:02d}:{abs(offset) % 3600 // 60:02d}"
    alignment = (
        f"the log's stamps (no year, no time zone) read in {year} (the scrapes' year) at {zone}: the zone offset "
        f"that puts the most scrapes ({best[0]} of {len(stimes)}) within the log's first-to-last stamp span, "
        "UTC preferred on a tie"
    )
    series: list[tuple[float, float]] = []
    total = 0.0
    prev_v: float | None = None
    for s in scrapes:  # cumulative with resets added, so that interpolation crosses a restart
        v = _value(s.families[gen.family]) if gen.family in s.families else None
        if v is None or s.time is None:
            continue
        if prev_v is not None and v < prev_v:
            total += prev_v
        prev_v = v
        series.append((s.time, total + v))
    # the stamps' resolution: whole seconds as vLLM prints them, or the fraction a logging config adds
    digits = [len(f) for e, _ in timed if (f := _fraction(e.time))]
    res = 10.0 ** -min(digits) if digits and len(digits) == len(timed) else 1.0
    mid = res / 2  # a stamp is the start of the interval its line was printed in: its middle
    alignment += "; stamps are whole seconds" if res >= 1.0 else f"; stamps hold {res:g} s"
    checks: list[RateCheck] = []
    prev_end: dict[int | None, float] = {}
    for e, t in timed:
        end = t - offset
        key = getattr(e, "engine_index", None)
        prev = prev_end.get(key)
        prev_end[key] = end
        # a stats line's window runs from the previous stats call; an idle engine's calls print nothing
        # (vLLM logs them at DEBUG), so a printed line long after the previous one covers one interval
        assumed = prev is None or end - prev > 1.5 * LOG_INTERVAL_S
        start = end - LOG_INTERVAL_S if assumed or prev is None else prev
        if end <= start:
            continue
        a, b = _at(series, start + mid), _at(series, end + mid)
        # the true window starts in [start, start + res) and ends in [end, end + res); the counter at a time
        # lies between the scrapes before and after it
        b_s0, b_s1, b_e0, b_e1 = (_bounds(series, x) for x in (start, start + res, end, end + res))
        if a is None or b is None or b_s0 is None or b_s1 is None or b_e0 is None or b_e1 is None:
            continue
        w = end - start
        na, nb = _nearest(series, start + mid), _nearest(series, end + mid)
        if nb[0] <= na[0]:
            continue  # one scrape nearest both ends: the window is shorter than the scrapes' spacing
        rate = (nb[1] - na[1]) / (nb[0] - na[0])
        lo, hi = max(0.0, (b_e0[0] - b_s1[1]) / (w + res)), (b_e1[1] - b_s0[0]) / max(w - res, 0.5)
        log_rate = float(getattr(e, "gen_tok_s", 0.0))
        diff = 100.0 * (rate - log_rate) / log_rate if log_rate > 0 else None
        interp = (b - a) / w
        idiff = 100.0 * (interp - log_rate) / log_rate if log_rate > 0 else None
        mismatch = abs(na[0] - (start + mid)) + abs(nb[0] - (end + mid)) + res
        # the tokens those unshared seconds can hold: each end's share at the counter's fastest rate over the
        # scrape intervals it touches
        spare = sum(
            (abs(sx - x - mid) + mid) * _peak_rate(series, min(sx, x), max(sx, x + res))
            for sx, x in ((na[0], start), (nb[0], end))
        )
        # the log prints one decimal: a tenth of a token/s of slack
        checks.append(
            RateCheck(
                log_line=f"{e.file}:{e.line}",
                window_start=start,
                window_end=end,
                log_gen_tok_s=log_rate,
                metrics_gen_tok_s=round(rate, 2),
                metrics_min_tok_s=round(lo, 2),
                metrics_max_tok_s=round(hi, 2),
                diff_pct=None if diff is None else round(diff, 2),
                consistent=lo - 0.05 <= log_rate <= hi + 0.05,
                scrape_start=na[0],
                scrape_end=nb[0],
                interpolated_gen_tok_s=round(interp, 2),
                mismatch_s=round(mismatch, 3),
                allowed_pct=round(100.0 * spare / (log_rate * w), 2) if log_rate > 0 else None,
                window_tokens=round(log_rate * w, 1),
                interpolated_diff_pct=None if idiff is None else round(idiff, 2),
                window_assumed=assumed,
            )
        )
    if not checks:
        return None
    diffs = [abs(c.diff_pct) for c in checks if c.diff_pct is not None]
    log_tokens = sum(c.log_gen_tok_s * (c.window_end - c.window_start) for c in checks)
    a0, b0 = _at(series, checks[0].window_start), _at(series, checks[-1].window_end)
    span_metrics = (b0 or 0.0) - (a0 or 0.0)
    span_diff = 100.0 * (span_metrics - log_tokens) / log_tokens if log_tokens > 0 else None
    rated = [c for c in checks if c.diff_pct is not None]
    enough = [c for c in rated if (c.window_tokens or 0.0) >= MIN_WINDOW_TOKENS]
    unit = "whole-second" if res >= 1.0 else f"{res:g} s"
    method = (
        "each stats line's `Avg generation throughput` against the generation-token counter over the same window "
        "(from the previous stats line of the same engine; the first line, and a line over 1.5 log intervals "
        f"after the previous one, over the {LOG_INTERVAL_S:g} s log interval before it: window_assumed). Two "
        "readings of the counter: metrics_gen_tok_s, its difference between the scrapes nearest the window's two "
        f"ends (the middle of each printed {unit} stamp) over those scrapes' time difference; and "
        "interpolated_gen_tok_s, the counter read linearly between the scrapes around each end's middle, over the "
        "window's length. The nearest scrapes' span and the log's window differ by each end's distance to its "
        f"scrape plus the stamps' {unit} resolution (mismatch_s); the difference that mismatch allows "
        "(allowed_pct) is those seconds at the counter's fastest rate over the scrape intervals they touch, as a "
        "share of the log's tokens in the window. A window is inconsistent when the log's "
        "rate lies outside the least and most rate the scrapes allow (the counter at a time lies between the "
        "scrapes before and after it, each end anywhere in its printed stamp's resolution). Windows not inside "
        "the scrape series, or shorter than the scrapes' spacing, are left out. The 10 % criterion on the "
        f"interpolated reading counts every rated window and, apart, windows of at least {MIN_WINDOW_TOKENS:g} of "
        "the log's tokens (fewer, and a handful of tokens at an end is 10 %). The span check sets the tokens of "
        "all checked windows against the counter's increase over their whole span"
    )
    t0 = next((t - offset - float(e.t_s) for e, t in timed if e.t_s is not None), None)
    return MetricsCrossCheck(
        method=method,
        alignment=alignment,
        zone_offset_s=offset,
        log_start_unix=t0,
        checks=checks,
        max_abs_diff_pct=max(diffs) if diffs else None,
        inconsistent=sum(not c.consistent for c in checks),
        rated=len(rated),
        within_10_pct=sum(abs(c.diff_pct or 0.0) <= 10.0 for c in rated),
        beyond_allowed=sum(abs(c.diff_pct or 0.0) > (c.allowed_pct or 0.0) for c in rated),
        within_10_pct_interpolated=sum(
            abs((c.interpolated_gen_tok_s or 0.0) - c.log_gen_tok_s) <= 0.1 * c.log_gen_tok_s for c in rated
        ),
        span_log_tokens=round(log_tokens, 1),
        span_metrics_tokens=round(span_metrics, 1),
        span_diff_pct=None if span_diff is None else round(span_diff, 2),
        stamp_resolution_s=res,
        min_window_tokens=MIN_WINDOW_TOKENS,
        enough_tokens=len(enough),
        within_10_pct_enough=sum(abs(c.interpolated_diff_pct or 0.0) <= 10.0 for c in enough),
    )


def fill_gaps(report: Any, section: MetricsSection) -> None:
    """What the metrics say and the log cannot, put where the report keeps it, with its source:
    ``disturbances.preemptions`` from the preemption counter when the log cannot count them (vLLM 0.32's
    stats line prints no ``Preemptions:``; V1 logs no preemption line). Where the log does count them,
    the counter's total is set beside it in ``preemptions_source`` (a difference is stated, not resolved)."""
    dist = getattr(report, "disturbances", None)
    pre = section.preemptions
    if dist is None or pre is None:
        return
    if dist.preemptions is None:
        report.disturbances = dist.model_copy(
            update={
                "preemptions": pre.total,
                "preemptions_not_applicable": None,
                "preemptions_source": f"metrics: {pre.source}, since the log cannot count them",
                "method": dist.method
                + f" Preemptions filled from the server's counter (--metrics): {pre.total}.",
            }
        )
        report.not_applicable.pop("disturbances.preemptions", None)
    else:
        same = (
            "the same"
            if dist.preemptions == pre.total
            else f"{pre.total} (a difference of {pre.total - dist.preemptions:+d})"
        )
        report.disturbances = dist.model_copy(
            update={
                "preemptions_source": f"{dist.preemptions_source}; the metrics count {same}: {pre.source}"
            }
        )


def summary(section: MetricsSection | None) -> dict[str, Any] | None:
    """The metrics' headline figures as one flat dict (for ``compare`` and other callers); None without
    metrics. Keys: ``<latency>_<stat>_s`` for ttft/itl/tpot/e2e/queue with mean, p50, p95, p99 (seconds;
    a quantile that is only a bucket bound is given with ``<key>_bound`` = "at_most" / "at_least"),
    ``preemptions``, ``generation_tokens``, ``error_rate_pct`` and ``abort_rate_pct`` (vLLM's
    finished_reason; SGLang's aborted / all requests), ``running_max``, ``waiting_max``, ``kv_usage_max_pct``."""
    if section is None:
        return None
    out: dict[str, Any] = {}
    for role, h in section.histograms.items():
        q = h.over_run
        name = role[:-2]
        out[f"{name}_mean_s"] = q.mean
        for stat in ("p50", "p95", "p99"):
            out[f"{name}_{stat}_s"] = getattr(q, stat)
            if stat in q.in_first_bucket:
                out[f"{name}_{stat}_s"], out[f"{name}_{stat}_s_bound"] = q.first_bucket_s, "at_most"
            elif stat in q.in_inf_bucket:
                out[f"{name}_{stat}_s_bound"] = "at_least"
    out["preemptions"] = section.preemptions.total if section.preemptions is not None else None
    gen = section.counters.get("generation_tokens")
    out["generation_tokens"] = gen.total if gen is not None else None
    by = section.finished_by_reason
    total = sum(by.values())
    aborted, done = section.counters.get("requests_aborted"), section.counters.get("requests_finished")
    if total > 0:
        out["error_rate_pct"] = 100.0 * by.get("error", 0.0) / total
        out["abort_rate_pct"] = 100.0 * by.get("abort", 0.0) / total
    elif aborted is not None and done is not None and done.total > 0:
        out["error_rate_pct"] = out["abort_rate_pct"] = 100.0 * aborted.total / done.total
    else:
        out["error_rate_pct"] = out["abort_rate_pct"] = None
    for role, key in (
        ("running", "running_max"),
        ("waiting", "waiting_max"),
        ("kv_usage_pct", "kv_usage_max_pct"),
    ):
        g = section.gauges.get(role)
        out[key] = g.max if g is not None else None
    return out
