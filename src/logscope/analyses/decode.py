"""The stable decode segment: the decode rate of the run at its concurrency, free of prefill.

Method (per engine, and for the engines' sum under DP):

1. Windows qualify when requests are running, the window held no prefill (vLLM prompt throughput
   0; SGLang no ``Prefill batch`` line since the previous decode line) and something was generated.
2. Consecutive qualifying windows at the same running count form a stretch; a window that comes
   after an idle gap (longer than 1.5 × the logging interval + 1.5 s: vLLM stops logging when idle)
   starts a new one. One window inside a stretch with another running count or no generation,
   but no prefill, is bridged and left out of the numbers (a single outlier window).
3. The plateau is the highest running count that holds for at least ``MIN_SAMPLES`` windows in one
   stretch: the run's concurrency. Ramp-up and drain windows have other running counts or prefill.
4. The segment is the longest stretch at the plateau. Its mean, median, min and max are taken over
   its windows, leaving out a window whose rate is an outlier from the segment's own robust trend
   (more than 5 scaled MADs and 50 % off: a stall or a doubled window), so that one stall does not
   move the mean.
5. Stationarity: ``trend_pct`` is the least-squares change from the segment's first to its last
   window. A mean over a segment that drifts by more than ``STATIONARY_PCT`` is no steady rate (decode
   slows as the context grows): then the longest stationary part of a stretch at the plateau
   (``MIN_SAMPLES`` windows or more) is taken instead, and the full stretch is kept under
   ``stretch``; when no part is stationary the segment stays, with ``stationary`` false and the
   method saying it drifts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import (
    NotApplicable,
    Result,
    RunData,
    gap_threshold,
    is_gap,
    mean,
    median,
    ols,
    r,
    theil_sen,
)
from logscope.analyses.nostats import missing_stats_reason
from logscope.analyses.series import SAMPLE_SCHEMA, Sample, Series, decode_series
from logscope.analyses.series import main_series as main_series_of

MIN_SAMPLES = 3
STATIONARY_PCT = 15.0  # |trend| above this over the segment: the rate drifts, its mean is no steady rate


class Trend(BaseModel):
    """How the decode rate moves inside the segment (least squares over its windows)."""

    model_config = ConfigDict(extra="forbid")

    slope_tok_s_per_min: float
    first_fit_tok_s: float
    last_fit_tok_s: float
    change_pct: float = Field(description="fitted change from the segment's first to last window")
    direction: Literal["falling", "flat", "rising"]


class ExcludedWindow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    line: int
    t_s: float
    gen_tok_s: float
    running: int
    reason: str


class SegmentBrief(BaseModel):
    """Another stretch at the plateau, shorter than the chosen one."""

    model_config = ConfigDict(extra="forbid")

    samples: int
    start_line: int
    end_line: int
    mean_tok_s: float
    trend_pct: float | None = Field(
        None, description="least-squares change over the stretch, first to last window"
    )


class PlateauSummary(BaseModel):
    """Every stretch at the plateau pooled (useful when the workload comes in waves)."""

    model_config = ConfigDict(extra="forbid")

    stretches: int
    samples: int
    mean_tok_s: float
    median_tok_s: float
    min_tok_s: float
    max_tok_s: float


class DecodeSegment(BaseModel):
    """The numbers of one stable segment."""

    model_config = ConfigDict(extra="forbid")

    engine: str = Field(description='"engine 0", "DP1", "sum of 2 engines (...)"')
    concurrency: int = Field(description="running requests on the plateau")
    samples: int
    duration_s: float
    mean_tok_s: float
    median_tok_s: float
    min_tok_s: float
    max_tok_s: float
    per_request_tok_s: float = Field(description="mean / concurrency")
    ms_per_token: float = Field(description="1000 / per_request_tok_s")
    per_request_peak_tok_s: float = Field(description="max / concurrency (a peak figure, not the mean)")
    ms_per_token_at_peak: float
    file: str
    start_line: int
    end_line: int
    start_t_s: float
    end_t_s: float
    values_tok_s: list[float] = Field(description="the windows' rates used, in time order")
    trend: Trend | None = None
    trend_pct: float | None = Field(
        None,
        description="least-squares change of the rate over the segment, first to "
        "last window, in percent (null under 3 windows)",
    )
    stationary: bool | None = Field(
        None,
        description=f"false when |trend_pct| > {STATIONARY_PCT:g} %: the rate "
        "drifts and its mean is no steady-state rate",
    )
    stretch: SegmentBrief | None = Field(
        None, description="the whole stretch, when a stationary part of it was taken"
    )
    excluded: list[ExcludedWindow] = Field(default_factory=list)
    other_segments: list[SegmentBrief] = Field(default_factory=list)
    all_plateau: PlateauSummary | None = Field(
        None, description="all stretches at the plateau pooled, when several"
    )


class StableDecode(Result, DecodeSegment):
    """The run's stable decode segment (the engines' sum under DP) and each engine's own."""

    source: str
    window_s: float | None = Field(None, description="the logging interval (median spacing of the lines)")
    engines: list[DecodeSegment] = Field(
        default_factory=list, description="per engine, when there are several"
    )


@dataclass
class _Stretch:
    level: int
    idx: list[int] = field(default_factory=list)  # qualifying windows
    bridged: list[int] = field(default_factory=list)  # single odd windows inside


def pure_decode(s: Sample) -> bool:
    return s.running > 0 and s.prefill is not True and s.gen_tok_s > 0


def _stretches(series: Series, interval: float, min_samples: int) -> list[_Stretch]:
    """The stretches of ``min_samples`` or more windows at the plateau: the highest running count that
    has one. A stretch is a run of pure-decode windows at one running count (``pure_decode``), each
    right after the previous one with no idle gap, or one window after it with that window bridged (a
    single odd window without prefill, no idle gap on either side). From the series' columns, every
    running count at once."""
    lim = gap_threshold(interval)  # is_gap
    f = (
        series.frame.with_row_index("i")
        .with_columns(
            ((pl.col("t_s") - pl.col("t_s").shift(1)) <= lim).fill_null(False).alias("_c"),
            pl.col("prefill").eq(False).fill_null(False).alias("_pf_false"),
        )
        .with_columns(
            pl.col("_c").shift(1).fill_null(False).alias("_c1"),
            pl.col("_pf_false").shift(1).fill_null(False).alias("_pf1"),
        )
    )
    gap = pl.col("i").cast(pl.Int64) - pl.col("i").cast(pl.Int64).shift(1).over("running")
    ok = (
        f.filter(pure_decode_expr())
        .select(
            "running",
            "i",
            ((gap == 1) & pl.col("_c")).fill_null(False).alias("_next"),
            ((gap == 2) & pl.col("_c") & pl.col("_c1") & pl.col("_pf1")).fill_null(False).alias("_bridge"),
        )
        .with_columns((~(pl.col("_next") | pl.col("_bridge"))).cum_sum().over("running").alias("_st"))
    )
    groups = (
        ok.group_by("running", "_st", maintain_order=True)
        .agg(
            pl.col("i"),
            (pl.col("i") - 1).filter(pl.col("_bridge")).alias("bridged"),
        )
        .filter(pl.col("i").list.len() >= min_samples)
    )
    if groups.height == 0:
        return []
    level = groups["running"].max()
    return [
        _Stretch(lv, idx, bridged)
        for lv, idx, bridged in groups.filter(pl.col("running") == level)
        .select("running", "i", "bridged")
        .iter_rows()
    ]


def pure_decode_expr() -> pl.Expr:
    """``pure_decode`` of each window (a NaN rate is no generation, as in Python)."""
    gen = pl.col("gen_tok_s")
    return (pl.col("running") > 0) & pl.col("prefill").ne_missing(True) & (gen > 0) & ~gen.is_nan()


def _rows(series: Series, idx: list[int]) -> dict[int, Sample]:
    """The windows at ``idx`` as ``Sample`` rows (only those: a dense log's series is long)."""
    want = sorted(set(idx))
    rows = series.frame[want].select(list(SAMPLE_SCHEMA)).iter_rows()
    return {i: Sample(*row) for i, row in zip(want, rows, strict=True)}


def _outliers(samples: Mapping[int, Sample], idx: list[int]) -> list[int]:
    """Windows whose rate is far off the segment's robust trend (only with 5+ windows)."""
    if len(idx) < 5:
        return []
    xs = [samples[i].t_s for i in idx]
    ys = [samples[i].gen_tok_s for i in idx]
    slope, icpt = theil_sen(xs, ys)
    res = [y - (slope * x + icpt) for x, y in zip(xs, ys, strict=True)]
    mres = median(res)
    mad = median([abs(v - mres) for v in res]) * 1.4826
    thr = max(5 * mad, 0.5 * median(ys))
    bad = [i for i, v in zip(idx, res, strict=True) if abs(v - mres) > thr]
    return bad if len(bad) <= max(1, len(idx) // 5) else []


def _trend(samples: list[Sample]) -> Trend | None:
    if len(samples) < 3:
        return None
    xs = [s.t_s for s in samples]
    ys = [s.gen_tok_s for s in samples]
    slope, icpt = ols(xs, ys)
    first, last = slope * xs[0] + icpt, slope * xs[-1] + icpt
    change = (last - first) / first * 100 if first else 0.0
    direction: Literal["falling", "flat", "rising"] = "flat"
    if change <= -5:
        direction = "falling"
    elif change >= 5:
        direction = "rising"
    return Trend(
        slope_tok_s_per_min=round(slope * 60, 3),
        first_fit_tok_s=round(first, 2),
        last_fit_tok_s=round(last, 2),
        change_pct=round(change, 1),
        direction=direction,
    )


def change_pct(samples: list[Sample]) -> float | None:
    """Least-squares change of the rate from the first to the last window, in percent (None under 3)."""
    tr = _trend(samples)
    return None if tr is None else tr.change_pct


def is_stationary(change: float | None) -> bool | None:
    return None if change is None else abs(change) <= STATIONARY_PCT


def stationary_run(samples: list[Sample], min_samples: int = MIN_SAMPLES) -> tuple[int, int] | None:
    """``(a, b)``: the longest run ``samples[a:b]`` (``min_samples`` or more) whose least-squares change
    stays within ``STATIONARY_PCT``; the earliest of equal length. None when there is none.

    Sums over prefixes make each candidate's fit O(1); long series try a grid of lengths and starts
    (about 200 of each), so a day of 10 s windows costs no more than a few hundred."""
    n = len(samples)
    if n < min_samples:
        return None
    t0 = samples[0].t_s
    xs = [s.t_s - t0 for s in samples]
    ys = [s.gen_tok_s for s in samples]
    px, py, pxx, pxy = [0.0], [0.0], [0.0], [0.0]
    for x, y in zip(xs, ys, strict=True):
        px.append(px[-1] + x)
        py.append(py[-1] + y)
        pxx.append(pxx[-1] + x * x)
        pxy.append(pxy[-1] + x * y)

    def ok(a: int, b: int) -> bool:
        m = b - a
        sx, sy, sxx, sxy = px[b] - px[a], py[b] - py[a], pxx[b] - pxx[a], pxy[b] - pxy[a]
        den = m * sxx - sx * sx
        slope = 0.0 if den <= 1e-12 else (m * sxy - sx * sy) / den
        icpt = (sy - slope * sx) / m
        first, last = slope * xs[a] + icpt, slope * xs[b - 1] + icpt
        if first <= 0:
            return False
        return abs((last - first) / first * 100) <= STATIONARY_PCT

    step = max(1, n // 200)
    lengths = list(range(n, min_samples - 1, -step))
    if lengths[-1] != min_samples:
        lengths.append(min_samples)
    for m in lengths:
        starts = list(range(0, n - m + 1, step))
        if starts[-1] != n - m:
            starts.append(n - m)
        for a in starts:
            if ok(a, a + m):
                return a, a + m
    return None


@dataclass
class _Found:
    series: Series
    segment: DecodeSegment
    outliers: list[Sample]
    bridged: list[Sample]


def _why_not(series: Series) -> str:
    ss = series.samples
    busy = [s for s in ss if s.running > 0]
    clean = [s for s in busy if pure_decode(s)]
    what = f"{len(ss)} {series.source} of {series.label}"
    if not ss:
        return f"no {series.source} of {series.label}"
    if not busy:
        return f"{what}, none with running requests"
    if not clean:
        return (
            f"{what}, {len(busy)} with running requests, every one of them with a prefill in its window "
            "(requests kept arriving): no pure-decode window"
        )
    levels = sorted({s.running for s in clean})
    spread = f"running {levels[0]}" if len(levels) == 1 else f"running varied {levels[0]}-{levels[-1]}"
    return (
        f"{what}, {len(clean)} pure-decode window(s), but no {MIN_SAMPLES} consecutive ones at one running "
        f"count ({spread}; a waiting queue, preemptions or too few lines keep it from a plateau)"
    )


def find_segment(series: Series, min_samples: int = MIN_SAMPLES) -> _Found | None:
    """The stable segment of one series, or None."""
    if series.frame.height < min_samples:
        return None
    interval = series.interval or 10.0
    found = _stretches(series, interval, min_samples)
    if found:
        level = found[0].level
        ss = _rows(series, [i for st in found for i in (st.idx[0] - 1, *st.idx, *st.bridged) if i >= 0])

        def duration(st: _Stretch) -> float:
            i0 = st.idx[0]
            lead = (
                ss[i0].t_s - ss[i0 - 1].t_s
                if i0 > 0 and not is_gap(ss[i0].t_s - ss[i0 - 1].t_s, interval)
                else interval
            )
            return ss[st.idx[-1]].t_s - ss[i0].t_s + lead

        best = max(found, key=lambda st: (len(st.idx), duration(st), -st.idx[0]))
        out_idx = _outliers(ss, best.idx)
        used_idx = [i for i in best.idx if i not in out_idx]
        whole: SegmentBrief | None = None
        if is_stationary(change_pct([ss[i] for i in used_idx])) is False:
            # the longest stationary part of any stretch at the plateau, if there is one
            parts: list[tuple[int, float, int, _Stretch, list[int], list[int]]] = []
            for st in found:
                o = out_idx if st is best else _outliers(ss, st.idx)
                u = [i for i in st.idx if i not in o]
                run = stationary_run([ss[i] for i in u])
                if run is not None:
                    parts.append((run[1] - run[0], -ss[u[run[0]]].t_s, -st.idx[0], st, u[run[0] : run[1]], o))
            if parts:
                _n, _t, _i, st, part, o = max(parts, key=lambda x: x[:3])
                if part != [i for i in st.idx if i not in o]:
                    whole = SegmentBrief(
                        samples=len(st.idx) - len(o),
                        start_line=ss[st.idx[0]].line,
                        end_line=ss[st.idx[-1]].last_line,
                        mean_tok_s=round(mean([ss[i].gen_tok_s for i in st.idx if i not in o]), 2),
                        trend_pct=change_pct([ss[i] for i in st.idx if i not in o]),
                    )
                inside = set(range(part[0], part[-1] + 1))
                best = _Stretch(
                    st.level, [i for i in st.idx if i in inside], [i for i in st.bridged if i in inside]
                )
                out_idx = [i for i in o if i in inside]
                used_idx = part
        used = [ss[i] for i in used_idx]
        vals = [s.gen_tok_s for s in used]
        mu = mean(vals)
        excluded = [
            ExcludedWindow(
                file=ss[i].file,
                line=ss[i].line,
                t_s=ss[i].t_s,
                gen_tok_s=ss[i].gen_tok_s,
                running=ss[i].running,
                reason=(
                    "outlier: far from the segment's trend"
                    if i in out_idx
                    else f"single odd window inside the plateau (running {ss[i].running}"
                    f"{', nothing generated' if ss[i].gen_tok_s <= 0 else ''})"
                ),
            )
            for i in sorted(out_idx + best.bridged)
        ]
        others = [
            SegmentBrief(
                samples=len(st.idx),
                start_line=ss[st.idx[0]].line,
                end_line=ss[st.idx[-1]].last_line,
                mean_tok_s=round(mean([ss[i].gen_tok_s for i in st.idx]), 2),
            )
            for st in found
            if not (st.idx[0] <= best.idx[0] and best.idx[-1] <= st.idx[-1])
        ]
        pooled = None
        if others:
            allv = [ss[i].gen_tok_s for st in found for i in st.idx if i not in out_idx]
            pooled = PlateauSummary(
                stretches=len(found),
                samples=len(allv),
                mean_tok_s=round(mean(allv), 2),
                median_tok_s=round(median(allv), 2),
                min_tok_s=min(allv),
                max_tok_s=max(allv),
            )
        first, last = ss[best.idx[0]], ss[best.idx[-1]]
        trend = _trend(used)
        seg = DecodeSegment(
            engine=series.label,
            concurrency=level,
            samples=len(used),
            duration_s=round(duration(best), 3),
            mean_tok_s=round(mu, 2),
            median_tok_s=round(median(vals), 2),
            min_tok_s=min(vals),
            max_tok_s=max(vals),
            per_request_tok_s=round(mu / level, 3),
            ms_per_token=round(1000 * level / mu, 2),
            per_request_peak_tok_s=round(max(vals) / level, 3),
            ms_per_token_at_peak=round(1000 * level / max(vals), 2),
            file=first.file,
            start_line=first.line,
            end_line=last.last_line,
            start_t_s=first.t_s,
            end_t_s=last.t_s,
            values_tok_s=vals,
            trend=trend,
            trend_pct=None if trend is None else trend.change_pct,
            stationary=is_stationary(None if trend is None else trend.change_pct),
            stretch=whole,
            excluded=excluded,
            other_segments=others,
            all_plateau=pooled,
        )
        return _Found(series, seg, [ss[i] for i in out_idx], [ss[i] for i in best.bridged])
    return None


def stalled_text(n: int) -> str:
    """The sentence on windows left out because they lie inside a stall span (``analyses.stalls``)."""
    if not n:
        return ""
    return (
        f" {n} window(s) inside a stalled or deadlock span (the `stalls` section) were left out first: a stalled "
        "engine's trickle is no decode rate."
    )


def stationarity_text(trend: float | None, stretch: SegmentBrief | None) -> str:
    """The method's sentence on the trend: stationary, a stationary part taken, or drifting."""
    if trend is None:
        return "Too few windows for a trend."
    txt = f"Trend (least-squares line through the windows, first to last): {trend:+.1f} %"
    if stretch is not None:
        return (
            txt + f"; the whole stretch (lines {stretch.start_line}-{stretch.end_line}, {stretch.samples} "
            f"windows, mean {stretch.mean_tok_s:g} tok/s) drifts by {stretch.trend_pct:+.1f} %, so its longest "
            f"part within ±{STATIONARY_PCT:g} % was taken."
        )
    if abs(trend) <= STATIONARY_PCT:
        return txt + f", within ±{STATIONARY_PCT:g} %: stationary."
    return (
        txt + f": not stationary (beyond ±{STATIONARY_PCT:g} %, and no part of {MIN_SAMPLES}+ windows is "
        "within it). The rate drifts (decode slows as the context grows, or the load changed): the mean is "
        "an average over the drift, not a steady-state rate."
    )


def _method(f: _Found, n_engines: int) -> str:
    seg, s = f.segment, f.series
    iv = s.interval
    win = f"{s.window}s of ~{iv:g} s" if iv else f"{s.window}s"
    no_prefill = (
        "prompt throughput 0.0"
        if s.source.startswith("vLLM")
        else "no Prefill batch line since the previous decode line"
    )
    longest = "Longest stationary run" if seg.stretch is not None else "Longest run"
    txt = (
        f"{longest} of {seg.samples + len(f.outliers)} consecutive {win} from {s.source} "
        f"({seg.engine}) with running = {seg.concurrency} (the plateau: highest running count held for "
        f"{MIN_SAMPLES}+ windows) and {no_prefill}, lines {seg.start_line}-{seg.end_line}; no idle gap inside. "
        f"Mean, median, min and max of the generation throughput over {seg.samples} windows"
    )
    if f.outliers:
        txt += (
            f", leaving out {len(f.outliers)} outlier window(s) (line "
            f"{', '.join(str(o.line) for o in f.outliers)}: off the segment's robust trend by > 5 MAD and > 50 %)"
        )
    if f.bridged:
        txt += f"; {len(f.bridged)} single odd window(s) inside the plateau bridged and left out"
    txt += f". Per request = mean / {seg.concurrency} running; ms/token = 1000 / per request. "
    txt += stationarity_text(seg.trend_pct, seg.stretch)
    if n_engines > 1:
        txt += (
            f" Under DP the top-level figures are the sum of {n_engines} engines' windows matched by time; "
            "each engine's own segment is under `engines`."
        )
    if s.source.startswith("vLLM") and s.frame["prefill"][1:].null_count():
        txt += " This vLLM stats line has no prompt throughput, so prefill windows could not be excluded."
    return txt


def stable_decode(data: RunData) -> StableDecode | NotApplicable:
    """The run's stable decode segment (see the module docstring for the method)."""
    from logscope.analyses.stalls import without_stalls

    raw = decode_series(data)
    if not raw:
        return NotApplicable(
            reason="no decode-rate lines: neither vLLM stats lines (`Avg generation throughput`) "
            "nor SGLang `Decode batch` lines were found" + missing_stats_reason(data)
        )
    series = [without_stalls(data, s) for s in raw]  # a stall or a deadlock is no decode rate
    stalled = sum(a.frame.height - b.frame.height for a, b in zip(raw, series, strict=True))
    per = [(s, find_segment(s)) for s in series]
    main_series = without_stalls(data, main_series_of(data) or raw[0])
    total = main_series if len(series) > 1 else None
    main = per[0][1] if total is None else find_segment(main_series)
    if main is None:
        reasons = "; ".join(_why_not(s) for s in ([total] if total is not None else []) + series)
        return NotApplicable(reason=f"no stable decode segment: {reasons}{stalled_text(stalled)}")
    engines = [f.segment for _s, f in per if f is not None] if len(series) > 1 else []
    return StableDecode(
        method=_method(main, len(series)) + stalled_text(stalled),
        source=main_series.source,
        window_s=r(main_series.interval, 3),
        engines=engines,
        **main.segment.model_dump(),
    )
